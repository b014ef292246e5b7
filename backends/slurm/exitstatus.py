"""A finished Slurm job's exit code and signal, from each shape Slurm's JSON gives them in. Pure.

- ``squeue --json`` / ``scontrol show job --json`` 22.05: ``exit_code`` is the raw wait status
  (``768``: exit 3; ``9``: killed by signal 9), as ``ExitCode=3:0`` / ``0:9`` in scontrol's text;
- ``sacct --json`` 22.05: ``{"status": "FAILED", "return_code": 3, "signal": {"signal_id": 9}}``;
- 23.02 and later (both): ``{"status": [...], "return_code": {"set", "number"}, "signal": {"id": {...}}}``;
- ``scontrol -o show job``: ``ExitCode=3:0`` (``scontrol_codes``).
"""

from __future__ import annotations

import re
from typing import Any


def _number(value: Any) -> int | None:
    if isinstance(value, dict):  # newer Slurm: {"set": true, "number": 5}
        if not value.get("set", True):
            return None
        value = value.get("number")
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def exit_status(value: Any) -> tuple[int | None, int | None]:
    """(exit code, signal) of a job's ``exit_code`` field; (None, None) when it says nothing."""
    if value is None:
        return None, None
    if isinstance(value, dict):
        code = _number(value.get("return_code"))
        signal_field = value.get("signal")
        signal = None
        if isinstance(signal_field, dict):
            signal = _number(signal_field.get("id", signal_field.get("signal_id")))
        elif signal_field is not None:
            signal = _number(signal_field)
        if signal is None and code is not None:
            signal = 0
        return code, signal
    status = _number(value)
    if status is None or status < 0:
        return None, None
    return (status >> 8) & 0xFF, status & 0x7F


_FIELD = re.compile(r"(?:^|\s)(JobId|ArrayJobId|ArrayTaskId|ExitCode)=(\S*)")


def scontrol_codes(text: str) -> dict[str, tuple[int, int]]:
    """Job id (``123``, or ``123_4`` for an array task) -> (exit code, signal), from the one-line
    records of ``scontrol -o show job`` (``... ExitCode=3:0 ...``)."""
    out: dict[str, tuple[int, int]] = {}
    for line in text.splitlines():
        fields = dict(_FIELD.findall(line))
        code, _, signal = fields.get("ExitCode", "").partition(":")
        if not (code.isdigit() and signal.isdigit() and fields.get("JobId")):
            continue
        array, task = fields.get("ArrayJobId", ""), fields.get("ArrayTaskId", "")
        job_id = f"{array}_{task}" if array and task.isdigit() else fields["JobId"]
        out[job_id] = (int(code), int(signal))
    return out
