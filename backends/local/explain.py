"""Why a job on this machine waits: which GPUs are busy and with what (a job of ours, by id and name,
or a process outside yanflow, by PID), how many it asks for and how many are free, and the jobs
ahead of it (first come, first served). From the local scheduler's own state and NVML's readings."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from yanflow_tui.backends.local.nvml import GpuReading
from yanflow_tui.backends.local.store import JobRow
from yanflow_tui.explain import Category, Explanation


def explain_row(
    cluster: str, row: JobRow, active: Sequence[JobRow], readings: Sequence[GpuReading] | None, probe_reason: str = ""
) -> Explanation:
    """``row`` explained beside this host's ``active`` jobs (pending and running, oldest first) and the
    GPUs read now (None: NVML could not be read, ``probe_reason`` says why)."""
    base = partial(Explanation, job_id=str(row.id), cluster=cluster, state=row.state.upper(), code=row.reason)
    if row.state == "running":
        on = f" on GPU{'s' if len(row.indices) != 1 else ''} {','.join(map(str, row.indices))}" if row.indices else ""
        return base(category=Category.RUNNING, reason=f"It is running{on}.")
    if row.state != "pending":
        said = f"It ended {row.state}" + (f": {row.reason}" if row.reason else "")
        return base(category=Category.FINISHED, reason=said + ".")
    ahead = [r for r in active if r.state == "pending" and r.id < row.id and r.gpus]
    holders = {i: r for r in active if r.state == "running" for i in r.indices}
    busy = []
    for reading in readings or ():
        holder = holders.get(reading.index)
        if holder is not None:
            busy.append(f"GPU {reading.index} runs job {holder.id} ({holder.name})")
        elif reading.pids:
            busy.append(f"GPU {reading.index} is used outside yanflow by PID {', '.join(map(str, reading.pids[:3]))}")
    free = len(readings or ()) - len(busy)
    if readings is None:
        reason = f"It waits for {row.gpus} GPU(s); the GPUs cannot be read now ({probe_reason or 'NVML failed'})."
    else:
        reason = f"It waits for {row.gpus} GPU(s): {free} of {len(readings)} free"
        reason += (": " + "; ".join(busy)) if busy else ""
        reason += f"; {len(ahead)} job{'s' if len(ahead) != 1 else ''} ahead of it (first come, first served)."
    category = Category.PRIORITY if ahead and row.gpus <= free else Category.RESOURCES
    return base(
        category=category,
        reason=reason,
        action="wait for them to end, or cancel a job of yours that holds them (c)" if busy else "",
        expected_start_why="no estimate: it starts as soon as the GPUs it needs are free",
        short=f"waits for {row.gpus} GPU(s), {free} free" + (f", {len(ahead)} ahead" if ahead else ""),
        details=tuple(("GPU", text) for text in busy),
    )
