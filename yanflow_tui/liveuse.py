"""A running job's CPU and memory now, as its cluster's own live source measures them (``LiveUse``):
the local machine's ``/proc``, Kubernetes' metrics API (``metrics.k8s.io``), Determined's trial system
metrics. A backend with ``capabilities.live_use`` answers ``Backend.live_use(job_ids)``; where the
cluster has no such source (no metrics-server), it raises ``NotOffered`` naming the source that
would give the figures. ``read`` asks it under a timeout and never raises. Reads only: nothing here
starts a job step or an exec. No UI."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from yanflow_tui.errors import NotOffered, YanflowError

if TYPE_CHECKING:
    from yanflow_tui.backends.base import Backend

ONE_CORE = "one core"
MISSING = "(missing) "  # the prefix of a source not read (as ``jobhealth.MISSING``)


@dataclass(frozen=True)
class LiveGpu:
    """One GPU's use as the live source reports it (where it reports GPUs at all)."""

    index: int
    utilization: float | None = None  # percent
    memory_used_mb: int | None = None


@dataclass(frozen=True)
class LiveUse:
    """One job's figures now. ``cpu_percent`` is summed over its processes (containers, pods): 100 is
    one core busy, as ``top`` says it, over ``window_seconds``; memory is resident (RSS; Kubernetes:
    the working set), ``memory_limit_kb`` its limit where one is set."""

    source: str
    cpu_percent: float | None = None
    memory_used_kb: float | None = None
    memory_limit_kb: float | None = None
    window_seconds: float | None = None
    parts: int = 0  # the processes (containers) measured
    gpus: tuple[LiveGpu, ...] = ()
    cpu_of: str = ONE_CORE  # what 100 % of ``cpu_percent`` is (Determined's profiler: every core of the host)

    def as_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "cpu_percent": None if self.cpu_percent is None else round(self.cpu_percent, 2),
            "memory_used_kb": self.memory_used_kb,
            "memory_limit_kb": self.memory_limit_kb,
            "window_seconds": self.window_seconds,
            "cpu_of": self.cpu_of,
            "parts": self.parts,
            "gpus": [
                {"index": g.index, "utilization_percent": g.utilization, "memory_used_mb": g.memory_used_mb}
                for g in self.gpus
            ],
        }


async def read(backend: Backend, job_ids: Sequence[str], timeout: float) -> tuple[dict[str, LiveUse], str]:
    """(the jobs' live figures by id, the source's name) from ``backend``; where it has none, or none
    now, ({}, ``MISSING`` + the source that would give them). Never raises."""
    source = backend.cpu_use_source
    if not job_ids or not backend.capabilities.live_use:
        return {}, source
    try:
        found = await asyncio.wait_for(backend.live_use(list(job_ids)), timeout)
    except NotOffered as exc:  # no such source there: its message names the one that would give them
        return {}, MISSING + str(exc)
    except (YanflowError, OSError, asyncio.TimeoutError, TimeoutError) as exc:
        return {}, f"{MISSING}{source.removeprefix(MISSING)} (not read now: {exc or type(exc).__name__})"
    named = next((use.source for use in found.values()), source)
    return found, named
