"""Process-group helpers for the local backend (Linux ``/proc``): identity checks that survive PID
reuse, listing a group's live members, and killing a whole group."""

from __future__ import annotations

import os
import signal
from pathlib import Path


def start_ticks(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (``/proc/PID/stat`` field 22), or None."""
    stat = _stat(pid)
    return stat[19] if stat else None


def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 2 is "(comm)" and may contain spaces or parentheses: split after the last ')'.
    return raw[raw.rfind(")") + 2 :].split()


def alive(pid: int, ticks: str | None) -> bool:
    """True if ``pid`` runs, is not a zombie and (when ``ticks`` is known) is the same process."""
    stat = _stat(pid)
    if stat is None:
        return False
    if stat[0] in ("Z", "X"):
        return False
    return ticks is None or stat[19] == ticks


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes whose process group is ``pgid``."""
    members = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        stat = _stat(int(entry.name))
        if stat and stat[0] not in ("Z", "X") and stat[2] == str(pgid):
            members.append(int(entry.name))
    return members


def leaderless_group(pgid: int) -> bool:
    """True if processes of group ``pgid`` live on while its leader is gone (the runner was killed).

    A new process that reused the leader's PID would be among the members, so this never points at
    an unrelated group.
    """
    members = group_members(pgid)
    return bool(members) and pgid not in members


def signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass
