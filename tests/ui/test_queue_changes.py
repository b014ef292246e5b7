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
from yanflow_tui.errors import BackendError
from yanflow_tui.hub import Health
from yanflow_tui.model import Job, JobChanges, JobList, JobState
from yanflow_tui.screens.models.queueview import MARK
from yanflow_tui.screens.queue import JobTable
from yanflow_tui.screens.widgets.table import Row

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
        hinted = [0] * 8  # per phase: refreshes whose rows the table was told what changed in
        for turn in range(40):
            for backend in backends:
                backend.step(random.Random(turn), turn, next_id)
            next_id += 3
            phase = turn % 8
            if phase == 0 and turn:
                await pilot.press("u")  # mine, then all again
            elif phase == 1:
                await pilot.press("o")  # sorted by the next column from now on
            elif phase == 2:
                for group in ("a/20", "b/20"):
                    table.move_cursor_to_key(group)
                    await pilot.press("e")  # opened (refreshed so next turn too)
            elif phase == 4:
                for key in ("a/1002", "b/1002", "a/0", "b/0", "a/5", "b/5"):  # a member, a group, a job
                    if table.move_cursor_to_key(key):
                        await pilot.press("space")  # marked (refreshed so next turn too)
            elif phase == 6:
                await pilot.press("slash", *"job-1", "enter")
            elif phase == 7:
                await pilot.press("escape", "escape")  # the filter, then the marks
                for group in ("a/20", "b/20"):
                    if table.move_cursor_to_key(group):
                        await pilot.press("e")  # closed again
            cursor = rng.choice([k for k in table.row_keys if k.startswith("a/")])
            table.move_cursor_to_key(cursor)
            told.clear()
            await refreshed(pilot, app)
            hinted[phase] += told[-1:] != [None] and bool(told)
            assert shown(table, "a") == shown(table, "b"), turn
            if cursor in table.row_keys:  # (still shown: not gone, nor into a closed group)
                assert table.cursor_key == cursor, turn
                stayed += 1
            counts = screen.view.state_counts
            assert counts.total() == len(table.row_keys) == screen.view.shown, turn
            for n in counts.values():
                assert n > 0 and n % 2 == 0, turn  # each cluster alike
            assert set(table._by_key) == set(table.row_keys), turn
        assert stayed >= 30
        assert hinted[1] >= 3 and hinted[3] >= 3 and hinted[5] >= 3, hinted  # groups closed; one opened; marks


def content(rows: list[Row]) -> list[tuple]:
    """What rows show and sort by (a live cell evaluated: rows made twice differ in its function)."""
    texts = (cell() if callable(cell) else cell for row in rows for cell in row.cells)
    plain = [text if isinstance(text, str) else text.plain for text in texts]
    out, at = [], 0
    for row in rows:
        out.append((row.key, row.parent, row.style, row.sort, plain[at : at + len(row.cells)]))
        at += len(row.cells)
    return out


async def test_rows_edited_for_groups_opened_and_jobs_marked_equal_the_rows_made_one_by_one(monkeypatch):
    """A few groups opened, jobs marked, a cluster's rows noted stale: the rows with every group closed,
    edited there, equal the rows made one by one for every job (the path taken past ``EDITS``), and so
    do their counts."""
    from yanflow_tui.screens.models import queueview

    app = make_app(
        ClusterConfig("a", "fake-plain", refresh_seconds=3600),
        ClusterConfig("b", "fake-changes", refresh_seconds=3600),
        pinned_clock=True,
    )
    async with app.run_test(size=(160, 40)) as pilot:
        table = app.screen.query_one(JobTable)
        await wait_for(pilot, lambda: {"a/1", "b/1"} <= set(table.row_keys), what="rows")
        screen = app.screen
        view = screen.view
        rng = random.Random(4)
        next_id = 5000
        taken = []
        edit = view._edited_rows
        monkeypatch.setattr(view, "_edited_rows", lambda *a: taken.append(edit(*a)) or taken[-1])
        for turn in range(30):
            if turn % 3 == 0:
                for name in ("a", "b"):
                    app.hub.backend(name).step(random.Random(turn), turn, next_id)
                next_id += 3
                app.hub.backend("a").fail_reads = BackendError("down") if turn % 6 == 3 else None
                await refreshed(pilot, app)
                assert (app.hub.snapshots["a"].health is Health.STALE) is (turn % 6 == 3)
            groups = sorted(view.children)
            keys = sorted(view.entries or {})
            view.expanded = set(rng.sample(groups, rng.randint(0, min(4, len(groups)))))
            view.marked = set(rng.sample(keys, rng.randint(0, 6)))
            view._unfiltered = None
            edited, counts = content(screen._view_rows()), dict(view.state_counts)
            monkeypatch.setattr(queueview, "EDITS", -1)
            view._unfiltered = None
            assert content(screen._view_rows()) == edited, turn
            assert dict(view.state_counts) == counts, turn
            monkeypatch.setattr(queueview, "EDITS", 64)
        assert sum(result is not None for result in taken) >= 25  # (the rows edited, not made one by one)
