"""Free capacity from the Nodes data: whole free nodes and free GPUs per partition (or pool), and
whether a request of N nodes x G GPUs would start now. Pure functions; the Nodes and Submit screens
show what these return."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from yanflow_tui.model import Gpu, GpuState, Node

ALL = "all"


@dataclass(frozen=True)
class PoolCapacity:
    name: str
    nodes: int = 0
    whole_free: int = 0  # nodes with every GPU free and usable
    gpus_total: int = 0
    gpus_free: int = 0  # usable free GPUs (not on drained/cordoned nodes)


def usable_free_gpus(node: Node) -> int:
    """Free GPUs a new job could get on ``node``: unavailable ones (drain, cordon) do not count."""
    if node.gpus:
        return sum(1 for g in node.gpus if g.state is GpuState.FREE)
    return node.gpus_free


def pools(nodes: Iterable[Node]) -> list[PoolCapacity]:
    """Capacity per partition/pool, in first-seen order; nodes without one go to ``all``."""
    found: dict[str, list[Node]] = {}
    for node in nodes:
        for name in node.partitions or (ALL,):
            found.setdefault(name, []).append(node)
    return [PoolCapacity(name, len(members), sum(1 for n in members if n.whole_free),
                         sum(n.gpus_total for n in members), sum(usable_free_gpus(n) for n in members))
            for name, members in found.items()]


def fit(nodes: Iterable[Node], want_nodes: int, gpus_per_node: int, partition: str | None = None) -> tuple[bool, str]:
    """Would ``want_nodes`` x ``gpus_per_node`` start now? (yes/no, one line saying why)."""
    members = [n for n in nodes if partition is None or partition in n.partitions]
    where = f"partition {partition}" if partition else "the cluster"
    if not members:
        return False, f"no nodes known in {where}"
    if gpus_per_node <= 0:
        return True, f"no GPUs asked for; {len(members)} node(s) in {where}"
    able = sum(1 for n in members if usable_free_gpus(n) >= gpus_per_node)
    if able >= want_nodes:
        return True, f"fits now: {able} node(s) in {where} have {gpus_per_node}+ free GPUs, {want_nodes} needed"
    most = max((n.gpus_total for n in members), default=0)
    if gpus_per_node > most:
        return False, f"never fits: no node in {where} has {gpus_per_node} GPUs (largest: {most})"
    return False, f"waits: {able} node(s) in {where} have {gpus_per_node}+ free GPUs, {want_nodes} needed"


IDLE_BELOW = 5.0  # percent: an allocated GPU busy less than this is "idle but allocated"


def idle_allocated(gpu: Gpu, below: float = IDLE_BELOW) -> bool:
    """Allocated to a job, with known utilisation under ``below`` percent: capacity held but unused."""
    return gpu.state is GpuState.ALLOCATED and gpu.utilization is not None and gpu.utilization < below


@dataclass(frozen=True)
class GroupSummary:
    """What a Nodes group header shows: nodes, GPUs in use of all, whole free nodes, idle-allocated GPUs."""

    nodes: int = 0
    gpus_used: int = 0
    gpus_total: int = 0
    whole_free: int = 0
    idle: int = 0

    def __add__(self, other: "GroupSummary") -> "GroupSummary":
        return GroupSummary(self.nodes + other.nodes, self.gpus_used + other.gpus_used,
                            self.gpus_total + other.gpus_total, self.whole_free + other.whole_free,
                            self.idle + other.idle)


def summarize(nodes: Iterable[Node], below: float = IDLE_BELOW) -> GroupSummary:
    """Totals over ``nodes`` (each counted once). GPUs in use come from per-GPU data where there is
    some, from the node's counts otherwise."""
    count = used = total = whole = idle = 0
    for node in nodes:
        count += 1
        total += node.gpus_total
        whole += node.whole_free
        if node.gpus:
            for gpu in node.gpus:
                if gpu.state is GpuState.ALLOCATED:
                    used += 1
                    idle += idle_allocated(gpu, below)
        else:
            used += min(node.gpus_allocated, node.gpus_total)
    return GroupSummary(count, used, total, whole, idle)
