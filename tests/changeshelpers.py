"""Checks shared by the tests of backends that answer ``list_jobs`` with what changed (``JobChanges``):
each answer's changes against the answer they name, and a Queue's lists kept from them against lists
worked out afresh."""

from __future__ import annotations

from typing import Any

from yanflow_tui.model import Job, JobList
from yanflow_tui.screens.models.joblist import ClusterJobs


def shape(lists: ClusterJobs) -> tuple:
    """What the Queue reads: the order, the groups and their members, each entry's job."""
    return (
        [(e.key, e.job) for e in lists.top],
        {key: [(e.key, e.job) for e in kids] for key, kids in lists.children.items()},
        {key: e.job for key, e in lists.by_key.items()},
    )


class Polls:
    """list_jobs poll after poll: each answer's changes checked against the answer they name (applied to
    it, they give the new answer), and fed to a Queue's lists (as the hub puts them on the snapshot)
    beside lists made afresh. ``check``: what else a backend's answer must hold (its own)."""

    def __init__(self, backend: Any):
        self.backend = backend
        self.answers: dict[int, list[Job]] = {}
        self.kept = ClusterJobs()
        self.told = 0  # answers that said what changed

    def check(self, answer: JobList) -> None:
        """A backend's own checks of an answer (none here)."""

    async def poll(self) -> JobList:
        answer = await self.backend.list_jobs()
        assert isinstance(answer, JobList)
        self.check(answer)
        changes = answer.changes
        if changes is not None:
            before = self.answers[changes.since]
            was = set(map(id, before))
            assert sorted(map(id, changes.put)) == sorted(id(j) for j in answer if id(j) not in was)
            assert set(changes.gone) == {j.id for j in before} - {j.id for j in answer}
            assert len(set(changes.gone)) == len(changes.gone)
            patched = {j.id: j for j in before}
            for job_id in changes.gone:
                del patched[job_id]
            patched.update((j.id, j) for j in changes.put)
            now = {j.id: j for j in answer}
            assert patched.keys() == now.keys() and all(patched[k] is now[k] for k in now)
            self.told += 1
        self.answers[answer.serial] = list(answer)
        jobs = tuple(answer)
        self.kept.update(jobs, "", changes, answer.serial)
        fresh = ClusterJobs()
        fresh.update(jobs, "")
        assert shape(self.kept) == shape(fresh)
        return answer
