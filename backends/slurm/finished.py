"""Exit codes of the finished jobs the queue lists: squeue's ``-o`` text has no field for them, so
the jobs it shows finished (for ``MinJobAge`` after they end) are asked for once, by id, with
``scontrol -o show job`` (one round trip for up to ``BATCH``; squeue's JSON would print the whole
queue: 22.05 ignores ``-j``), and the code and signal learned are kept (they never change). ``FinishedCodes``
keeps them per backend and gives each finished Job its coded copy, the same object while the
parse's Job is the same, so that what changed between answers stays exact."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from yanflow_tui.model import TERMINAL_STATES, Job

BATCH = 100  # job ids asked at once (the rest at the next refresh)
# each id's one-line record, in one round trip
ASK = 'for j; do scontrol -o show job -- "$j" 2>/dev/null; done; exit 0'


class FinishedCodes:
    """Job id -> (exit code, signal) learned; the coded Job last made of each parse's Job."""

    def __init__(self) -> None:
        self._codes: dict[str, tuple[int | None, int | None]] = {}
        self._made: dict[str, tuple[Job, Job]] = {}

    def missing(self, jobs: list[Job]) -> list[str]:
        """The ids of finished jobs with no exit code and none learned yet (not an array's own row:
        its tasks have theirs)."""
        codes, terminal = self._codes, TERMINAL_STATES
        ended = [j for j in jobs if j.exit_code is None and j.state in terminal and j.id not in codes]
        if not ended:
            return []
        groups = {j.parent for j in jobs if j.parent}
        return [j.id for j in ended if j.id not in groups]

    def learn(self, found: dict[str, tuple[int, int]], asked: Iterable[str]) -> None:
        """The codes ``found`` of the ids ``asked`` (only those: a running job's code is not final)."""
        for job_id in asked:
            if job_id in found:
                self._codes[job_id] = found[job_id]

    def apply(self, jobs: list[Job]) -> tuple[list[Job], list[Job]]:
        """``jobs`` with the codes learned, and the coded Jobs made new this time."""
        codes, made, terminal = self._codes, self._made, TERMINAL_STATES
        out, new = [], []
        seen = set()
        for job in jobs:
            if job.exit_code is None and job.state in terminal and job.id in codes:
                seen.add(job.id)
                kept = made.get(job.id)
                if kept is None or kept[0] is not job:
                    code, signal = codes[job.id]
                    kept = made[job.id] = (job, replace(job, exit_code=code, signal=signal))
                    new.append(kept[1])
                job = kept[1]
            out.append(job)
        for gone in [i for i in made if i not in seen]:  # listed no more: forgotten
            del made[gone]
            self._codes.pop(gone, None)
        return out, new

    def coded(self, job: Job) -> Job:
        """The coded copy of a parse's ``job`` (``apply``), else ``job``."""
        kept = self._made.get(job.id)
        return kept[1] if kept is not None and kept[0] is job else job
