"""A finished Slurm job's exit code and signal, from each shape Slurm's JSON gives them in. Pure.

- ``squeue --json`` / ``scontrol show job --json`` 22.05: ``exit_code`` is the raw wait status
  (``768``: exit 3; ``9``: killed by signal 9), as ``ExitCode=3:0`` / ``0:9`` in scontrol's text;
- ``sacct --json`` 22.05: ``{"status": "FAILED", "return_code": 3, "signal": {"signal_id": 9}}``;
- 23.02 and later (both): ``{"status": [...], "return_code": {"set", "number"}, "signal": {"id": {...}}}``.
"""

from __future__ import annotations

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
