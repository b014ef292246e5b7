"""Gathering a failed job's per-rank evidence for ``firstfailure``, on every backend alike: each rank's
log lines from ``Backend.stream_logs`` (read once, not followed; matched to ranks by ``LogLine.source``),
plus what the scheduler says of each rank where the backend has ``capabilities.rank_evidence`` (exit
codes, signals, the out-of-memory killer, end times, torchrun's error files). Without it, the job's own
exit code, end and first node stand for its one rank. Reads only, under one deadline."""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import replace
from typing import TYPE_CHECKING

from yanflow_tui.firstfailure import FirstFailure, RankEvidence, first_failure, split_ranks, with_srun_tasks

if TYPE_CHECKING:
    from yanflow_tui.backends.base import Backend
    from yanflow_tui.model import Job

MAX_LINES = 50_000  # the last lines kept per source: a long run fails at its end
RANK_WORD = "rank "


def rank_of(source: str) -> str:
    """The rank a log source names ("rank 3" -> "3"; a pod's name stays as it is)."""
    return source[len(RANK_WORD) :] if source.startswith(RANK_WORD) else source


async def read_sources(backend: Backend, job_id: str) -> tuple[dict[str, list[str]], dict[str, int]]:
    """The job's log lines (its main stream, every rank) by source, in order: the last ``MAX_LINES`` of
    each, and how many lines before them were left out."""
    by_source: dict[str, deque[str]] = {}
    seen: dict[str, int] = {}
    if backend.capabilities.logs:
        async for line in backend.stream_logs(job_id, follow=False):
            if not line.status:
                by_source.setdefault(line.source, deque(maxlen=MAX_LINES)).append(line.text)
                seen[line.source] = seen.get(line.source, 0) + 1
    return {s: list(lines) for s, lines in by_source.items()}, {s: seen[s] - len(by_source[s]) for s in by_source}


def merge(
    job: Job, scheduler: list[RankEvidence], by_source: dict[str, list[str]], skipped: dict[str, int] | None = None
) -> list[RankEvidence]:
    """Each rank's evidence: the scheduler's word joined with its log lines (by source; ``skipped``: lines
    left out before them). A job whose lines carry no rank is one rank, its main log, with the job's own
    exit code and end."""
    main = by_source.get("", [])
    ranked = {source: lines for source, lines in by_source.items() if source}
    out: list[RankEvidence] = []
    seen = set()
    for ev in scheduler:
        lines = ranked.get(ev.source) if ev.source else main if not ranked else None
        out.append(replace(ev, lines=tuple(lines or ())))
        seen.add(ev.source)
    for source, lines in ranked.items():
        if source not in seen:
            out.append(RankEvidence(rank_of(source), source=source, lines=tuple(lines)))
    if not out:
        node = job.nodes[0] if job.nodes else ""
        oom = job.raw_state.upper().startswith(("OUT_OF_MEMORY", "OOMKILLED"))  # Slurm's state, a pod's reason
        out.append(
            RankEvidence("0", node, "", tuple(main), job.exit_code, oom=oom, reason=job.raw_state, ended=job.end_time)
        )
    out = with_srun_tasks(out, main) if ranked else out
    skipped = skipped or {}
    out = [
        replace(ev, at=tuple(range(skipped[ev.source], skipped[ev.source] + len(ev.lines))))
        if skipped.get(ev.source)
        else ev
        for ev in out
    ]
    return [rank for ev in out for rank in split_ranks(ev)]


async def find_first_failure(backend: Backend, job: Job, timeout: float) -> FirstFailure | None:
    """The job's first failure across its ranks (None: no rank shows one), read within ``timeout``."""

    async def gather() -> FirstFailure | None:
        scheduler = await backend.rank_evidence(job.id) if backend.capabilities.rank_evidence else []
        return first_failure(merge(job, scheduler, *await read_sources(backend, job.id)))

    return await asyncio.wait_for(gather(), timeout)
