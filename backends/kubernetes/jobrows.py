"""The Job rows of the watch cache, kept per Kubernetes Job between reads, and what changed since
the backend's previous ``list_jobs`` answer (``JobChanges``).

A Job's rows (``views.job_rows``) depend only on its record, its pods' records and the cluster's
name: no clock, no nodes. The cache's records are frozen and each watch event (each new
resourceVersion) or list makes a new one, so a Job whose record and pods' records are the very same
objects as last time (or equal ones: a re-list, an event on a field not shown) keeps its rows, the
very same ``Job`` objects. Only the others are built again; a row equal to the one it replaces is
kept too. Which records changed is the caches' journal (``Reflector.changes_since``): only the Jobs
they belong to are looked at, and every Job is compared only after a list, or when the journal lost
track. The rows put and the ids gone are gathered as they happen, so an answer says what changed
since the previous one without comparing every job.

Any doubt and the answer says nothing (``changes`` None: the Queue compares everything), as the Slurm
backend does: the first answer, and the first after a cache was listed afresh (a 410 Gone, a watch
error, another scope's caches), or while an id could be given twice (a name with a ``/``, which the
API server never accepts). Pure bookkeeping: no I/O, no event loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from yanflow_tui.backends.kubernetes.cache import Reflector
from yanflow_tui.backends.kubernetes.extract import JobInfo, PodInfo
from yanflow_tui.backends.kubernetes.views import job_rows, pods_by_job
from yanflow_tui.model import Job, JobChanges, JobList


@dataclass(slots=True)
class _Built:
    """One Job's rows and its record they were built from (its pods': ``JobRows._pods_of``)."""

    info: JobInfo
    rows: tuple[Job, ...]


class JobRows:
    """The rows of one backend's job and pod caches (``rows``), numbered answers with their changes
    (``answer``). Not thread-safe: called from the event loop only, with no await inside."""

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self._built: dict[tuple[str, str], _Built] = {}
        self._rows: list[Job] = []
        self._seen: tuple = ()  # (caches, their versions) the rows were made from
        # Job -> the pod records its rows were built from (any order; a Job not listed too); pod -> its Job
        self._pods_of: dict[tuple[str, str], tuple[PodInfo, ...]] = {}
        self._owner: dict[tuple[str, str], tuple[str, str]] = {}
        self._listed: tuple = ()  # (caches, how many lists each took) at the previous answer
        self._odd: set[tuple[str, str]] = set()  # Jobs with a ``/`` in a name: ids could collide
        self._doubt = False  # such a Job was there since the previous answer
        self._put: dict[str, Job] = {}  # rows new or changed since the previous answer, by id
        self._gone: set[str] = set()  # ids listed then and not now
        self._new: set[str] = set()  # ids in ``_put`` not listed then
        self._answered = 0  # the previous answer's serial (0: none yet, or not to follow)
        self.rebuilt = 0  # rows built so far (for tests and benchmarks)

    def rows(self, jobs: Reflector, pods: Reflector) -> list[Job]:
        """The rows now, in the jobs cache's order (each Job's row, then its pods' by rank). The list
        is this object's: read it, never change it."""
        known = self._seen[:2] == (jobs, pods)
        job_version, _, infos, job_news, reshaped = jobs.changes_since(self._seen[2] if known else -1)
        pod_version, _, pod_infos, pod_news, _ = pods.changes_since(self._seen[3] if known else -1)
        seen = (jobs, pods, job_version, pod_version, reshaped)
        if seen[:4] == self._seen[:4]:
            return self._rows
        self._doubt |= bool(self._odd)
        reorder = not known or reshaped != self._seen[4]  # Jobs came or went: the order is the cache's again
        if job_news is None or pod_news is None or not self._patch(infos, job_news, pod_news, reorder):
            self._compare_all(infos, pod_infos)
        self._rows = [row for entry in self._built.values() for row in entry.rows]
        self._seen = seen
        self._doubt |= bool(self._odd)
        return self._rows

    def _compare_all(self, infos: list[JobInfo], pod_infos: list[PodInfo]) -> None:
        """Every Job's records compared with those its rows were built from (identity, then content)."""
        groups = {key: tuple(group) for key, group in pods_by_job(pod_infos).items()}
        before, built, pods_before = self._built, {}, self._pods_of
        for info in infos:
            key = (info.namespace, info.name)
            group = groups.get(key, ())
            entry = before.pop(key, None)
            if entry is None or (entry.info is not info and entry.info != info) or pods_before.get(key, ()) != group:
                entry = self._build(key, info, group, entry)
            else:  # the same records, or equal ones (a re-list): the same rows; the new record kept
                entry.info = info
            built[key] = entry
        for key, entry in before.items():  # Jobs deleted
            self._drop(key, entry)
        self._built, self._pods_of = built, groups
        self._owner = {(pod.namespace, pod.name): key for key, group in groups.items() for pod in group}

    def _patch(self, infos: list[JobInfo], job_news: dict[Any, Any], pod_news: dict[Any, Any], reorder: bool) -> bool:
        """The Jobs whose records (``job_news``) or pods' records (``pod_news``) were put or deleted
        since the rows were made, built again; the rest are not looked at; with ``reorder``, in the
        order of ``infos`` again. False where the Jobs kept do not add up to the cache's (then every
        Job is compared)."""
        touched = dict.fromkeys(job_news)
        pods_of, owner = self._pods_of, self._owner
        for pod_key, pod in pod_news.items():
            was = owner.pop(pod_key, None)
            if was is not None:
                rest = tuple(p for p in pods_of[was] if p.name != pod_key[1])  # (a Job's pods: one namespace)
                if rest:
                    pods_of[was] = rest
                else:
                    del pods_of[was]
                touched[was] = None
            if pod is not None and pod.job:
                key = (pod.namespace, pod.job)
                pods_of[key] = (*pods_of.get(key, ()), pod)
                owner[pod_key] = key
                touched[key] = None
        built = self._built
        for key in touched:
            entry = built.get(key)
            info = job_news[key] if key in job_news else entry.info if entry is not None else None
            if info is None:  # deleted (or pods of a Job not listed)
                if entry is not None:
                    del built[key]
                    self._drop(key, entry)
                continue
            built[key] = self._build(key, info, pods_of.get(key, ()), entry)
        if len(built) != len(infos):
            return False
        if reorder:
            try:
                self._built = {key: built[key] for key in ((i.namespace, i.name) for i in infos)}
            except KeyError:
                return False
        return True

    def _drop(self, key: tuple[str, str], entry: _Built) -> None:
        """A Job deleted: its rows gone."""
        self._odd.discard(key)
        for row in entry.rows:
            self._take_out(row.id)

    def answer(self, jobs: Reflector, pods: Reflector) -> JobList:
        """The rows as a numbered answer, with what changed since the previous answer when that is
        known for sure (else None)."""
        listed = (jobs, pods, jobs.snapshot()[1], pods.snapshot()[1])  # (before the rows: a list meanwhile shows)
        rows = self.rows(jobs, pods)
        known = bool(self._answered) and listed == self._listed and not self._doubt
        changes = JobChanges(self._answered, tuple(self._put.values()), tuple(self._gone)) if known else None
        answer = JobList(rows, changes)
        self._answered, self._listed = answer.serial, listed
        self._put, self._gone, self._new = {}, set(), set()
        self._doubt = bool(self._odd)
        return answer

    def _build(self, key: tuple[str, str], info: JobInfo, pods: tuple[PodInfo, ...], old: _Built | None) -> _Built:
        """A Job's rows built again; rows equal to the ones they replace are kept (the same objects)."""
        made = job_rows(self.cluster, info, pods)
        self.rebuilt += len(made)
        if "/" in info.namespace or "/" in info.name or any("/" in pod.name for pod in pods):
            self._odd.add(key)
        else:
            self._odd.discard(key)
        was = {row.id: row for row in old.rows} if old is not None else {}
        for at, row in enumerate(made):
            same = was.pop(row.id, None)
            if same is None:
                self._add(row)
            elif same == row:
                made[at] = same
            else:
                self._put[row.id] = row
        for job_id in was:  # pods no longer of this Job
            self._take_out(job_id)
        return _Built(info, tuple(made))

    def _add(self, row: Job) -> None:
        """A row whose id was not listed a moment ago (perhaps at the previous answer, then gone)."""
        if row.id in self._gone:
            self._gone.discard(row.id)
        else:
            self._new.add(row.id)
        self._put[row.id] = row

    def _take_out(self, job_id: str) -> None:
        """A row listed a moment ago and not now: gone, unless it came after the previous answer."""
        self._put.pop(job_id, None)
        if job_id in self._new:
            self._new.discard(job_id)
        else:
            self._gone.add(job_id)
