"""The Queue's per-cluster lists (``ClusterJobs``): worked out in place after random changes (jobs
changed, finished ones gone, new ones submitted, groups formed and broken up), found by comparing the
jobs or told by the backend (``JobChanges``), they equal the lists worked out afresh from the same jobs."""

from __future__ import annotations

import random
from dataclasses import replace

from yanflow_tui.model import Job, JobChanges, JobList, JobState
from yanflow_tui.screens.models.joblist import ClusterJobs, Entry


def job(i: int, parent: str = "", state: JobState = JobState.RUNNING, user: str = "ann") -> Job:
    return Job(str(i), "c", f"job-{i}", user, state, parent=parent)


def shape(lists: ClusterJobs) -> tuple:
    """What the Queue reads: the order, the groups and their members, each entry's job."""
    return (
        [(e.key, e.job) for e in lists.top],
        {key: [(e.key, e.job) for e in kids] for key, kids in lists.children.items()},
        {key: e.job for key, e in lists.by_key.items()},
        {key: e.job for key, e in lists.by_id.items()},
    )


def test_lists_kept_in_place_equal_the_lists_worked_out_afresh():
    rng = random.Random(7)
    jobs = {i: job(i, parent=str(i - i % 10) if i % 10 and i < 60 else "") for i in range(200)}
    kept = ClusterJobs()
    next_id = 200
    for turn in range(60):
        for i in rng.sample(sorted(jobs), 15):  # states change
            jobs[i] = replace(jobs[i], state=rng.choice(list(JobState)), reason=f"turn {turn}")
        kind = turn % 6
        if kind in (0, 1):  # finished top-level jobs age out, as many are submitted
            for i in rng.sample([i for i, j in jobs.items() if not j.parent and i % 10], 3):
                del jobs[i]
            for _ in range(3):
                jobs[next_id] = job(next_id)
                next_id += 1
        elif kind == 2:  # a job joins a group, or a new job arrives in one
            i = rng.choice(sorted(jobs))
            jobs[i] = replace(jobs[i], parent="0")
            jobs[next_id] = job(next_id, parent="10")
            next_id += 1
        elif kind == 3:  # a group's head goes: its members show as top-level jobs
            heads = [i for i in jobs if i % 10 == 0 and i < 60]
            if heads:
                del jobs[rng.choice(heads)]
        elif kind == 4:  # a job arrives that others named as their group (they were orphans)
            head = rng.choice(range(0, 60, 10))
            jobs.setdefault(head, job(head))
        else:  # an equal job in a new object, and a job with an id below the others (put in the middle)
            i = rng.choice(sorted(jobs))
            jobs[i] = replace(jobs[i])
            low = rng.randrange(60, 200)
            jobs.setdefault(low, job(low))
        ordered = tuple(jobs[i] for i in rng.sample(sorted(jobs), len(jobs)))
        me = "ann" if turn % 15 == 14 else ""
        kept.update(ordered, me)
        fresh = ClusterJobs()
        fresh.update(ordered, me)
        assert shape(kept) == shape(fresh), f"turn {turn}"


def test_a_poll_that_changed_nothing_but_states_keeps_the_order_and_says_rows_differ():
    jobs = tuple(job(i) for i in range(50))
    lists = ClusterJobs()
    assert lists.update(jobs, "")
    generation, top = lists.generation, lists.top
    changed = tuple(replace(j, state=JobState.PENDING) if j.id == "7" else j for j in jobs)
    assert lists.update(changed, "")
    assert lists.generation == generation and lists.top is top
    assert lists.by_id["7"].job.state is JobState.PENDING
    assert not lists.update(changed, "")  # the same tuple: nothing to do
    assert not lists.update(tuple(changed), "")  # the same jobs again, in a new tuple
    assert lists.update(tuple(changed), "bob") and not lists.top  # mine: none of them
    assert not lists.update(tuple(changed), "bob") and not lists.top
    assert lists.update(tuple(changed), "") and len(lists.top) == 50
    assert not lists.update(tuple(replace(j) for j in changed), "")  # equal jobs: no row differs


