"""Where a Determined job would start, for ``where``: the agents' verdict (``placement_rank``), then the
queue of the resource pool it would go to (the one it names, else the master's default compute pool):
the jobs still queued there are ahead of a new one ("2 ahead"). Reads only (``/api/v1/job-queues`` and
``/api/v1/resource-pools`` through the SDK's bindings, in the backend's session): nothing is submitted."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from determined.common.api import bindings, errors

from yanflow_tui.backends.determined.explain import pool_queue, queued
from yanflow_tui.backends.determined.session import describe_error
from yanflow_tui.placement_rank import NEVER, Placement

# A read the master refuses or lacks (an older master wants a pool named); not a lost login, which the
# connection handles (``errors.UnauthenticatedException`` is not among these).
REFUSED = (errors.APIException, errors.ForbiddenException, bindings.APIHttpError)


def default_pool(session: Any) -> str:
    """The master's default compute pool ("" where it does not say: then the master chooses)."""
    try:
        pools = bindings.get_GetResourcePools(session).resourcePools or ()
    except REFUSED:
        return ""
    return next((p.name for p in pools if p.defaultComputePool), "")


def ahead_text(ahead: int, pool: str) -> str:
    where = f"resource pool {pool}'s queue" if pool else "its resource pool's queue"
    return f"{ahead} ahead in {where}" if ahead else f"no job queued ahead in {where}"


def read(session: Any, pool: str, judged: Placement) -> Placement:
    """``judged`` (the agents' verdict for the job) with the pool's queue: the count of the jobs queued
    there leads the reason. The verdict stays the agents': a job that fits the free slots now is
    backfilled past queued ones that wait for more (the master's ``SCHEDULED_BACKFILLED``)."""
    if judged.verdict == NEVER:
        return judged
    pool = pool or default_pool(session)
    try:
        ahead = sum(1 for job in pool_queue(session, pool) if queued(job))
    except REFUSED as exc:  # the agents' verdict still holds
        return replace(judged, reason=f"{judged.reason}; the pool's queue was not read ({describe_error(exc, '')})")
    reason = f"{ahead_text(ahead, pool)}; {judged.reason}"
    return replace(judged, reason=reason)
