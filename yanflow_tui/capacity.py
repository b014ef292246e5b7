"""Free capacity from the Nodes data: whole free nodes and free GPUs per partition (or pool), and the
verdict on a request (fits now, waits, never fits, and why) from partition membership, GPU type,
GPUs/CPUs/memory per node, whole-node requests and node states. Pure functions over domain
``Node``s; the Nodes and Submit screens and ``submit`` show what these return."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

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
    return [
        PoolCapacity(
            name,
            len(members),
            sum(1 for n in members if n.whole_free),
            sum(n.gpus_total for n in members),
            sum(usable_free_gpus(n) for n in members),
        )
        for name, members in found.items()
    ]


class Fit(str, enum.Enum):
    NOW = "fits now"
    WAITS = "waits"
    NEVER = "never fits"


@dataclass(frozen=True)
class Request:
    """What a job asks of the nodes, per node, as a backend reads it from a spec (``Backend.capacity_request``).

    ``pool`` is the partition/resource pool the job goes to (None: any node); ``pool_label`` names
    that kind of group in messages ("partition", "resource pool"). ``exclusive`` asks for whole
    nodes. ``spread`` lets the GPUs be split over nodes (a Determined trial's slots): then ``gpus``
    counts in all, not per node."""

    nodes: int = 1
    gpus: int = 0
    gpu_type: str | None = None
    cpus: int | None = None
    memory_mb: int | None = None
    pool: str | None = None
    pool_label: str = "partition"
    exclusive: bool = False
    spread: bool = False


@dataclass(frozen=True)
class Verdict:
    fit: Fit
    reason: str

    def __str__(self) -> str:
        return f"{self.fit.value}: {self.reason}"


# Node states (as backends name them in ``Node.state``) that take no new job until someone acts on the
# node (drained, down, cordoned, disabled...), and those that take none now but will by themselves.
OUT_STATES = frozenset(
    {
        "drain",
        "draining",
        "drained",
        "down",
        "fail",
        "failing",
        "future",
        "cordoned",
        "notready",
        "disabled",
        "maint",
        "inval",
        "power_down",
        "powered_down",
    }
)
BUSY_STATES = frozenset({"planned", "reserved", "completing", "unknown"})


def _out(node: Node) -> bool:
    return node.state.lower() in OUT_STATES


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _types(nodes: Iterable[Node]) -> str:
    found = sorted({n.gpu_type for n in nodes if n.gpus_total and n.gpu_type})
    return ", ".join(found) or "GPUs of no named type"


def _type_ok(node: Node, want: str | None) -> bool:
    return not want or (node.gpu_type or "").lower() == want.lower()


def _capable(node: Node, req: Request) -> bool:
    """Could this node ever take one of the job's nodes, by its configuration (states aside)?"""
    if req.gpus and not req.spread and (node.gpus_total < req.gpus or not _type_ok(node, req.gpu_type)):
        return False
    if req.gpus and req.spread and not (node.gpus_total and _type_ok(node, req.gpu_type)):
        return False
    if req.cpus and node.cpus_total and node.cpus_total < req.cpus:
        return False
    return not (req.memory_mb and node.memory_mb and node.memory_mb < req.memory_mb)


def _takes_now(node: Node, req: Request) -> bool:
    """Has this node the free resources for one of the job's nodes now?"""
    if _out(node) or node.state.lower() in BUSY_STATES:
        return False
    if req.exclusive and (
        node.gpus_allocated
        or node.cpus_allocated
        or node.memory_allocated_mb
        or any(g.state is not GpuState.FREE for g in node.gpus)
    ):
        return False
    if req.gpus and not req.spread and usable_free_gpus(node) < req.gpus:
        return False
    if not req.spread and node.cpus_total and node.cpus_total - node.cpus_allocated < max(1, req.cpus or 0):
        return False
    return not (req.memory_mb and node.memory_mb and node.memory_mb - node.memory_allocated_mb < req.memory_mb)


def _never_reason(members: list[Node], req: Request, where: str) -> str:
    """Why no node of ``members`` can ever take the job's per-node share (the first rule it breaks)."""
    if req.gpus:
        gpu_nodes = [n for n in members if n.gpus_total]
        if not gpu_nodes:
            return f"{where} has no GPUs"
        typed = [n for n in gpu_nodes if _type_ok(n, req.gpu_type)]
        if not typed:
            return f"{where} has no {req.gpu_type} GPUs; it has {_types(gpu_nodes)}"
        most = max(n.gpus_total for n in typed)
        if not req.spread and req.gpus > most:
            kind = f"{req.gpu_type} " if req.gpu_type else ""
            return f"no node in {where} has {req.gpus} {kind}GPUs (largest: {most})"
    if req.cpus:
        most = max((n.cpus_total for n in members), default=0)
        if most and req.cpus > most:
            return f"no node in {where} has {req.cpus} CPUs (largest: {most})"
    if req.memory_mb:
        most = max((n.memory_mb for n in members), default=0)
        if most and req.memory_mb > most:
            return f"no node in {where} has {req.memory_mb} MB of memory (largest: {most} MB)"
    return f"no node in {where} has all the job asks for on one node"


def verdict(nodes: Iterable[Node], req: Request) -> Verdict:
    """Whether ``req`` starts now, waits for busy nodes, or can never start on ``nodes``, and why.

    Never: no node of the pool has the GPUs (of the type), CPUs or memory asked for per node, fewer
    nodes have them than the job needs, or all but too few of those are out of service (drained,
    down, cordoned...). Waits: enough nodes could take it, but too few have it free now (busy,
    planned or reserved, or not whole for an exclusive job)."""
    every = list(nodes)
    pooled = req.pool and any(n.partitions for n in every)
    members = [n for n in every if not pooled or req.pool in n.partitions]
    where = f"{req.pool_label} {req.pool}" if pooled else f"cluster {every[0].cluster}" if every else "the cluster"
    if not members:
        known = sorted({p for n in every for p in n.partitions})
        return Verdict(Fit.NEVER, f"there is no {where} (there are: {', '.join(known) or 'none'})")
    capable = [n for n in members if _capable(n, req)]
    if not capable:
        return Verdict(Fit.NEVER, _never_reason(members, req, where))
    share = f"{req.gpus} GPUs" if req.gpus and not req.spread else "the job's share"
    whole = " whole" if req.exclusive else ""
    if req.spread:
        total = sum(n.gpus_total for n in capable)
        if total < req.gpus:
            kind = f"{req.gpu_type} " if req.gpu_type else ""
            return Verdict(Fit.NEVER, f"{where} has {total} {kind}GPUs in all; the job asks for {req.gpus}")
    elif len(capable) < req.nodes:
        return Verdict(
            Fit.NEVER,
            f"{where} has {_count(len(capable), 'node')} that can take {share}; the job needs {req.nodes}{whole}",
        )
    serving = [n for n in capable if not _out(n)]
    if (sum(n.gpus_total for n in serving) < req.gpus) if req.spread else len(serving) < req.nodes:
        out = sorted({n.state for n in capable if _out(n)})
        return Verdict(
            Fit.NEVER,
            f"only {len(serving)} of {_count(len(capable), 'node')} in {where} that could "
            f"take it are in service ({', '.join(out)}); the job needs {req.nodes}",
        )
    ready = [n for n in serving if _takes_now(n, req)]
    if req.spread:
        free = sum(usable_free_gpus(n) for n in ready)
        if free >= req.gpus:
            return Verdict(Fit.NOW, f"{free} free GPUs in {where}, {req.gpus} needed")
        return Verdict(Fit.WAITS, f"{free} free GPUs in {where}, {req.gpus} needed")
    if len(ready) >= req.nodes:
        return Verdict(
            Fit.NOW, f"{_count(len(ready), 'node')} in {where} can take {share}{whole} now, {req.nodes} needed"
        )
    return Verdict(
        Fit.WAITS,
        f"{_count(len(ready), 'node')} in {where} can take {share}{whole} now, "
        f"{req.nodes} needed ({len(serving)} could once free)",
    )


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

    def __add__(self, other: GroupSummary) -> GroupSummary:
        return GroupSummary(
            self.nodes + other.nodes,
            self.gpus_used + other.gpus_used,
            self.gpus_total + other.gpus_total,
            self.whole_free + other.whole_free,
            self.idle + other.idle,
        )


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
