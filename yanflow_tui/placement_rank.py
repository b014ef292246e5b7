"""Where a job would start soonest: each cluster's answer for one job spec (a ``Placement``: now,
waits or never; when; why; on which nodes) and their ranking, soonest first and "never" last. A
backend with ``capabilities.placement`` answers for itself (``Backend.placement``: Slurm asks
``sbatch --test-only``); any other is judged from its nodes now by ``capacity.verdict``. No Textual:
the Submit panel and ``yanflow-tui where`` show what these return."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from yanflow_tui.capacity import Fit, Verdict, verdict
from yanflow_tui.errors import BackendError

if TYPE_CHECKING:
    from yanflow_tui.backends.base import Backend
    from yanflow_tui.model import JobSpec, Node

NOW = "now"
WAITS = "waits"
NEVER = "never"
VERDICTS = (NOW, WAITS, NEVER)  # their order in a ranking
FROM_FIT = {Fit.NOW: NOW, Fit.WAITS: WAITS, Fit.NEVER: NEVER}
SOON = 60.0  # s: a start Slurm expects within this is "now" (its estimate is rounded to the second)


@dataclass(frozen=True)
class Placement:
    """One cluster's answer for a job: ``verdict`` (``now``, ``waits``, ``never``), when it would
    start (None: not known, or never), why (a sentence with the values), and the nodes its
    scheduler would give it where it says so."""

    cluster: str
    verdict: str
    reason: str
    expected_start: datetime | None = None
    nodes: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "verdict": self.verdict,
            "expected_start": self.expected_start.isoformat() if self.expected_start else None,
            "reason": self.reason,
            "nodes": list(self.nodes),
        }


def from_verdict(cluster: str, found: Verdict) -> Placement:
    """The capacity verdict from a cluster's nodes as a placement (no start time: the nodes say
    nothing of when busy ones free up; "now" starts now)."""
    return Placement(cluster, FROM_FIT[found.fit], found.reason)


def wanted_gpu_type(spec: JobSpec) -> str | None:
    """The GPU type the job names in any section (Slurm's ``gpu_type``), for a cluster whose own
    request has none: a job written for a100s asks for a100s wherever it goes."""
    for values in spec.sections.values():
        if isinstance(values, dict) and values.get("gpu_type"):
            return str(values["gpu_type"])
    return None


def _tokens(text: str) -> set[str]:
    return {t for t in re.split(r"[^a-z0-9]+", text.lower()) if t}


def node_type_for(wanted: str, nodes: Sequence[Node]) -> str:
    """The nodes' own name of the GPU type ``wanted`` names: equal, else the first type that holds it
    as a word ("a100" is "NVIDIA-A100-SXM4-80GB" on Kubernetes); ``wanted`` itself where none does."""
    types = {n.gpu_type for n in nodes if n.gpu_type}
    for name in sorted(types):
        if name.lower() == wanted.lower():
            return name
    for name in sorted(types):
        if wanted.lower() in _tokens(name):
            return name
    return wanted


def judged_from_nodes(backend: Backend, spec: JobSpec, nodes: Sequence[Node]) -> Placement:
    """What the nodes now say of ``spec`` on ``backend``'s cluster (``capacity.verdict``), with the GPU
    type the job names elsewhere where the cluster's request has none."""
    if not nodes:
        return Placement(backend.name, WAITS, "no node data: the cluster listed no nodes")
    req = backend.capacity_request(spec)
    wanted = req.gpu_type or wanted_gpu_type(spec)
    if req.gpus and wanted:
        req = replace(req, gpu_type=node_type_for(wanted, nodes))
    return from_verdict(backend.name, verdict(nodes, req))


def _sort_key(place: Placement, now: datetime) -> tuple[int, float]:
    start = place.expected_start
    if place.verdict == NOW:
        return 0, 0.0
    if place.verdict == WAITS:
        return 1, (start - now).total_seconds() if start is not None else float("inf")
    return 2, 0.0


def rank(places: Iterable[Placement], now: datetime | None = None) -> list[Placement]:
    """Soonest first: "now", then "waits" by expected start (unknown starts after known ones), then
    "never"; ties keep the given order (the config's)."""
    now = now or datetime.now(timezone.utc)
    return sorted(places, key=lambda p: _sort_key(p, now))


def candidates(backends: Iterable[Backend]) -> list[Backend]:
    """The clusters that could run a job at all: those that take submissions (a read-only one too:
    asking where a job would start sends nothing)."""
    return [b for b in backends if b.capabilities.submit]


def for_cluster(spec: JobSpec, cluster: str) -> JobSpec:
    """``spec`` as it would go to ``cluster`` (its ``cluster:`` set there)."""
    return replace(spec, cluster=cluster)


async def place(backend: Backend, spec: JobSpec, nodes: Sequence[Node]) -> Placement:
    """``backend``'s answer for ``spec``: a spec the cluster cannot run is "never" with the reason;
    then the backend's own answer (``capabilities.placement``), else the nodes' verdict."""
    spec = for_cluster(spec, backend.name)
    try:
        backend.check_spec(spec)
    except BackendError as exc:
        return Placement(backend.name, NEVER, str(exc))
    if backend.capabilities.placement:
        return await backend.placement(spec, nodes)
    return judged_from_nodes(backend, spec, nodes)


async def place_all(
    asks: Sequence[tuple[Backend, Sequence[Node]]], spec: JobSpec, timeout: float
) -> tuple[list[Placement], list[tuple[str, str]]]:
    """Each cluster's answer, asked at once, each within ``timeout`` s, ranked; and (cluster, why)
    for each that could not answer."""
    from yanflow_tui.hub import error_text

    async def one(backend: Backend, nodes: Sequence[Node]) -> Placement | str:
        try:
            return await asyncio.wait_for(place(backend, spec, nodes), timeout)
        except (TimeoutError, asyncio.TimeoutError):
            return f"no answer within {timeout:.0f} s"
        except Exception as exc:
            return error_text(exc)

    answers = await asyncio.gather(*(one(b, n) for b, n in asks))
    found = [a for a in answers if isinstance(a, Placement)]
    errors = [(b.name, a) for (b, _), a in zip(asks, answers) if isinstance(a, str)]
    return rank(found), errors


def when_text(place: Placement, now: datetime | None = None) -> str:
    """The expected start for a person: "now", "in 12 min (13:05)", "unknown", "never"."""
    if place.verdict == NEVER:
        return "never"
    start = place.expected_start
    if place.verdict == NOW:
        return "now"
    if start is None:
        return "later (no estimate)"
    now = now or datetime.now(timezone.utc)
    minutes = max(0, round((start - now).total_seconds() / 60))
    ahead = f"in {minutes} min" if minutes < 120 else f"in {minutes / 60:.1f} h"
    return f"{ahead} ({start.astimezone().strftime('%H:%M')})"
