"""What the Nodes grid says about a node and each of its GPUs, as plain strings: the cell kind and
glyph of a GPU (readable without colour), the node's text fields, the ``/`` filter match, and the
one-line descriptions of the status line. Pure functions, no Textual."""

from __future__ import annotations

import enum

from yanflow_tui.capacity import IDLE_BELOW
from yanflow_tui.model import Gpu, GpuState, Job, Node
from yanflow_tui.sanitize import clean


class Cell(str, enum.Enum):
    """How one GPU cell is drawn. ``IDLE`` is an allocated GPU the idle tracker (``yanflow_tui.idlegpus``)
    holds idle: under the configured percent for the configured time."""

    FREE = "free"
    BUSY = "busy"
    IDLE = "idle"
    UNAVAILABLE = "unavailable"


GLYPHS = {Cell.FREE: "□", Cell.BUSY: "■", Cell.IDLE: "▣", Cell.UNAVAILABLE: "✕"}
LEGEND = (
    (Cell.FREE, "free"),
    (Cell.BUSY, "allocated"),
    (Cell.IDLE, f"allocated, idle (<{IDLE_BELOW:.0f}%)"),
    (Cell.UNAVAILABLE, "unavailable"),
)
UP_STATES = frozenset({"up", "idle", "ready"})
BUSY_STATES = frozenset({"mixed", "allocated", "alloc", "completing"})


def cell_kind(gpu: Gpu, idle: bool = False) -> Cell:
    """The cell of ``gpu``; ``idle``: the idle tracker holds it idle (by its duration rule, not a reading)."""
    if gpu.state is GpuState.FREE:
        return Cell.FREE
    if gpu.state is GpuState.UNAVAILABLE:
        return Cell.UNAVAILABLE
    return Cell.IDLE if idle else Cell.BUSY


def node_gpus(node: Node) -> tuple[Gpu, ...]:
    """The node's GPUs; where the backend gives only counts, allocated ones first, without details."""
    if node.gpus:
        return node.gpus
    allocated = min(node.gpus_allocated, node.gpus_total)
    return tuple(Gpu(i, GpuState.ALLOCATED if i < allocated else GpuState.FREE) for i in range(node.gpus_total))


def has_utilization(node: Node) -> bool:
    return any(g.utilization is not None for g in node.gpus)


def util_label(gpu: Gpu) -> str:
    """Three columns: the utilisation in percent, or ``-`` where unknown."""
    return "  -" if gpu.utilization is None else f"{min(999, max(0, round(gpu.utilization))):>3}"


def state_kind(node: Node) -> str:
    """``ok`` / ``busy`` / ``bad``: how the state column is coloured (the word itself says it too)."""
    if node.state in UP_STATES:
        return "ok"
    if node.state in BUSY_STATES:
        return "busy"
    return "bad"


def memory_text(used_mb: int, total_mb: int) -> str:
    return f"{used_mb // 1024}/{total_mb // 1024}G" if total_mb else "-"


def node_fields(node: Node) -> tuple[str, str, str, str, str, str, str]:
    """Name, state, partitions, CPUs, memory, GPU type, note (the reason) -- cleaned for display."""
    return (
        clean(node.name),
        clean(node.state),
        clean(",".join(node.partitions)) or "-",
        f"{node.cpus_allocated}/{node.cpus_total}" if node.cpus_total else "-",
        memory_text(node.memory_allocated_mb, node.memory_mb),
        clean(node.gpu_type or "") or "-",
        clean(node.reason),
    )


def node_matches(node: Node, needle: str) -> bool:
    """The ``/`` filter: case-insensitive substring of the name, a partition, the state, GPU type or reason."""
    if not needle:
        return True
    needle = needle.lower()
    return any(
        needle in field.lower() for field in (node.name, node.state, node.gpu_type or "", node.reason, *node.partitions)
    )


def _mib(value: int) -> str:
    return f"{value / 1024:.1f}G" if value >= 1024 else f"{value}M"


def describe_gpu(node: Node, gpu: Gpu, job: Job | None = None, idle: bool = False) -> str:
    """The status line for one GPU cell, most telling first: index, state and job, the idle mark
    (``idle``: the idle tracker holds it idle), utilisation, memory, the reason, then the job's name."""
    parts = [f"{clean(node.cluster)}/{clean(node.name)} GPU {gpu.index}"]
    if gpu.state is GpuState.ALLOCATED:
        if gpu.job_id:
            parts.append(f"allocated to job {clean(gpu.job_id)}")
        else:
            parts.append("allocated (the cluster does not say to which job; enter lists the node's jobs)")
        if cell_kind(gpu, idle) is Cell.IDLE:
            parts.append("IDLE")
    elif gpu.state is GpuState.UNAVAILABLE:
        why = clean(gpu.reason or node.state)
        if node.reason and clean(node.reason) != why:
            why += f" ({clean(node.reason)})"
        parts.append(f"unavailable: {why}")
    else:
        parts.append("free")
    if gpu.utilization is not None:
        parts.append(f"util {gpu.utilization:.0f}%")
    if gpu.memory_total_mb:
        parts.append(f"memory {_mib(gpu.memory_used_mb or 0)}/{_mib(gpu.memory_total_mb)}")
    elif gpu.memory_used_mb is not None:
        parts.append(f"memory {_mib(gpu.memory_used_mb)} used")
    if gpu.reason and gpu.state is not GpuState.UNAVAILABLE:
        parts.append(clean(gpu.reason))
    if job is not None:
        parts.append(f"{clean(job.name)} ({clean(job.user)}, {job.state.value})")
    if gpu.name:
        parts.append(clean(gpu.name))
    return " · ".join(parts)


def describe_node(node: Node) -> str:
    """The status line for a node's own fields."""
    name, state, partitions, cpus, memory, gpu_type, note = node_fields(node)
    gpus = node_gpus(node)
    used = sum(1 for g in gpus if g.state is GpuState.ALLOCATED)
    free = sum(1 for g in gpus if g.state is GpuState.FREE)
    parts = [
        f"{clean(node.cluster)}/{name}",
        state + (f": {note}" if note else ""),
        f"partitions {partitions}",
        f"CPUs {cpus}",
        f"memory {memory}",
    ]
    if gpus:
        parts.append(f"{len(gpus)}× {gpu_type}: {used} allocated, {free} free")
    parts.append("enter: jobs on this node")
    return " · ".join(parts)
