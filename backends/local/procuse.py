"""A local job's CPU and memory from ``/proc`` (read-only): its process tree is the job's process group
and every descendant of its leader. ``sample`` reads each member's CPU ticks (``stat``: utime + stime)
and resident set (``statm``); ``use_between`` turns two samples into the tree's summed CPU % over the
interval between them (100: one core busy, as ``top``) and its RSS at the second. A process that ended
between the samples takes its last ticks with it (under-counted, never double-counted: the children's
``cutime`` is not read)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from yanflow_tui.backends.local.procs import _stat as stat_fields  # the fields after "(comm)"
from yanflow_tui.liveuse import LiveUse

SOURCE = "/proc"
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
WINDOW = 1.0  # seconds between the two samples


@dataclass(frozen=True)
class TreeSample:
    """One reading of a process tree: when (``time.monotonic``), and per member pid its start time
    (to tell a reused pid), CPU ticks and resident KiB."""

    at: float
    ticks: dict[int, tuple[str, int]]  # pid -> (start ticks, utime + stime)
    rss_kb: dict[int, int]


def tree_pids(leader: int) -> list[int]:
    """The live members of ``leader``'s tree: its process group and every descendant of it."""
    parent: dict[int, int] = {}
    members: set[int] = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        fields = stat_fields(int(entry.name))
        if fields is None or fields[0] in ("Z", "X"):
            continue
        pid = int(entry.name)
        parent[pid] = int(fields[1])
        if int(fields[2]) == leader or pid == leader:
            members.add(pid)
    grown = True
    while grown:  # descendants that left the group (setsid, setpgid) are still the job's
        more = {pid for pid, ppid in parent.items() if ppid in members and pid not in members}
        members |= more
        grown = bool(more)
    return sorted(members)


def sample(leader: int) -> TreeSample:
    """The tree of ``leader`` read now (blocking: run in a thread)."""
    ticks: dict[int, tuple[str, int]] = {}
    rss: dict[int, int] = {}
    for pid in tree_pids(leader):
        fields = stat_fields(pid)
        try:
            resident = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if fields is None:
            continue
        ticks[pid] = (fields[19], int(fields[11]) + int(fields[12]))
        rss[pid] = resident * PAGE_KB
    return TreeSample(time.monotonic(), ticks, rss)


def cpu_ticks_between(first: TreeSample, second: TreeSample) -> int:
    """The tree's CPU ticks between the samples: each member of the second, less what it had at the
    first (a member born since counts whole)."""
    total = 0
    for pid, (start, ticks) in second.ticks.items():
        before = first.ticks.get(pid)
        total += ticks - before[1] if before is not None and before[0] == start else ticks
    return total


def use_between(first: TreeSample, second: TreeSample, memory_limit_kb: float | None = None) -> LiveUse:
    window = second.at - first.at
    cpu = cpu_ticks_between(first, second) / CLK_TCK / window * 100 if window > 0 else None
    return LiveUse(
        SOURCE,
        cpu_percent=cpu,
        memory_used_kb=float(sum(second.rss_kb.values())),
        memory_limit_kb=memory_limit_kb,
        window_seconds=window,
        parts=len(second.ticks),
    )
