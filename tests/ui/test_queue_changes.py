"""The Queue over a backend that says what changed between two answers (``JobChanges``): after
random refreshes (states moving, finished jobs gone, new ones submitted, groups changing; sorted, groups
opened, mine and all users, filtered, marks) it shows what the same jobs show from a backend that says
nothing (compared in full), with the same counts; the cursor stays on its job; and the table is told
what changed instead of comparing every row."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from fakes.backend import FakeBackend
from uihelpers import make_app, refreshed
from waiting import wait_for

from yanflow_tui.config import ClusterConfig
from yanflow_tui.model import Job, JobChanges, JobList, JobState
from yanflow_tui.screens.queue import MARK, JobTable

USERS = ("alice", "bob")


class PlainBackend(FakeBackend):
    """Many jobs, some in groups, changed by ``step``; answers a plain list."""

    kind = "fake-plain"

    def __init__(self, config):
        super().__init__(config)
        rng = random.Random(3)
        self.jobs = [self._job(i, rng.choice(USERS)) for i in range(200)]
        self.jobs += [self._job(1000 + k, "alice", parent=str(10 * (k % 4))) for k in range(12)]

    @property
    def current_user(self) -> str:
        return "alice"

    def _job(self, i: int, user: str, parent: str = "") -> Job:
        return replace(self.job(str(i), f"job-{i}", JobState.PENDING), user=user, parent=parent)

    def step(self, rng: random.Random, turn: int, next_id: int) -> None:
        jobs = {job.id: job for job in self.jobs}
        for job_id in rng.sample(sorted(jobs), 15):
            jobs[job_id] = replace(jobs[job_id], state=rng.choice(list(JobState)), reason=f"turn {turn}")
        if turn % 5 == 4:  # a job joins a group
            job_id = rng.choice([i for i, j in jobs.items() if not j.parent and int(i) % 10])
            jobs[job_id] = replace(jobs[job_id], parent="20")
        top = [i for i, j in jobs.items() if not j.parent and int(i) % 10 and int(i) < 1000]
        for job_id in rng.sample(top, 3):  # finished jobs go, new ones come
            del jobs[job_id]
        for k in range(3):
            jobs[str(next_id + k)] = self._job(next_id + k, rng.choice(USERS))
        self.jobs = list(jobs.values())


class ChangesBackend(PlainBackend):
    """The same jobs, answered as a ``JobList`` with what changed since its last answer."""

    kind = "fake-changes"

    def __init__(self, config):
        super().__init__(config)
        self.answered: JobList | None = None

    async def list_jobs(self):
        jobs = await super().list_jobs()
        changes = None
        if self.answered is not None:
            before = {job.id: job for job in self.answered}
            now = {job.id for job in jobs}
            put = tuple(job for job in jobs if before.get(job.id) is not job)
            changes = JobChanges(self.answered.serial, put, tuple(i for i in before if i not in now))
        self.answered = JobList(jobs, changes)
        return self.answered


@pytest.fixture(autouse=True)
def fake_kinds(register_backend, home):
    for backend in (PlainBackend, ChangesBackend):
        register_backend(backend)


def shown(table: JobTable, cluster: str) -> list[tuple[str, str]]:
    """(id, row text less the cluster and any mark) of ``cluster``'s rows, in the table's order."""
    out = []
    for key in table.row_keys:
        name, _, job_id = key.partition("/")
        if name == cluster:
            out.append((job_id, (table.row_text(key) or "").partition(" ")[2].removeprefix(MARK)))
    return out


async def test_the_queue_from_the_backends_changes_shows_what_a_full_compare_shows(monkeypatch):
    app = make_app(
        ClusterConfig("a", "fake-changes", refresh_seconds=3600),
        ClusterConfig("b", "fake-plain", refresh_seconds=3600),
    )
    async with app.run_test(size=(160, 40)) as pilot:
        table = app.screen.query_one(JobTable)
        await wait_for(pilot, lambda: {"a/1", "b/1"} <= set(table.row_keys), what="rows")
        if not app.all_users:
            await pilot.press("u")
        await wait_for(pilot, lambda: len(table.row_keys) > 300, what="every user's rows")
        told = []
        changed = table._changed
        monkeypatch.setattr(table, "_changed", lambda *a: told.append(changed(*a)) or told[-1])
        screen = app.screen
        rng = random.Random(9)
        backends = [app.hub.backend(name) for name in ("a", "b")]
        next_id = 5000
        stayed = 0
        for turn in range(40):
            for backend in backends:
                backend.step(random.Random(turn), turn, next_id)
            next_id += 3
            phase = turn % 8
            if phase == 1:
                await pilot.press("o")  # sorted by the next column from now on
            elif phase == 2:
                for group in ("a/20", "b/20"):
                    table.move_cursor_to_key(group)
                    await pilot.press("e")  # opened
            elif phase == 3:
                await pilot.press("u")  # mine, then all again
            elif phase == 4:
                await pilot.press("slash", *"job-1", "enter")
            elif phase == 5:
                await pilot.press("space")  # a mark
            elif phase == 6:
                await pilot.press("escape", "escape")  # the filter, then the marks
            elif phase == 7:
                for group in ("a/20", "b/20"):
                    if table.move_cursor_to_key(group):
                        await pilot.press("e")  # closed again
            cursor = rng.choice([k for k in table.row_keys if k.startswith("a/")])
            table.move_cursor_to_key(cursor)
            await refreshed(pilot, app)
            assert shown(table, "a") == shown(table, "b"), turn
            if cursor in table.row_keys:  # (still shown: not gone, nor into a closed group)
                assert table.cursor_key == cursor, turn
                stayed += 1
            counts = screen.state_counts
            assert counts.total() == len(table.row_keys) == screen.shown, turn
            for n in counts.values():
                assert n > 0 and n % 2 == 0, turn  # each cluster alike
            assert set(table._by_key) == set(table.row_keys), turn
        assert stayed >= 30
        assert sum(result is not None for result in told) >= 8  # told what changed, with every group closed
