"""Pure functions that turn domain objects into table cells (``rich.text.Text``, markup off).

Tested on their own; the screens only place what these return.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import datetime

from rich.text import Text

from yanflow_tui.model import Gpu, GpuState, Job, JobState, Node
from yanflow_tui.sanitize import clean

JOB_COLUMNS = ("cluster", "id", "name", "user", "state", "gpus", "nodes", "age", "reason")
JOB_HEADERS = ("CLUSTER", "ID", "NAME", "USER", "STATE", "GPUS", "NODES", "AGE", "REASON")
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


def age_text(when: datetime | None, now: float) -> str:
    return duration(now - when.timestamp()) if when else "-"


GROUP_OPEN, GROUP_CLOSED, GROUP_CHILD = "▾ ", "▸ ", "  └ "


JOB_STYLES = {"cluster": "bold", "reason": "dim"}  # column styles of the queue's plain-string cells


def job_cells(job: Job, now: float | None = None, marker: str = "", children: int = 0) -> tuple[Text, ...]:
    """Cells of one queue row. ``marker`` prefixes the id (group open/closed, child); a group row
    shows how many jobs it holds after its name."""
    now = time.time() if now is None else now
    cells = job_live_cells(job, lambda: now, marker, children)
    return tuple(
        c
        if isinstance(c, Text)
        else Text(c, style=JOB_STYLES.get(column, ""), no_wrap=True, overflow="ellipsis")
        if isinstance(c, str)
        else c()
        for column, c in zip(JOB_COLUMNS, cells)
    )


def job_live_cells(
    job: Job, clock: Callable[[], float], marker: str = "", children: int = 0, note: str = ""
) -> tuple[str | Text | Callable[[], Text], ...]:
    """``job_cells`` for a table that draws lazily: plain cells are cleaned strings (styled by
    ``JOB_STYLES`` per column), the state a ``Text``, and the age a callable evaluated (with
    ``clock``) only when its line is drawn. ``note`` (e.g. "stale") follows the cluster name."""
    submitted = job.submit_time
    if note:
        cluster: str | Text = Text(clean(job.cluster), style="bold", no_wrap=True, overflow="ellipsis")
        cluster.append(f" {note}", "bold yellow" if note == "stale" else "bold red")
    else:
        cluster = clean(job.cluster)
    return (
        cluster,
        clean(f"{marker}{job.id}"),
        clean(f"{job.name} ({children})" if children else job.name),
        clean(job.user),
        text(job.state.value, STATE_STYLES.get(job.state, "")),
        str(job.gpus) if job.gpus else "-",
        clean(",".join(job.nodes)) or "-",
        lambda: text(age_text(submitted, clock())),
        clean(job.reason),
    )


def job_sort_values(job: Job) -> tuple:
    """One sort value per ``JOB_COLUMNS`` entry: ids and names naturally, GPUs as numbers, age by
    submit time (youngest first; unknown last)."""
    submitted = job.submit_time
    return (
        natural_key(job.cluster),
        natural_key(job.id),
        natural_key(job.name.lower()),
        job.user.lower(),
        job.state.value,
        job.gpus,
        natural_key(",".join(job.nodes)),
        (0, -submitted.timestamp()) if submitted else (1, 0.0),
        job.reason.lower(),
    )


_DIGITS = re.compile(r"(\d+)")


def natural_key(value: str) -> tuple:
    """Sort ``job_9`` before ``job_10`` and ``123_4`` before ``123_10``."""
    if value.isdigit() and value.isascii():
        return ((0, int(value), ""),)
    parts = _DIGITS.split(value)
    return tuple((0, int(p), "") if p.isdecimal() else (1, 0, p) for p in parts if p)


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
    state_style = (
        "green"
        if node.state in ("up", "idle", "ready")
        else ("yellow" if node.state in ("mixed", "allocated", "alloc") else "red")
    )
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
