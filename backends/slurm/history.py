"""Slurm job history from accounting (``sacct``): its JSON across data_parser versions, the history
window (``history: 7d``), and where a finished job's StdOut and StdErr went once slurmctld has
forgotten the job. Pure functions, no I/O.

sacct's JSON differs by version (shapes taken from SchedMD's ``src/plugins/data_parser`` sources):
- 22.05 (``dbv0.0.38``): plain numbers, ``state.current`` a string, ``comment`` an object, no
  StdOut/StdErr fields, and ``exit_code.return_code`` 0 even for a failed job;
- 23.02 (``v0.0.39``): adds ``submit_line`` and ``script``;
- 24.05 (``v0.0.41``) and later: numbers as ``{"set", "infinite", "number"}``, ``state.current`` a
  list of flags, and ``stdout``/``stderr`` plus ``stdout_expanded``/``stderr_expanded``.
Where StdOut is not recorded, it is read from the job's batch script (``sacct --batch-script``, when
the site stores scripts) or its submit line, as sbatch reads them, and defaults to ``slurm-%j.out``.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from yanflow_tui.backends.slurm.parse import (
    RawJob,
    _int,
    _loads,
    expand_output_path,
    format_minutes,
    json_failure,
    raw_from_json,
)
from yanflow_tui.errors import BackendError

if TYPE_CHECKING:
    from yanflow_tui.backends.slurm.parsecache import ParseCaches

DEFAULT_WINDOW = "1d"
WIDER = ("1d", "7d", "30d", "90d", "365d")  # what the widen key steps through
_WINDOW = re.compile(r"\s*(\d+)\s*(h|d|w)\s*")
_UNITS = {"h": ("hours", 1 / 24), "d": ("days", 1), "w": ("weeks", 7)}


def check_window(value: Any, cluster: str = "") -> str:
    """A history window such as ``12h``, ``7d`` or ``2w``; raises with the accepted form."""
    text = str(value if value is not None else DEFAULT_WINDOW)
    found = _WINDOW.fullmatch(text)
    if not found or int(found.group(1)) <= 0:
        where = f"cluster {cluster!r}: " if cluster else ""
        raise BackendError(f"{where}history: expected a duration like 12h, 7d or 2w, got {text!r}")
    return text.strip()


def window_days(window: str) -> float:
    match = _WINDOW.fullmatch(window)
    assert match, window
    return int(match.group(1)) * _UNITS[match.group(2)][1]


def starttime(window: str) -> str:
    """sacct's ``--starttime`` for a window: ``now-7days``."""
    match = _WINDOW.fullmatch(window)
    assert match, window
    return f"now-{int(match.group(1))}{_UNITS[match.group(2)][0]}"


def describe_window(window: str) -> str:
    match = _WINDOW.fullmatch(window)
    assert match, window
    number, unit = int(match.group(1)), _UNITS[match.group(2)][0]
    return f"the last {number} {unit[:-1] if number == 1 else unit}"


def widen(window: str) -> str:
    """The next wider window after ``window`` (the widest stays)."""
    days = window_days(window)
    return next((w for w in WIDER if window_days(w) > days), window)


# -- sacct JSON ----------------------------------------------------------------------------------


def _gpus_from_tres(tres: Any) -> int:
    """GPUs from sacct's ``tres.allocated`` list (``{"type": "gres", "name": "gpu", "count": 8}``);
    typed entries (``gpu:h100``) count when the untyped one is absent."""
    entries = [t for t in (tres or {}).get("allocated") or [] if isinstance(t, dict) and t.get("type") == "gres"]
    plain = [t for t in entries if t.get("name") == "gpu"]
    typed = [t for t in entries if str(t.get("name") or "").startswith("gpu:")]
    return sum(_int(t.get("count")) for t in (plain or typed))


