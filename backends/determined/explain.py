"""Why a Determined experiment, trial or task waits: its place in its resource pool's queue (the
master's ``/api/v1/job-queues``: the jobs ahead, the slots it asks for) and the pool's free slots (its
agents), or that it is paused. Reads only, through the SDK's bindings in the backend's session."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from determined.common.api import bindings

from yanflow_tui.explain import Category, Explanation
from yanflow_tui.model import Job, JobState

QUEUE_LIMIT = 1000  # jobs of one pool read to find this one's place


def entity_of(job: Job) -> str:
    """The job queue's ``entityId`` of a job: an experiment's id (a trial's experiment's), a task's id."""
    details = dict(job.details)
    if job.id.startswith("exp-"):
        return job.id[4:]
    if job.id.startswith("trial-"):
        return details.get("Experiment", "").removeprefix("exp-")
    return details.get("Task ID", "")


def free_slots(agents: Sequence[Any], pool: str) -> tuple[int, int]:
    """(free, total) slots of the enabled agents of ``pool``: a slot is free when enabled and holding no container."""
    free = total = 0
    for agent in agents:
        if pool not in (agent.resourcePools or ()) or not agent.enabled:
            continue
        for slot in (agent.slots or {}).values():
            total += 1
            free += bool(slot.enabled and slot.container is None)
    return free, total


def pool_queue(session: Any, pool: str) -> list[Any]:
    """The jobs of resource pool ``pool``'s queue as the master orders them ("": the pool the master
    takes for none named), scheduled ones among them."""
    jobs = bindings.get_GetJobs(session, resourcePool=pool or None, limit=QUEUE_LIMIT).jobs or ()
    return [j for j in jobs if not pool or j.resourcePool == pool]


def queued(job: Any) -> bool:
    """Whether a job of the queue still waits (neither scheduled nor backfilled)."""
    return job.summary is None or job.summary.state == bindings.jobv1State.QUEUED


def slots_text(asked: int, free: int, total: int) -> str:
    return f"it asks for {asked} slot{'s' if asked != 1 else ''}, {free} of {total} free in the pool"


def read(session: Any, job: Job) -> Explanation:
    """The explanation of ``job``, read with ``session`` (in a thread: the bindings block)."""
    base = partial(Explanation, job_id=job.id, cluster=job.cluster, state=job.raw_state or job.state.value.upper())
    if job.state is JobState.RUNNING:
        return base(category=Category.RUNNING, reason="It is running.", code=job.raw_state)
    if job.state.terminal:
        return base(category=Category.FINISHED, reason=f"It ended {job.raw_state}.", code=job.raw_state)
    if job.raw_state == "PAUSED":
        return base(
            category=Category.HELD,
            reason="It is paused: the master schedules none of its trials.",
            action="activate it: press a (Actions), then activate",
            expected_start_why="not while it is paused",
            short="paused",
            code="PAUSED",
        )
    pool = dict(job.details).get("Resource pool", "") or ""
    entity = entity_of(job)
    queue = pool_queue(session, pool)
    mine = next((j for j in queue if j.entityId == entity), None)
    free, total = free_slots(bindings.get_GetAgents(session).agents, pool or (mine.resourcePool if mine else ""))
    if mine is None:
        return base(
            category=Category.UNKNOWN,
            reason=(
                f"It is {job.raw_state or 'pending'} ({job.reason or 'no reason given'}); "
                f"it is not in pool {pool or '?'}'s queue."
            ),
            expected_start_why="the master gives no estimate",
            short=job.reason,
            code=job.raw_state,
        )
    summary = mine.summary
    ahead = summary.jobsAhead if summary is not None else 0
    pool = mine.resourcePool
    asked = mine.requestedSlots
    slots = slots_text(asked, free, total)
    if ahead:
        category, why = Category.PRIORITY, f"{ahead} job{'s' if ahead != 1 else ''} ahead of it in resource pool {pool}"
    else:
        category, why = Category.RESOURCES, f"it is first in resource pool {pool}'s queue"
    return base(
        category=category,
        reason=f"It is queued: {why}; {slots}.",
        action="" if ahead else "wait for slots, or ask for fewer (slots_per_trial)",
        expected_start_why="the master gives no estimate: it starts when the jobs ahead have their slots",
        short=f"queued, {ahead} ahead" if ahead else "queued, first",
        code=job.raw_state,
        details=(("Jobs ahead", str(ahead)), ("Slots", f"{mine.requestedSlots} asked, {free}/{total} free")),
    )
