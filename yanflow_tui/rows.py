"""Pure functions that turn domain objects into table cells (``rich.text.Text``, markup off).

Tested on their own; the screens only place what these return.
"""

from __future__ import annotations

import re
import time
from datetime import datetime

from rich.text import Text

from yanflow_tui.model import Gpu, GpuState, Job, JobState, Node
from yanflow_tui.sanitize import clean

JOB_COLUMNS = ("cluster", "id", "name", "user", "state", "gpus", "nodes", "age", "reason")
JOB_HEADERS = ("CLUSTER", "ID", "NAME", "USER", "STATE", "GPUS", "NODES", "AGE", "REASON")
NODE_COLUMNS = ("cluster", "node", "state", "partitions", "cpus", "memory", "gpu_type", "gpus", "util", "note")
NODE_HEADERS = ("CLUSTER", "NODE", "STATE", "PARTITIONS", "CPUS", "MEMORY", "GPU TYPE", "GPUS", "UTIL", "NOTE")

STATE_STYLES = {
    JobState.PENDING: "yellow",
    JobState.RUNNING: "green",
    JobState.COMPLETING: "cyan",
    JobState.COMPLETED: "dim",
    JobState.FAILED: "bold red",
    JobState.CANCELLED: "magenta",
    JobState.UNKNOWN: "red",
}
GPU_CELLS = {GpuState.FREE: ("□", "green"), GpuState.ALLOCATED: ("■", "yellow"), GpuState.UNAVAILABLE: ("✕", "red")}


def text(value: object, style: str = "") -> Text:
    return Text(clean(str(value)), style=style, no_wrap=True, overflow="ellipsis")


def duration(seconds: float | None) -> str:
    """Compact age like kubectl: 45s, 12m, 3h, 5d."""
    if seconds is None:
        return "-"
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _age(when: datetime | None, now: float) -> str:
    return duration(now - when.timestamp()) if when else "-"


GROUP_OPEN, GROUP_CLOSED, GROUP_CHILD = "▾ ", "▸ ", "  └ "


def job_cells(job: Job, now: float | None = None, marker: str = "", children: int = 0) -> tuple[Text, ...]:
    """Cells of one queue row. ``marker`` prefixes the id (group open/closed, child); a group row
    shows how many jobs it holds after its name."""
    now = time.time() if now is None else now
    return (
        text(job.cluster, "bold"),
        text(f"{marker}{job.id}"),
        text(f"{job.name} ({children})" if children else job.name),
        text(job.user),
        text(job.state.value, STATE_STYLES.get(job.state, "")),
        text(job.gpus if job.gpus else "-"),
        text(",".join(job.nodes) or "-"),
        text(_age(job.submit_time, now)),
        text(job.reason, "dim"),
    )


def natural_key(value: str) -> tuple:
    """Sort ``job_9`` before ``job_10`` and ``123_4`` before ``123_10``."""
    parts = re.split(r"(\d+)", value)
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts if p)


def gpu_strip(gpus: tuple[Gpu, ...], total: int = 0, allocated: int = 0) -> Text:
    """One cell per GPU: □ free, ■ allocated, ✕ unavailable. Counts only when per-GPU data is missing."""
    out = Text(no_wrap=True, overflow="ellipsis")
    if gpus:
        for gpu in gpus:
            glyph, style = GPU_CELLS[gpu.state]
            out.append(glyph, style)
    elif total:
        out.append("■" * min(allocated, total), "yellow")
        out.append("□" * max(0, total - allocated), "green")
    else:
        out.append("-", "dim")
    return out


def util_text(gpus: tuple[Gpu, ...]) -> Text:
    known = [g for g in gpus if g.utilization is not None]
    if not known:
        return text("-", "dim")
    return text(" ".join(f"{g.utilization:.0f}%" for g in known))


def node_cells(node: Node) -> tuple[Text, ...]:
    state_style = "green" if node.state in ("up", "idle", "ready") else ("yellow" if node.state in ("mixed", "allocated", "alloc") else "red")
    memory = f"{node.memory_allocated_mb // 1024}/{node.memory_mb // 1024}G" if node.memory_mb else "-"
    return (
        text(node.cluster, "bold"),
        text(node.name),
        text(node.state, state_style),
        text(",".join(node.partitions) or "-"),
        text(f"{node.cpus_allocated}/{node.cpus_total}"),
        text(memory),
        text(node.gpu_type or "-"),
        gpu_strip(node.gpus, node.gpus_total, node.gpus_allocated),
        util_text(node.gpus),
        text(node.reason, "dim"),
    )


def job_matches(job: Job, needle: str) -> bool:
    """Case-insensitive substring match over the visible fields (the ``/`` filter)."""
    if not needle:
        return True
    needle = needle.lower()
    fields = (job.cluster, job.id, job.name, job.user, job.state.value, job.reason, " ".join(job.nodes))
    return any(needle in f.lower() for f in fields)
