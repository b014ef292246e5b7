"""The Queue's model without a screen (``QueueView``, ``Warming``): the rows and counts for snapshots,
"mine", groups opened, marks and a filter; what the rows differ in from those given last; idle warming
driven by hand with a fake idle clock."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from yanflow_tui.filters import compile_filter
from yanflow_tui.hub import ClusterSnapshot, Health
from yanflow_tui.model import Job, JobState
from yanflow_tui.screens.models import queueview
from yanflow_tui.screens.models import warming as warming_module
from yanflow_tui.screens.models.queueview import IDLE_MARK, MARK, QueueView
from yanflow_tui.screens.models.warming import WARM_AFTER_KEY, Warming
from yanflow_tui.screens.render.rows import GROUP_CHILD, GROUP_CLOSED, GROUP_OPEN
from yanflow_tui.screens.widgets.tabledata import LATER, Row


def clock() -> float:
    return 0.0


def job(cluster: str, i: int, parent: str = "", state: JobState = JobState.RUNNING, user: str = "ann") -> Job:
    return Job(str(i), cluster, f"job-{i}", user, state, parent=parent)


def snap(name: str, jobs: list[Job], health: Health = Health.OK) -> ClusterSnapshot:
    return ClusterSnapshot(name, "fake", False, health=health, jobs=tuple(jobs))


def cluster_jobs(name: str) -> list[Job]:
    """Five jobs in no group, an array 10 with three tasks (one bob's), and a pending job."""
    jobs = [job(name, i) for i in range(1, 6)]
    jobs.append(job(name, 10, state=JobState.PENDING))
    jobs += [job(name, 10 + i, parent="10", user="bob" if i == 3 else "ann") for i in (1, 2, 3)]
    jobs.append(job(name, 20, state=JobState.PENDING))
    return jobs


def no_cursor(key: str) -> int:
    return -1


def shown(rows: list[Row]) -> list[tuple[str, str, str]]:
    """Each row's key, id cell (with its marker) and parent."""
    return [(row.key, str(row.cells[1]), row.parent) for row in rows]


def test_groups_show_closed_with_their_task_count_and_open_with_their_members_under_them():
    view = QueueView(no_cursor)
    snaps = {"a": snap("a", cluster_jobs("a"))}
    rows = view.visible_rows(snaps, {}, clock)
    assert [r.key for r in rows] == ["a/1", "a/2", "a/3", "a/4", "a/5", "a/10", "a/20"]
    assert shown(rows)[5] == ("a/10", GROUP_CLOSED + "10", "") and rows[5].cells[2] == "job-10 (3)"
    assert (view.shown, view.total) == (7, 10)
    assert view.state_counts == {JobState.RUNNING: 5, JobState.PENDING: 2}
    view.given(rows)
    view.expanded.add("a/10")
    rows = view.visible_rows(snaps, {}, clock)
    assert shown(rows)[5:9] == [
        ("a/10", GROUP_OPEN + "10", ""),
        ("a/11", GROUP_CHILD + "11", "a/10"),
        ("a/12", GROUP_CHILD + "12", "a/10"),
        ("a/13", GROUP_CHILD + "13", "a/10"),
    ]
    assert view.state_counts == {JobState.RUNNING: 8, JobState.PENDING: 2} and view.shown == 10


def test_mine_marks_notes_and_the_filter():
    view = QueueView(no_cursor)
    snaps = {"a": snap("a", cluster_jobs("a")), "b": snap("b", cluster_jobs("b"), Health.STALE)}
    rows = view.visible_rows(snaps, {"a": "bob"}, clock)  # on a, bob's jobs only: a task with no group
    assert [r.key for r in rows if r.key.startswith("a/")] == ["a/13"]
    assert all(r.style == "dim" for r in rows if r.key.startswith("b/"))  # b's data is old
    assert "stale" in str(next(r for r in rows if r.key == "b/1").cells[0])
    view.marked.update({"b/2", "gone/1"})
    rows = view.visible_rows(snaps, {}, clock)
    assert view.marked == {"b/2"}  # a mark of a job not listed goes
    assert str(next(r for r in rows if r.key == "b/2").cells[1]) == MARK + "2"
    view.job_filter = compile_filter("job-12")
    rows = view.visible_rows(snaps, {}, clock)
    assert [(r.key, r.parent) for r in rows] == [("a/10", ""), ("a/12", "a/10"), ("b/10", ""), ("b/12", "b/10")]
    assert str(rows[0].cells[1]) == GROUP_OPEN + "10"  # a group with a member matching shows open
    assert view.shown == 4 and view.total == 20


def test_jobs_holding_an_idle_gpu_carry_the_idle_mark_and_lose_it_when_no_longer_idle():
    view = QueueView(no_cursor)
    snaps = {"a": snap("a", cluster_jobs("a"))}
    view.given(view.visible_rows(snaps, {}, clock))
    view.idle = frozenset({"a/3", "a/12", "gone/1"})
    view.marked.add("a/3")
    rows = view.visible_rows(snaps, {}, clock)
    assert str(next(r for r in rows if r.key == "a/3").cells[1]) == MARK + IDLE_MARK + "3"
    assert all(IDLE_MARK not in str(r.cells[1]) for r in rows if r.key != "a/3")  # a/12 is in a closed group
    view.expanded.add("a/10")
    rows = view.visible_rows(snaps, {}, clock)
    assert str(next(r for r in rows if r.key == "a/12").cells[1]) == IDLE_MARK + GROUP_CHILD + "12"
    view.given(rows)
    view.idle, view.marked, view.expanded = frozenset(), set(), set()
    rows = view.visible_rows(snaps, {}, clock)
    assert all("▣" not in str(r.cells[1]) for r in rows)
    view.job_filter = compile_filter("job-3")
    view.idle = frozenset({"a/3"})
    assert [str(r.cells[1]) for r in view.visible_rows(snaps, {}, clock)] == [IDLE_MARK + "3"]


def test_a_refresh_tells_what_the_rows_differ_in_and_the_rest_are_the_very_rows_given():
    view = QueueView(no_cursor)
    jobs = [job("a", i) for i in range(1, 200)]
    snaps = {"a": snap("a", jobs)}
    before = view.visible_rows(snaps, {}, clock)
    assert view.changes is None  # the first rows: nothing to compare with
    view.given(before)
    jobs[7] = replace(jobs[7], state=JobState.COMPLETED)
    del jobs[50]
    jobs.append(job("a", 500, state=JobState.PENDING))
    snaps = {"a": snap("a", jobs)}
    rows = view.visible_rows(snaps, {}, clock)
    changes = view.changes
    assert changes is not None
    assert sorted(r.key for r in changes.put) == ["a/500", "a/8"] and list(changes.gone) == ["a/51"]
    old = {r.key: r for r in before}
    put = {r.key for r in changes.put}
    assert all(row is old[row.key] for row in rows if row.key not in put)
    assert view.state_counts == {JobState.RUNNING: 197, JobState.COMPLETED: 1, JobState.PENDING: 1}


def test_rows_edited_for_a_few_groups_and_marks_equal_the_rows_made_one_by_one(monkeypatch):
    """Past ``EDITS`` groups opened and jobs marked, the rows are made one by one: the edited rows (and
    their counts) must equal those, refresh after refresh."""
    rng = random.Random(3)
    jobs = {(c, i): job(c, i, parent=str(i - i % 10) if i % 10 and i < 60 else "") for c in "ab" for i in range(120)}
    view = QueueView(no_cursor)
    for turn in range(20):
        for key in rng.sample(sorted(jobs), 10):
            jobs[key] = replace(jobs[key], state=rng.choice(list(JobState)))
        health = Health.STALE if turn % 4 == 3 else Health.OK
        snaps = {
            c: snap(c, [j for (cc, _), j in jobs.items() if cc == c], health if c == "a" else Health.OK) for c in "ab"
        }
        view.visible_rows(snaps, {}, clock)
        groups, keys = sorted(view.children), sorted(view.entries or {})
        view.expanded = set(rng.sample(groups, rng.randint(0, 4)))
        view.marked = set(rng.sample(keys, rng.randint(0, 6)))
        view.idle = frozenset(rng.sample(keys, rng.randint(0, 3)))
        edited = view.visible_rows(snaps, {}, clock)
        view.given(edited)
        one_by_one = QueueView(no_cursor)
        one_by_one.expanded, one_by_one.marked = set(view.expanded), set(view.marked)
        one_by_one.idle = view.idle
        monkeypatch.setattr(queueview, "EDITS", -1)
        made = one_by_one.visible_rows(snaps, {}, clock)
        monkeypatch.setattr(queueview, "EDITS", 64)
        assert [(r.key, r.parent, r.style, r.cells[:3]) for r in edited] == [
            (r.key, r.parent, r.style, r.cells[:3]) for r in made
        ], turn
        assert view.state_counts == one_by_one.state_counts, turn


@pytest.mark.parametrize("text", ["job-1", "job-12", "-job-1", "state:pend", "zzz", "10"])
def test_the_filters_quick_view_equals_the_row_by_row_path(text):
    view = QueueView(no_cursor)
    view.visible_rows({"a": snap("a", cluster_jobs("a")), "b": snap("b", cluster_jobs("b"))}, {}, clock)
    view.job_filter = compile_filter(text)
    quick = view.filtered_view(clock)
    counts = (dict(view.state_counts), view.shown)
    general = view.filtered_rows(clock, {"no-such-cluster": "stale"})
    assert shown(quick) == shown(general)
    assert counts == (dict(view.state_counts), view.shown)


class Idle:
    """A fake idle clock and the calls the warming makes."""

    def __init__(self) -> None:
        self.since = 10.0
        self.settled = 0
        self.measured: list[list[Row]] = []

    def idle_for(self) -> float:
        return self.since

    def settle(self) -> None:
        self.settled += 1

    def measure(self, rows) -> None:
        self.measured.append(list(rows))


def grouped_view(members: int) -> QueueView:
    view = QueueView(no_cursor)
    jobs = [job("a", 1), job("a", 2)] + [job("a", 100 + i, parent="2") for i in range(members)]
    view.given(view.visible_rows({"a": snap("a", jobs)}, {}, clock))
    return view


def test_warming_makes_the_filters_texts_first_then_the_member_rows_and_waits_while_keys_come():
    view = grouped_view(1200)
    idle = Idle()
    warming = Warming(view, idle.measure, idle.idle_for, idle.settle)
    assert warming.begin() and not warming.begin()  # once per version of the entries
    idle.since = WARM_AFTER_KEY / 5  # a key just now: wait the rest of WARM_AFTER_KEY
    assert warming.turn(clock) == pytest.approx(WARM_AFTER_KEY * 4 / 5)
    assert warming.no_text is None and not idle.measured
    idle.since = 10.0
    turns = 0
    while not warming.texts_warmed:
        assert warming.turn(clock) == 0.0
        turns += 1
    assert all(entry.text is not None for entry in view.flat) and view.columns_ready
    assert idle.settled == 1 and not idle.measured and warming.no_row is None
    while (wait := warming.turn(clock)) is not None:
        assert wait == 0.0
    assert all(entry.view_row is not None for entry in view.flat) and idle.settled == 2
    measured = [row.key for rows in idle.measured for row in rows]
    assert sorted(measured) == sorted(["a/2"] + [f"a/{100 + i}" for i in range(1200)])  # the group and members
    assert not warming.stale


def texts_warmed(monkeypatch, members: int) -> tuple[QueueView, Idle, Warming]:
    """A group of ``members`` and warming past the filter's texts, members given ``LATER`` rows from 100 on."""
    monkeypatch.setattr(warming_module, "LATER_FROM", 100, raising=False)
    view = grouped_view(members)
    idle = Idle()
    warming = Warming(view, idle.measure, idle.idle_for, idle.settle)
    warming.begin()
    while not warming.texts_warmed:
        warming.turn(clock)
    return view, idle, warming


def test_warming_gives_many_members_rows_made_later_a_chunk_a_turn_and_a_filter_then_makes_none(monkeypatch):
    """From ``LATER_FROM`` members with no row on: they get rows with their cells ``LATER`` ahead, a chunk
    a turn, each given to the table to measure (in its own turns); the group's row is made whole. A
    first keystroke then finds every row it shows made (issue #32: those 51,000 members' rows were made
    by the keystroke typed soon after the first screen, 25-30 ms of it at 100,000 jobs)."""
    monkeypatch.setattr(warming_module, "LATER_CHUNK", 64, raising=False)
    view, idle, warming = texts_warmed(monkeypatch, 300)
    while (wait := warming.turn(clock)) is not None:
        assert wait == 0.0
    members = [entry for entry in view.flat if entry.key in view.parent_of]
    assert len(members) == 300 and all(entry.view_row.cells is LATER for entry in members)
    assert all(entry.view_row.parent == "a/2" and entry.view_row.sort == entry.sort for entry in members)
    group = view.entries["a/2"]
    assert group.view_row is not None and group.view_row.cells is not LATER
    later = [rows for rows in idle.measured if rows and rows[0].cells is LATER]
    assert [len(rows) for rows in later] == [64, 64, 64, 64, 44]  # a chunk at a time, each measured
    assert {row.key for rows in later for row in rows} == {entry.key for entry in members}

    made = []
    monkeypatch.setattr(type(group), "row", lambda *args, **kwargs: made.append(args) or LATER)
    view.job_filter = compile_filter("job-1")
    rows = view.filtered_view(clock)
    assert not made  # (every row shown was made ahead)
    assert [row.key for row in rows][:3] == ["a/1", "a/2", "a/100"] and rows[2] is view.entries["a/100"].view_row


def test_members_a_filter_showed_while_warming_keep_their_rows(monkeypatch):
    """A filter typed between the turn that lists the members with no row and the turns that give them
    ``LATER`` rows: the rows it made stay those members' rows (the table holds those very rows)."""
    view, idle, warming = texts_warmed(monkeypatch, 300)
    assert warming.turn(clock) == 0.0 and len(warming.no_later) == 300  # (listed: the rows in the next turns)
    view.job_filter = compile_filter("job-10")  # members 100-109
    shown = {row.key: row for row in view.filtered_view(clock) if row.parent}
    assert len(shown) == 10
    while warming.turn(clock) is not None:
        pass
    assert all(view.entries[key].view_row is row for key, row in shown.items())
    later = {row.key for rows in idle.measured for row in rows if row.cells is LATER}
    assert len(later) == 290 and not later & shown.keys()


def test_catch_up_makes_it_all_at_once_only_when_little_is_missing(monkeypatch):
    view = grouped_view(50)
    idle = Idle()
    warming = Warming(view, idle.measure, idle.idle_for, idle.settle)
    warming.begin()
    monkeypatch.setattr(warming_module, "CATCH_UP_MIN", 10)
    monkeypatch.setattr(warming_module, "CATCH_UP", 0)
    assert not warming.catch_up(clock) and warming.no_text is None  # 52 entries to make: left to idle turns
    monkeypatch.setattr(warming_module, "CATCH_UP_MIN", 200)
    assert warming.catch_up(clock)
    assert warming.texts_warmed and warming.no_row == [] and view.columns_ready and idle.settled == 1
    assert all(entry.view_row is not None for entry in view.flat)
