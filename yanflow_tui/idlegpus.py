"""Idle GPUs called out: an allocated GPU under a threshold (``IdleRule.below``, 5 % by default) for a
duration (``IdleRule.seconds``, 10 minutes) is idle. ``IdleTracker`` keeps, across refreshes, since
when each allocated GPU has been under the threshold (one *episode* per cluster, node, GPU and job),
answers the idle set once per refresh (the job keys for the Queue's mark, the GPUs for the Nodes grid)
and hands out each episode once, when it turns idle, for the one notice. Its clock is injectable, so
tests need no sleeping. The ``idle_gpus:`` option of the config file is checked here. No UI."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from yanflow_tui.fieldtable import IDLE_GPU_FIELDS, keys
from yanflow_tui.model import Gpu, GpuState, Node
from yanflow_tui.yamldoc import Checker

OPTION = "idle_gpus"  # the config file's top-level key
KEYS = keys(IDLE_GPU_FIELDS)  # (the one table the JSON Schema is made from)
BELOW = 5.0  # percent
SECONDS = 600.0  # ten minutes


@dataclass(frozen=True)
class IdleRule:
    """Under ``below`` percent for ``seconds``: idle."""

    below: float = BELOW
    seconds: float = SECONDS

    def under(self, gpu: Gpu) -> bool:
        """Allocated, with known utilisation under the threshold (for any time)."""
        return gpu.state is GpuState.ALLOCATED and gpu.utilization is not None and gpu.utilization < self.below

    def describe(self) -> str:
        return f"under {self.below:g}% for {_duration(self.seconds)}"


def _duration(seconds: float) -> str:
    if seconds >= 60 and seconds % 60 == 0:
        minutes = int(seconds // 60)
        return f"{minutes} minute" + ("s" if minutes != 1 else "")
    return f"{seconds:g} s"


def check_option(check: Checker, value: Any) -> IdleRule:
    """The ``idle_gpus: {below_percent: 5, minutes: 10}`` mapping, problems reported with their line."""
    entry = check.mapping(OPTION, value, KEYS)
    below = check.number(f"{OPTION}.below_percent", entry.get("below_percent"), minimum=0)
    if below is not None and below > 100:
        check.error(f"{OPTION}.below_percent", f"expected a percentage from 0 to 100, got {below:g}")
        below = None
    minutes = check.number(f"{OPTION}.minutes", entry.get("minutes"), minimum=0)
    return IdleRule(BELOW if below is None else below, SECONDS if minutes is None else minutes * 60)


@dataclass(frozen=True)
class IdleGpu:
    """One idle episode: a job's GPU under the threshold since ``since`` (the tracker's clock)."""

    cluster: str
    node: str
    index: int
    job_id: str
    since: float
    utilization: float

    @property
    def job_key(self) -> str:
        return f"{self.cluster}/{self.job_id}"


@dataclass
class _Cluster:
    since: dict[tuple[str, int, str], float] = field(default_factory=dict)  # (node, index, job) -> when under
    idle: dict[tuple[str, int, str], IdleGpu] = field(default_factory=dict)  # the episodes past the duration
    told: set[tuple[str, int, str]] = field(default_factory=set)  # the episodes already handed out


class IdleTracker:
    """Since when each allocated GPU has been under the threshold, per cluster, across refreshes.

    ``update(cluster, nodes)`` is called once per refresh of a cluster's nodes and returns the
    episodes that turned idle with it (each once: the notice); ``idle_jobs`` / ``idle_gpus`` answer
    the current idle set (computed in ``update``, never per row). A GPU at or over the threshold, freed,
    given to another job or without a reading ends its episode; a new one starts from zero."""

    def __init__(self, rule: IdleRule | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.rule = rule or IdleRule()
        self.clock = clock
        self._clusters: dict[str, _Cluster] = {}
        self._jobs: dict[str, frozenset[str]] = {}
        self._all: frozenset[str] = frozenset()  # the union of ``_jobs``, made in ``update``

    def update(self, cluster: str, nodes: Iterable[Node]) -> list[IdleGpu]:
        now = self.clock()
        state = self._clusters.setdefault(cluster, _Cluster())
        seen: dict[tuple[str, int, str], float] = {}
        readings: dict[tuple[str, int, str], float] = {}
        for node in nodes:
            for gpu in node.gpus:
                if gpu.job_id and self.rule.under(gpu):
                    key = (node.name, gpu.index, gpu.job_id)
                    seen[key] = state.since.get(key, now)
                    readings[key] = float(gpu.utilization or 0.0)
        state.since = seen
        state.idle = {
            key: IdleGpu(cluster, key[0], key[1], key[2], since, readings[key])
            for key, since in seen.items()
            if now - since >= self.rule.seconds
        }
        state.told &= set(seen)  # an episode that ended may be told again when a new one starts
        new = [episode for key, episode in state.idle.items() if key not in state.told]
        state.told |= {(e.node, e.index, e.job_id) for e in new}
        jobs = frozenset(e.job_key for e in state.idle.values())
        if jobs != self._jobs.get(cluster, frozenset()):
            self._jobs[cluster] = jobs
            self._all = frozenset().union(*self._jobs.values())
        return new

    def forget(self, cluster: str) -> None:
        self._clusters.pop(cluster, None)
        self._jobs.pop(cluster, None)
        self._all = frozenset().union(*self._jobs.values())

    def idle_jobs(self) -> frozenset[str]:
        """The keys (``cluster/id``) of the jobs holding an idle GPU, in every cluster."""
        return self._all

    def idle_gpus(self, cluster: str) -> frozenset[tuple[str, int]]:
        """(node, index) of the cluster's idle GPUs."""
        state = self._clusters.get(cluster)
        return frozenset((e.node, e.index) for e in state.idle.values()) if state else frozenset()

    def episodes(self, cluster: str, job_id: str) -> list[IdleGpu]:
        """The job's idle GPUs now, by node and index."""
        state = self._clusters.get(cluster)
        if state is None:
            return []
        return sorted((e for e in state.idle.values() if e.job_id == job_id), key=lambda e: (e.node, e.index))

    def under_since(self, cluster: str, node: str, index: int, job_id: str) -> float | None:
        """Since when (the tracker's clock) that GPU has been under the threshold, or None."""
        state = self._clusters.get(cluster)
        return None if state is None else state.since.get((node, index, job_id))


def notices(episodes: Iterable[IdleGpu], rule: IdleRule) -> list[str]:
    """One line per job of the episodes just turned idle (the toast's text), in the order first seen."""
    by_job: dict[tuple[str, str], list[IdleGpu]] = {}
    for episode in episodes:
        by_job.setdefault((episode.cluster, episode.job_id), []).append(episode)
    lines = []
    for (cluster, job_id), mine in by_job.items():
        where = ", ".join(f"{e.node} GPU {e.index} at {e.utilization:.0f}%" for e in mine)
        count = f"{len(mine)} idle GPUs" if len(mine) > 1 else "an idle GPU"
        lines.append(f"{cluster}: job {job_id} holds {count} ({where}; {rule.describe()})")
    return lines