def parse_sacct_json(text: str | bytes, caches: ParseCaches | None = None) -> list[RawJob]:
    """Jobs of ``sacct --json`` (every data_parser version above) as ``RawJob``s (their node lists
    kept in ``caches`` where given)."""
    data = _loads(text, "sacct --json")
    json_failure(data, "jobs", "sacct --json")
    out = []
    for raw in data.get("jobs") or []:
        if not isinstance(raw, dict):
            continue
        array = raw.get("array") or {}
        comment = raw.get("comment")
        time = raw.get("time") or {}
        state = raw.get("state") or {}
        fixed = dict(raw)
        fixed.update(
            array_job_id=array.get("job_id", 0),
            array_task_id=array.get("task_id"),
            array_task_string=array.get("task") or "",
            user_name=raw.get("user"),
            comment=(comment.get("job") or "") if isinstance(comment, dict) else comment,
            tres_alloc_str=f"gres/gpu={_gpus_from_tres(raw.get('tres'))}",
            cpus=(raw.get("required") or {}).get("CPUs"),
            standard_output=raw.get("stdout_expanded") or raw.get("stdout") or "",
            standard_error=raw.get("stderr_expanded") or raw.get("stderr") or "",
        )
        fixed["time_limit"] = format_minutes(time.get("limit"))
        job = raw_from_json(fixed, caches)
        exit_code = raw.get("exit_code") or {}
        if (
            job.exit_code == 0
            and isinstance(exit_code, dict)
            and exit_code.get("status") in ("SUCCESS", ["SUCCESS"])
            and str(state.get("current")).strip("[]'\"").upper().startswith("FAILED")
        ):
            job = replace(job, exit_code=None, signal=None)  # 22.05 reports 0 for a failed job: unknown, not success
        out.append(replace(job, submit_line=str(raw.get("submit_line") or ""), script=str(raw.get("script") or "")))
    return out


# -- where the output went ------------------------------------------------------------------------

_OUTPUT = {"-o": "stdout", "--output": "stdout", "-e": "stderr", "--error": "stderr"}


def _outputs(words: list[str]) -> dict[str, str]:
    """``-o X``, ``-oX``, ``--output=X``, ``--output X`` (and ``-e``/``--error``) among sbatch words."""
    found: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i]
        name, eq, value = word.partition("=")
        if name in _OUTPUT and name.startswith("--") and eq:
            found[_OUTPUT[name]] = value
        elif word in _OUTPUT and i + 1 < len(words):
            found[_OUTPUT[word]] = words[i + 1]
            i += 1
        elif word[:2] in ("-o", "-e") and len(word) > 2 and not word.startswith("--"):
            found[_OUTPUT[word[:2]]] = word[2:]
        i += 1
    return found


def script_outputs(script: str) -> dict[str, str]:
    """StdOut/StdErr patterns from a batch script's ``#SBATCH`` lines. Like sbatch, directives are
    read until the first line that is neither blank nor a comment."""
    found: dict[str, str] = {}
    for line in script.splitlines()[1:] if script.startswith("#!") else script.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        if stripped.startswith("#SBATCH"):
            body = stripped[len("#SBATCH") :].split(" #", 1)[0]
            try:
                found.update(_outputs(shlex.split(body)))
            except ValueError:
                continue
    return found


def batch_script(sacct_output: str) -> str:
    """The script in ``sacct -j ID --batch-script`` output; "" when the site stores none."""
    lines = sacct_output.splitlines()
    for i, line in enumerate(lines[:3]):
        if line.startswith("----"):
            body = "\n".join(lines[i + 1 :]).strip("\n")
            return "" if body.strip() in ("", "NONE", "(null)") else body + "\n"
    return ""


def log_paths(raw: RawJob, script: str = "") -> tuple[str, str]:
    """(StdOut, StdErr) of ``raw``, expanded as Slurm expands them. StdErr is "" when it goes to the
    StdOut file. Recorded paths come first, then the submit line, then the batch script's
    directives (the submit line's options override the script's, as with sbatch), then defaults."""
    chosen = script_outputs(script or raw.script)
    if raw.submit_line:
        try:
            chosen.update(_outputs(shlex.split(raw.submit_line)[1:]))
        except ValueError:
            pass
    if raw.stdout:
        chosen["stdout"] = raw.stdout
    if raw.stderr:
        chosen["stderr"] = raw.stderr
    default = "slurm-%A_%a.out" if raw.array_task.isdigit() else "slurm-%j.out"
    stdout = expand_output_path(chosen.get("stdout") or default, raw)
    stderr = expand_output_path(chosen["stderr"], raw) if chosen.get("stderr") else ""
    return stdout, "" if stderr == stdout else stderr