def test_lists_kept_from_the_backends_changes_equal_the_lists_worked_out_afresh():
    """A backend that says what changed (``JobChanges``): the lists kept from those alone equal the
    lists worked out afresh, mine or everyone's; changes not relative to the jobs taken last (an
    answer missed) are not used, and every job is compared instead."""
    rng = random.Random(11)
    jobs = {
        i: job(i, parent=str(i - i % 10) if i % 10 and i < 60 else "", user=rng.choice(("ann", "bob")))
        for i in range(300)
    }
    kept = ClusterJobs()
    answer = JobList(jobs.values())
    kept.update(tuple(answer), "", answer.changes, answer.serial)
    next_id = 300
    used = 0
    for turn in range(80):
        put: dict[int, Job] = {}
        gone: set[int] = set()
        for i in rng.sample(sorted(jobs), 20):  # states change (a few users too)
            user = rng.choice(("ann", "bob")) if rng.random() < 0.1 else jobs[i].user
            jobs[i] = put[i] = replace(jobs[i], state=rng.choice(list(JobState)), reason=f"turn {turn}", user=user)
        if turn % 4 == 0:  # a group changes: a job joins one, or a head goes
            i = rng.choice(sorted(jobs))
            jobs[i] = put[i] = replace(jobs[i], parent="0")
            head = rng.choice(range(10, 60, 10))
            if head in jobs:
                del jobs[head]
                put.pop(head, None)
                gone.add(head)
        for i in rng.sample([i for i, j in jobs.items() if not j.parent and i % 10 and i > 60], 4):  # finished jobs go
            del jobs[i]
            put.pop(i, None)
            gone.add(i)
        for _ in range(4):  # as many are submitted
            jobs[next_id] = put[next_id] = job(next_id, user=rng.choice(("ann", "bob")))
            next_id += 1
        since = answer.serial if turn % 9 != 8 else answer.serial - 1  # (now and then: an answer missed)
        answer = JobList(jobs.values(), JobChanges(since, tuple(put.values()), tuple(map(str, gone))))
        me = "ann" if turn >= 40 else ""
        before = kept.generation
        kept.update(tuple(answer), me, answer.changes, answer.serial)
        fresh = ClusterJobs()
        fresh.update(tuple(answer), me)
        assert shape(kept) == shape(fresh), f"turn {turn}"
        used += kept.exact is False
        if kept.patched is not None:  # only top-level jobs in no group came or went: patched in place
            assert kept.generation == before + 1
    assert used > 50  # the changes were used, not the compare


def test_changes_that_do_not_add_up_are_compared_in_full():
    """A backend whose changes miss a job (it says nothing of a new one): the lists still hold every job."""
    jobs = [job(i) for i in range(20)]
    lists = ClusterJobs()
    answer = JobList(jobs)
    lists.update(tuple(answer), "", None, answer.serial)
    jobs.append(job(20))
    answer = JobList(jobs, JobChanges(answer.serial, (), ()))
    assert lists.update(tuple(answer), "", answer.changes, answer.serial)
    assert "20" in lists.by_id and [e.key for e in lists.top][-1] == "c/20"


def test_an_entry_lets_its_old_version_go_once_the_new_row_reused_its_cells():
    """A changed job's entry keeps the old version (its job and row cells) only until the new row is
    made from it: at 100,000 jobs, kept for good, they held one old Job and row per changed job."""

    def clock() -> float:
        return 0.0

    first = job(1)
    entry = Entry(first, "c/1")
    old_row = entry.row(clock, "", 0, "", "")
    second = replace(first, state=JobState.COMPLETED)
    entry.set_job(second, first)
    assert entry.old_version is first  # held for the next row to reuse
    new_row = entry.row(clock, "", 0, "", "")
    assert entry.old_version is None  # used, and let go
    assert new_row.cells[2] is old_row.cells[2]  # the unchanged name's cell reused (not made again)
    assert new_row is not old_row and new_row.cells != old_row.cells


def test_an_entry_lets_its_old_version_go_when_the_new_row_cannot_reuse_its_cells():
    """A group whose count changed makes its next row with another count: the old version (a group
    Job, with the node tuple of all its members) goes all the same, not kept until the next change."""

    def clock() -> float:
        return 0.0

    first = job(1)
    entry = Entry(first, "c/1")
    entry.row(clock, "▸ ", 3, "", "")
    second = replace(first, state=JobState.COMPLETED)
    entry.set_job(second, first)
    assert entry.old_version is first
    row = entry.row(clock, "▸ ", 4, "", "")  # a member more: the old cells are not for this row
    assert entry.old_version is None
    assert row.cells[2] == "job-1 (4)"


def test_the_jobs_compared_by_identity_go_once_the_backend_tells_the_changes():
    """``pool`` and ``seen`` serve the next compare by identity; once the lists follow the backend's
    changes they are stale (the next compare is by id), and they went: they held the first answer's
    jobs (old versions included) and a set of 100,000 identities."""
    jobs = [job(i) for i in range(20)]
    lists = ClusterJobs()
    answer = JobList(jobs)
    lists.update(tuple(answer), "", None, answer.serial)
    assert len(lists.pool) == 20 and len(lists.seen) == 20
    jobs[3] = replace(jobs[3], state=JobState.COMPLETED)
    answer = JobList(jobs, JobChanges(answer.serial, (jobs[3],), ()))
    assert lists.update(tuple(answer), "", answer.changes, answer.serial)
    assert lists.pool == () and lists.seen == set() and not lists.exact
    assert lists.by_id["3"].job is jobs[3]
