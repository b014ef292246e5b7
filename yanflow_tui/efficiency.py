"""A job's efficiency as Slurm's ``seff`` reports it: CPU time used against cores x wall time, peak
memory against memory allocated, and (beyond seff) wall time against the time limit. Pure arithmetic,
the same as seff's perl (``contribs/seff/seff``): CPU seconds are the steps' whole seconds plus their
microseconds rounded once; memory used is the largest step's sum of task peaks, in KiB. No I/O."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass


def cpu_seconds(steps: Iterable[tuple[int, int]]) -> int:
    """seff's ``cput`` from each step's (total CPU seconds, microseconds): the seconds summed, plus
    the microseconds summed and rounded to a second once."""
    seconds = usec = 0
    for sec, micro in steps:
        seconds += int(sec)
        usec += int(micro)
    return seconds + int(usec / 1_000_000 + 0.5)


def time2str(seconds: float) -> str:
    """seff's ``time2str``: ``[D-]HH:MM:SS``."""
    total = int(seconds)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return (f"{days}-" if days >= 1 else "") + f"{hours:02d}:{minutes:02d}:{secs:02d}"


def kbytes2str(kbytes: float) -> str:
    """seff's ``kbytes2str``: ``0.00 MB`` for nothing, else the largest unit of 1024 (``1.50 GB``)."""
    if kbytes <= 0:
        return "0.00 MB"
    exp = int(math.log(kbytes) / math.log(1024))
    units = "KMGTPE"
    unit = units[exp] if exp < len(units) else ""
    return f"{kbytes / 1024**exp:.2f} {unit}B"


@dataclass(frozen=True)
class Efficiency:
    """seff's numbers for one job. ``running``: sampled now (sstat), not final."""

    state: str  # the scheduler's word, e.g. COMPLETED, TIMEOUT, RUNNING
    cores: int  # allocated CPUs (seff: 1 when unknown)
    nodes: int
    cpu_seconds: int  # seff's "CPU Utilized"
    elapsed_seconds: int  # seff's "Job Wall-clock time"
    memory_used_kb: float  # seff's "Memory Utilized"
    memory_kb: float  # allocated memory (seff's allocmem), 0 when unknown
    memory_per_cpu: bool = False  # requested per core (seff says "/core", else "/node")
    time_limit_seconds: int | None = None  # None: no limit
    running: bool = False

    @property
    def core_walltime(self) -> int:
        return self.elapsed_seconds * self.cores

    @property
    def cpu_percent(self) -> float:
        return self.cpu_seconds / self.core_walltime * 100 if self.core_walltime else 0.0

    @property
    def memory_percent(self) -> float:
        return self.memory_used_kb / self.memory_kb * 100 if self.memory_kb else 0.0

    @property
    def time_percent(self) -> float | None:
        return self.elapsed_seconds / self.time_limit_seconds * 100 if self.time_limit_seconds else None

    def lines(self) -> list[tuple[str, str]]:
        """(label, text) rows as seff prints them, plus the time limit."""
        per = f"{kbytes2str(self.memory_kb / (self.cores if self.memory_per_cpu else self.nodes))}/" + (
            "core" if self.memory_per_cpu else "node"
        )
        limit = "no limit"
        if self.time_limit_seconds:
            limit = f"{self.time_percent:.2f}% of {time2str(self.time_limit_seconds)} time limit"
        rows = [
            ("CPU Utilized", time2str(self.cpu_seconds)),
            ("CPU Efficiency", f"{self.cpu_percent:.2f}% of {time2str(self.core_walltime)} core-walltime"),
            ("Job Wall-clock time", f"{time2str(self.elapsed_seconds)} ({limit})"),
            ("Memory Utilized", kbytes2str(self.memory_used_kb)),
            ("Memory Efficiency", f"{self.memory_percent:.2f}% of {kbytes2str(self.memory_kb)} ({per})"),
        ]
        if self.running:
            rows.append(("Efficiency note", "sampled while the job runs (sstat); final figures come when it ends"))
        return rows

    def as_json(self) -> dict:
        return {
            "state": self.state,
            "running": self.running,
            "cores": self.cores,
            "nodes": self.nodes,
            "cpu_seconds": self.cpu_seconds,
            "core_walltime_seconds": self.core_walltime,
            "cpu_efficiency_percent": round(self.cpu_percent, 2),
            "elapsed_seconds": self.elapsed_seconds,
            "time_limit_seconds": self.time_limit_seconds,
            "time_used_percent": None if self.time_percent is None else round(self.time_percent, 2),
            "memory_used_kb": self.memory_used_kb,
            "memory_kb": self.memory_kb,
            "memory_per_cpu": self.memory_per_cpu,
            "memory_efficiency_percent": round(self.memory_percent, 2),
        }
