"""Pilot tests of the Queue screen over the in-memory fake backend: the field filter and its errors,
sorting (numbers as numbers, groups kept together), counts of what is shown, a cursor and scroll
that survive refreshes, stale rows marked, and ages drawn from the clock at paint time."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from fakes.backend import FIXED, LONG_NAMES, FakeActionsBackend, FakeBackend, FakeLongBackend
from textual.widgets import Input, Static
from uihelpers import FIXED_NOW, make_app, refreshed, screen_text
from waiting import wait_for

from yanflow_tui.config import ClusterConfig
from yanflow_tui.model import JobState
from yanflow_tui.screens.queue import JobTable


@pytest.fixture(autouse=True)
def fake_kinds(register_backend, home):
    for backend in (FakeBackend, FakeActionsBackend, FakeLongBackend):
        register_backend(backend)


def hpc(**kw) -> ClusterConfig:
    return ClusterConfig("hpc", "fake", refresh_seconds=kw.pop("refresh_seconds", 0.5), **kw)


def table(app) -> JobTable:
    return app.screen.query_one(JobTable)


def rows(app) -> list[str]:
    return table(app).row_keys


async def with_bulk_jobs(pilot, app, backend, count: int, wait: bool = True) -> None:
    """``count`` pending jobs ``bulk-0``.. added to ``backend`` and refreshed in; ``wait``: until the Queue
    shows them all (groups closed, so one more row each)."""
    shown = len(rows(app)) + count
    backend.jobs.extend(backend.job(str(1000 + i), f"bulk-{i}", JobState.PENDING) for i in range(count))
    await refreshed(pilot, app)
    if wait:
        await wait_for(pilot, lambda: len(rows(app)) == shown, what="bulk rows")


def add_array(backend, members: int, name=lambda i: f"bulk-m{i}") -> None:
    """A pending group ``900`` of ``members`` running jobs ``901``.. (named by ``name(i)``) in ``backend``."""
    backend.jobs.append(backend.job("900", "array", JobState.PENDING))
    backend.jobs.extend(
        replace(backend.job(str(900 + i), name(i), JobState.RUNNING), parent="900") for i in range(1, members + 1)
    )


async def a_closed_array(pilot, app) -> None:
    """An array of 200 members (``bulk-m``; the 150th's name 30 characters wider, far out of sight) added
    to the console's three jobs, its group shown closed."""
    await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
    add_array(FakeBackend.instances[-1], 200, lambda i: "bulk-m" + "w" * (i == 150) * 30)
    await refreshed(pilot, app)
    await wait_for(pilot, lambda: len(rows(app)) == 4, what="the group, closed")


def no_catch_up(monkeypatch) -> None:
    """Refreshes leave what the filter needs to idle warming, however few jobs they changed (the tests of
    warming itself; see ``Warming.catch_up``)."""
    from yanflow_tui.screens.models import warming

    monkeypatch.setattr(warming, "CATCH_UP_MIN", 0)
    monkeypatch.setattr(warming, "CATCH_UP", 0)


async def sort_by(pilot, app, column: str) -> None:
    for _ in range(len(table(app).columns)):
        if table(app).sort_column == column:
            return
        await pilot.press("o")
    raise AssertionError(f"o never reached {column}")


async def test_field_filter_shows_matching_rows_and_explains_mistakes(home):
    app = make_app(hpc())
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        await pilot.press("slash", *"state:pend")
        await wait_for(pilot, lambda: rows(app) == ["hpc/102"], what="filtered")
        box = app.screen.query_one("#filter", Input)
        box.value = "state:pend gpus:>x"  # a bad number: said under the box, the last good filter stays
        error = app.screen.query_one("#filter-error", Static)
        await wait_for(pilot, lambda: error.display, what="error shown")
        await wait_for(pilot, lambda: "gpus: '>x' is not a number" in screen_text(app), what="message")
        assert rows(app) == ["hpc/102"]
        box.cursor_position = len(box.value)
        await pilot.press("backspace", "4")  # "state:pend gpus:>4": valid again
        await wait_for(pilot, lambda: not error.display, what="error gone")
        assert rows(app) == ["hpc/102"]
        box.value = "-user:alice"
        await wait_for(pilot, lambda: rows(app) == [], what="nothing left")
        box.value = "gpus:>=4 -state:pending"
        await wait_for(pilot, lambda: rows(app) == ["hpc/101"], what="numbers and negation")
        await pilot.press("enter", "escape")
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="cleared")
        assert not box.display and not error.display


async def test_header_counts_the_rows_shown_by_state(home):
    app = make_app(hpc())
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        await wait_for(
            pilot, lambda: "shown 3 of 3: completed 1 · pending 1 · running 1" in screen_text(app), what="counts"
        )
        app.screen.query_one("#filter", Input).value = "state:r"
        await wait_for(pilot, lambda: "shown 1 of 3: running 1" in screen_text(app), what="filtered counts")
        assert "pending 1" not in screen_text(app)


async def test_sorting_by_gpus_and_age_is_numeric_not_textual(home):
    app = make_app(hpc())
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        backend = FakeBackend.instances[-1]
        backend.jobs.append(
            replace(backend.job("110", "big", JobState.RUNNING, gpus=10), submit_time=FIXED + timedelta(minutes=1))
        )  # 9 minutes old
        backend.jobs[0] = replace(backend.jobs[0], submit_time=FIXED - timedelta(hours=2))  # 101: 2 hours old
        await refreshed(pilot, app)
        await wait_for(pilot, lambda: len(rows(app)) == 4, what="new job")
        await sort_by(pilot, app, "gpus")
        assert rows(app) == ["hpc/103", "hpc/101", "hpc/102", "hpc/110"]  # -, 4, 8, 10 (text: 10 before 4)
        assert "GPUS ▲" in screen_text(app)
        await pilot.press("O")
        assert rows(app) == ["hpc/110", "hpc/102", "hpc/101", "hpc/103"]
        await sort_by(pilot, app, "age")
        # reversed still: oldest first; by time, not by the text "2h" < "9m" < "10m"
        assert rows(app)[0] == "hpc/101" and rows(app)[-1] == "hpc/110"
        await pilot.press("O")
        assert rows(app)[0] == "hpc/110" and rows(app)[-1] == "hpc/101"


async def test_a_header_click_sorts_the_queue(home):
    app = make_app(hpc())
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        jobs = table(app)
        header = jobs.render_line(0).text
        await pilot.click(jobs, offset=(header.index("STATE"), 0))
        assert jobs.sort_column == "state"
        assert rows(app) == ["hpc/103", "hpc/102", "hpc/101"]  # completed, pending, running


async def test_sorting_keeps_an_expanded_groups_members_under_it(home):
    app = make_app(ClusterConfig("det", "fake-actions", refresh_seconds=0.5))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: "det/104" in rows(app), what="rows")
        table(app).move_cursor_to_key("det/104")
        await pilot.press("e")
        await wait_for(pilot, lambda: "det/104_0" in rows(app), what="expanded")
        await sort_by(pilot, app, "name")
        await pilot.press("O")  # names z..a: sweep-* children would scatter if sorted on their own
        order = rows(app)
        at = order.index("det/104")
        assert order[at : at + 4] == ["det/104", "det/104_10", "det/104_1", "det/104_0"]
        assert order[0] == "det/101"  # train-resnet first, reversed
        await refreshed(pilot, app)  # refreshes keep the sort and the group together
        assert rows(app) == order


async def test_cursor_and_scroll_survive_refreshes_that_change_rows(home):
    app = make_app(hpc())
    async with app.run_test(size=(120, 20)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        backend = FakeBackend.instances[-1]
        await with_bulk_jobs(pilot, app, backend, 300)
        assert table(app).move_cursor_to_key("hpc/1150")
        top = await wait_for(pilot, lambda: (y := table(app).scroll_offset.y) > 100 and y, what="scrolled to 1150")
        for i in range(0, 300, 7):  # some rows change state, some go, one arrives at the end
            backend.jobs[3 + i] = replace(backend.jobs[3 + i], state=JobState.RUNNING)
        del backend.jobs[200]
        backend.jobs.append(backend.job("5000", "late", JobState.PENDING))
        await refreshed(pilot, app)
        await wait_for(pilot, lambda: "hpc/5000" in rows(app), what="changes")
        assert table(app).cursor_key == "hpc/1150" and app.screen.selected_job().id == "1150"
        assert table(app).scroll_offset.y == top
        assert table(app).cell_text("hpc/1007", "state") == "running"


async def test_an_unchanged_refresh_reuses_every_row(home):
    app = make_app(hpc())
    async with app.run_test(size=(120, 20)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        before = {key: table(app).get_row(key) for key in rows(app)}
        await refreshed(pilot, app)
        assert all(table(app).get_row(key) is row for key, row in before.items())


async def test_rows_of_a_stale_cluster_are_marked_and_dimmed(home):
    app = make_app(hpc(), ClusterConfig("k8s", "fake", refresh_seconds=0.5))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 6, what="rows")
        bad = next(b for b in FakeBackend.instances if b.name == "k8s")
        bad.fail_reads = ConnectionError("connection refused")
        await wait_for(pilot, lambda: app.hub.snapshots["k8s"].health.value == "stale", what="stale")
        await wait_for(pilot, lambda: table(app).cell_text("k8s/101", "cluster") == "k8s stale", what="marked")
        assert table(app).get_row("k8s/101").style == "dim"
        assert table(app).cell_text("hpc/101", "cluster") == "hpc" and not table(app).get_row("hpc/101").style
        bad.fail_reads = None
        await wait_for(pilot, lambda: table(app).cell_text("k8s/101", "cluster") == "k8s", what="fresh again")


async def test_ages_come_from_the_clock_when_drawn(home):
    app = make_app(hpc(refresh_seconds=3600), pinned_clock=True)
    async with app.run_test(size=(120, 20)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        assert table(app).cell_text("hpc/101", "age") == "10m"
        row = table(app).get_row("hpc/101")
        app.clock = lambda: FIXED_NOW + 3 * 3600  # type: ignore[method-assign]
        assert table(app).cell_text("hpc/101", "age") == "3h"  # no rebuild of the row
        app.screen.refresh_data()
        assert table(app).get_row("hpc/101") is row
        await wait_for(pilot, lambda: "3h" in screen_text(app), what="the new age drawn")


async def test_the_footer_follows_the_selected_job_but_is_redrawn_only_when_its_keys_change(home):
    def cancel_key(disabled: bool) -> bool:
        keys = [k for k in app.screen.query("FooterKey") if k.action == "cancel"]  # none mid-recompose
        return bool(keys) and keys[0].has_class("-disabled") == disabled

    app = make_app(hpc(refresh_seconds=3600))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        table(app).move_cursor_to_key("hpc/103")  # completed: nothing to cancel
        await wait_for(pilot, lambda: cancel_key(disabled=True), what="cancel disabled")
        table(app).move_cursor_to_key("hpc/101")
        await wait_for(pilot, lambda: cancel_key(disabled=False), what="cancel enabled")
        redraws = []
        app.screen.bindings_updated_signal.subscribe(app.screen, lambda screen: redraws.append(1))
        table(app).move_cursor_to_key("hpc/102")  # also running-or-pending: the same keys
        app.screen.refresh_data()
        await pilot.pause()  # the highlight and the redraw handled
        assert redraws == []
        table(app).move_cursor_to_key("hpc/103")  # other keys: the footer is redrawn (the spy sees it)
        await wait_for(pilot, lambda: redraws, what="a footer redraw for different keys")


async def test_at_80_columns_reason_nodes_and_age_give_way_before_name_drops_under_16(home):
    app = make_app(ClusterConfig("slurm-site-a", "fake-long", refresh_seconds=3600))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        text = await wait_for(pilot, lambda: LONG_NAMES[0][:16] in (t := screen_text(app)) and t, what="names drawn")
        for name in LONG_NAMES:  # at least 16 characters of every name on screen
            assert name[:16] in text
        assert "REASON" not in text and "QOSMax" not in text  # REASON gave way first
        assert table(app).hidden_columns[:1] == ("reason",)
        assert table(app).virtual_size.width <= 80  # nothing is left off to the right
    async with make_app(ClusterConfig("slurm-site-a", "fake-long", refresh_seconds=3600)).run_test(
        size=(200, 24)
    ) as pilot:
        app = pilot.app
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        await wait_for(pilot, lambda: "QOSMaxGRESPerUser" in screen_text(app), what="the reason drawn")
        assert table(app).hidden_columns == ()


async def test_opening_and_closing_a_group_patches_the_rows_as_a_full_rebuild_would_make_them(home):
    app = make_app(ClusterConfig("det", "fake-actions", refresh_seconds=3600))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: "det/104" in rows(app), what="rows")
        screen = app.screen

        def rebuilt() -> tuple[list[str], dict]:
            screen.view._unfiltered = None  # what the rows would be, made from every job
            return [r.key for r in screen._view_rows()], dict(screen.view.state_counts)

        for want_open in (True, False):
            table(app).move_cursor_to_key("det/104")
            await pilot.press("e")
            await wait_for(pilot, lambda want=want_open: ("det/104_0" in rows(app)) is want, what="toggled")
            patched, counts = rows(app), dict(screen.view.state_counts)
            assert (patched, counts) == rebuilt()


async def test_the_filters_quick_view_shows_what_the_general_path_would(home):
    """The filter with no marks or notes maps matches to rows by index (groups found by bisection);
    it must show what the general path, row by row, makes: groups with a matching member open,
    matching groups without one closed (open when expanded), counts alike."""
    from yanflow_tui.filters import compile_filter

    app = make_app(
        ClusterConfig("det", "fake-actions", refresh_seconds=3600),
        ClusterConfig("dev", "fake-actions", refresh_seconds=3600),
        hpc(refresh_seconds=3600),
    )
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: {"det/104", "dev/104", "hpc/101"} <= set(rows(app)), what="rows")
        view = app.screen.view
        texts = ["sweep", "sweep-1", "sweep-10", "104", "gpus:>2", "gpus:1", "-sweep", "state:run", "dev", "bobs"]
        texts += ["cluster:det sweep-0", "zzz", "det", "alice", "-gpus:1", "105"]
        for expanded in (set(), {"dev/104"}):
            view.expanded = expanded
            for text in texts:
                view.job_filter = compile_filter(text)
                quick = view.filtered_view(app.clock)
                view_counts, view_shown = dict(view.state_counts), view.shown
                general = view.filtered_rows(app.clock, {"no-such-cluster": "stale"})  # (the row by row path)
                assert [(r.key, r.cells[1], r.parent) for r in quick] == [
                    (r.key, r.cells[1], r.parent) for r in general
                ], (text, expanded)
                assert (view_counts, view_shown) == (dict(view.state_counts), view.shown), text


async def test_escape_gives_back_the_very_rows_widths_and_cursor_shown_before_the_filter(home):
    """The unfiltered rows are kept while a filter shows (the group opened there, another version of its
    row): escape shows them again, the same objects, measured widths and cursor."""
    app = make_app(ClusterConfig("det", "fake-actions", refresh_seconds=3600))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: "det/104" in rows(app), what="rows")
        backend = FakeActionsBackend.instances[-1]
        await with_bulk_jobs(pilot, app, backend, 1500)
        shown = len(rows(app))
        jobs = table(app)
        jobs.move_cursor_to_key("det/104")
        before = [jobs.get_row(key) for key in rows(app)]
        widths = list(jobs._content_widths)
        await pilot.press("slash", *"sweep")
        await wait_for(pilot, lambda: rows(app) == ["det/104", "det/104_0", "det/104_1", "det/104_10"], what="filtered")
        assert jobs.cursor_key == "det/104" and jobs.get_row("det/104") is not before[rows(app).index("det/104")]
        await pilot.press("escape")
        await wait_for(pilot, lambda: len(rows(app)) == shown, what="every row again")
        assert all(jobs.get_row(key) is row for key, row in zip(rows(app), before, strict=True))
        assert all(jobs._measured[row.key][0] is row for row in before)
        assert jobs._content_widths == widths
        assert jobs.cursor_key == "det/104"


async def test_a_refresh_while_filtered_updates_the_view_and_the_rows_escape_gives_back(home):
    app = make_app(hpc(refresh_seconds=3600))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        backend = FakeBackend.instances[-1]
        await with_bulk_jobs(pilot, app, backend, 1500)
        await pilot.press("slash", *"bulk-7")
        await wait_for(pilot, lambda: len(rows(app)) == 111, what="filtered")
        at = next(i for i, job in enumerate(backend.jobs) if job.id == "1070")
        backend.jobs[at] = replace(backend.jobs[at], state=JobState.RUNNING, name="bulk-7-wider-than-any-other-name")
        del backend.jobs[at + 1]  # 1071 ends
        await refreshed(pilot, app)
        await wait_for(pilot, lambda: len(rows(app)) == 110, what="the refresh in the filtered view")
        assert table(app).cell_text("hpc/1070", "state") == "running"
        assert "running 1" in screen_text(app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: len(rows(app)) == 1502, what="every row again")
        jobs = table(app)
        assert "hpc/1071" not in rows(app) and jobs.cell_text("hpc/1070", "state") == "running"
        assert jobs.cell_text("hpc/1070", "name") == "bulk-7-wider-than-any-other-name"
        assert jobs._content_widths[2] == len("bulk-7-wider-than-any-other-name")
        assert all(jobs._measured[key][0] is jobs.get_row(key) for key in rows(app))


async def test_a_backspace_gives_the_table_the_rows_it_showed_for_that_filter_before(home):
    app = make_app(hpc(refresh_seconds=3600))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        backend = FakeBackend.instances[-1]
        await with_bulk_jobs(pilot, app, backend, 1500)
        await pilot.press("slash", *"bulk-")
        await wait_for(pilot, lambda: len(rows(app)) == 1500, what="filtered")
        jobs = table(app)
        shown = [jobs.get_row(key) for key in rows(app)]
        await pilot.press("1")
        await wait_for(pilot, lambda: len(rows(app)) == 611, what="narrowed")  # bulk-1, 10-19, 100-199, 1000-1499
        came_back = []
        come_back = jobs._come_back
        jobs._come_back = lambda kept: came_back.append(len(kept.given)) or come_back(kept)  # type: ignore[method-assign]
        screen, matched = app.screen, []
        matching = screen.view.matching
        screen.view.matching = lambda: matched.append(1) or matching()  # type: ignore[method-assign]
        await pilot.press("backspace")
        await wait_for(pilot, lambda: len(rows(app)) == 1500, what="widened again")
        assert came_back == [1500] and not matched  # the view kept by the screen too: no job tested again
        assert all(jobs.get_row(key) is row for key, row in zip(rows(app), shown, strict=True))
        assert "shown 1500 of 1503: pending 1500" in screen_text(app)


async def test_after_a_refresh_idle_turns_make_the_filters_texts_before_member_rows(home, monkeypatch):
    """A first filter keystroke soon after a refresh needs every job's text (what a bare word
    searches) and the filter's columns, more than the rows of group members: idle turns make those
    first, then the rows, and hand each lot to the heap as long-lived (``gc.freeze``). The turns are
    driven here one at a time (their timer never fires alone). (A refresh that changed many jobs:
    one that changed few makes them itself, see the next test.)"""
    from yanflow_tui.screens import queue

    app = make_app(hpc(refresh_seconds=3600))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        backend = FakeBackend.instances[-1]
        monkeypatch.setattr(queue, "WARM_SECONDS", 3600)
        no_catch_up(monkeypatch)
        await with_bulk_jobs(pilot, app, backend, 1500)
        screen = app.screen
        assert screen.warming.no_row is None and not screen.warming.texts_warmed and not screen.warming.stale
        assert any(entry.text is None for entry in screen.view.flat)
        freezes = app.heap.freezes  # (the turns run here back to back: no tick of the app's between them)
        while not screen.warming.texts_warmed:
            screen._warm_members()
            assert screen.warming.no_row is None  # no row made ahead yet
        assert all(entry.text is not None for entry in screen.view.flat)
        assert screen.view.columns_ready
        assert app.heap.freezes == freezes + 1  # what was made lives on: no full GC pass walks it in a key
        while screen.warming.no_row is None or screen.warming.no_row:  # then the rows
            screen._warm_members()
        assert all(entry.view_row is not None for entry in screen.view.flat)
        assert app.heap.freezes == freezes + 2
        await pilot.press("slash", *"bulk-14")
        await wait_for(pilot, lambda: len(rows(app)) == 111, what="bulk-14, 140-149, 1400-1499")


async def test_a_refresh_that_changed_few_jobs_makes_what_the_filter_needs_with_it(home, monkeypatch):
    """``/`` and a letter typed right after a refresh leave no idle turn between them: a refresh that
    changed few jobs makes their texts, the filter's columns and the members' rows itself (so the
    first keystroke makes none); one that changed many leaves them to idle turns."""
    from yanflow_tui.screens import queue
    from yanflow_tui.screens.models import warming
    from yanflow_tui.screens.models.queueview import QueueView

    app = make_app(hpc(refresh_seconds=3600))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        backend = FakeBackend.instances[-1]
        monkeypatch.setattr(queue, "WARM_SECONDS", 3600)  # no idle turn runs in this test
        monkeypatch.setattr(warming, "CATCH_UP_MIN", 200)
        screen = app.screen
        backend.jobs.append(backend.job("1000", "array", JobState.PENDING))
        backend.jobs.extend(
            replace(backend.job(str(1000 + i), f"bulk-{i}", JobState.PENDING), parent="1000") for i in range(1, 61)
        )
        await refreshed(pilot, app)
        await wait_for(pilot, lambda: len(rows(app)) == 4, what="the group of 60")
        assert screen.warming.no_row == [] and screen.warming.texts_warmed and screen.view.columns_ready
        assert all(entry.text is not None and entry.view_row is not None for entry in screen.view.flat)
        member = next(entry for entry in screen.view.flat if entry.key in screen.view.parent_of)
        assert table(app)._measured[member.key][0] is member.view_row  # measured ahead too
        made = []
        monkeypatch.setattr(
            screen.view, "view_row", lambda *args: made.append(args) or QueueView.view_row(screen.view, *args)
        )
        await pilot.press("slash", *"bulk-1")
        await wait_for(pilot, lambda: len(rows(app)) == 12, what="bulk-1 and bulk-10..19 under their group")
        assert not made  # every row the filter shows was made with the refresh
        await pilot.press("escape")
        await wait_for(pilot, lambda: len(rows(app)) == 4, what="the filter cleared")
        backend.jobs.extend(backend.job(str(2000 + i), f"more-{i}", JobState.PENDING) for i in range(250))
        await refreshed(pilot, app)  # 250 jobs new: their texts, over 200, are left to idle turns
        await wait_for(pilot, lambda: len(rows(app)) == 254, what="the jobs added")
        assert screen.warming.no_row is None and not screen.warming.texts_warmed and not screen.warming.stale


async def test_refreshes_while_warming_keep_one_idle_turn_due(home, monkeypatch):
    """Each refresh that changes the jobs starts the idle warming again, but never a second series of
    turns beside one still due: a key waits for one turn at most, not for one per refresh."""
    from yanflow_tui.screens import queue

    app = make_app(hpc(refresh_seconds=3600))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        backend = FakeBackend.instances[-1]
        monkeypatch.setattr(queue, "WARM_SECONDS", 3600)  # a turn due stays due
        no_catch_up(monkeypatch)
        screen = app.screen
        due, set_timer = [], screen.set_timer

        def counting(delay, callback=None, **kw):
            if callback == screen._warm_members:
                due.append(delay)
            return set_timer(delay, callback, **kw)

        monkeypatch.setattr(screen, "set_timer", counting)
        versions = set()
        for turn in range(3):  # jobs added, refreshed in
            shown = len(rows(app)) + 10
            backend.jobs.extend(backend.job(str(2000 + 10 * turn + i), "more", JobState.PENDING) for i in range(10))
            await refreshed(pilot, app)
            await wait_for(pilot, lambda shown=shown: len(rows(app)) == shown, what="the jobs added")
            versions.add(screen.view.version)
        assert len(versions) == 3 and not screen.warming.stale
        assert due == [3600]


async def test_the_filters_text_is_made_ahead_and_a_refresh_remakes_only_the_changed_jobs(home):
    """Idle turns make what a bare word searches (each entry's text, then the filter's columns) before
    any key; a refresh makes it again for the jobs that changed only, and the filter finds the new text."""
    app = make_app(hpc(refresh_seconds=3600))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        backend = FakeBackend.instances[-1]
        await with_bulk_jobs(pilot, app, backend, 1500, wait=False)
        screen = app.screen
        warmed = lambda: screen.view.columns_ready  # noqa: E731
        await wait_for(pilot, warmed, what="the filter's columns made ahead")
        assert all(entry.text is not None for entry in screen.view.flat)
        kept = {entry.key: entry.text for entry in screen.view.flat}
        at = next(i for i, job in enumerate(backend.jobs) if job.id == "1070")
        backend.jobs[at] = replace(backend.jobs[at], name="Renamed-Zebra")
        await refreshed(pilot, app)
        await wait_for(pilot, warmed, what="made again after the refresh")
        texts = {entry.key: entry.text for entry in screen.view.flat}
        assert [key for key in texts if texts[key] is not kept[key]] == ["hpc/1070"]
        assert "renamed-zebra" in texts["hpc/1070"]
        await pilot.press("slash", *"zebra")
        await wait_for(pilot, lambda: rows(app) == ["hpc/1070"], what="the new name found")
        await pilot.press(*["backspace"] * 5, *"bulk-70")
        want = [f"hpc/{1700 + i}" for i in range(10)]  # bulk-700..709: bulk-70 itself renamed
        await wait_for(pilot, lambda: rows(app) == want, what="bulk-70")


def shown_keys(app) -> list[str]:
    """The keys the footer shows, in order."""
    return [key.key for key in app.screen.query("FooterKey") if key.display]


async def test_the_filter_box_neither_hides_the_footer_keys_nor_lets_them_act_while_typing(home):
    """While the filter has the focus the footer stays as it was (hiding the keys the box takes as text
    laid the whole screen out again on / and on escape); those keys are still text there."""
    app = make_app(hpc(refresh_seconds=3600))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        keys = await wait_for(pilot, lambda: (k := shown_keys(app)) and "q" in k and k, what="the footer")
        footer = app.screen.query_one("Footer")
        recomposed = footer.recomposed
        await pilot.press("slash")
        box = app.screen.query_one("#filter", Input)
        await wait_for(pilot, lambda: app.focused is box, what="the box focused")
        await pilot.press(*"q1u")
        await wait_for(pilot, lambda: box.value == "q1u", what="the keys typed as text")
        assert app.is_running and app.current_mode == "queue" and not app.all_users
        assert shown_keys(app) == keys
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.focused is table(app) and len(rows(app)) == 3, what="the filter cleared")
        await pilot.press("u")  # a key of the Queue again
        await wait_for(pilot, lambda: app.all_users, what="u acting on the Queue")
        assert shown_keys(app) == keys and footer.recomposed == recomposed


async def test_the_box_text_is_applied_as_it_changes_and_focus_moves_at_once(home):
    """A keystroke's rows are set in the box's own turn (drawn in the frame that draws the character,
    not a frame later), and / and escape move the focus at once."""
    app = make_app(hpc(refresh_seconds=3600))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        screen, box = app.screen, app.screen.query_one("#filter", Input)
        screen.action_filter()
        assert app.focused is box and box.display
        box.value = "id:102"
        assert rows(app) == ["hpc/102"] and screen.filter_text == "id:102"
        screen.action_clear_filter()
        assert app.focused is table(app) and not box.display and len(rows(app)) == 3
        await pilot.pause()
        assert app.focused is table(app) and len(rows(app)) == 3


async def test_idle_warming_waits_while_keys_come(home, monkeypatch):
    """A turn of idle warming due within ``WARM_AFTER_KEY`` of a key waits (it landed between the turns
    of the key's handling, / right after a refresh), then goes on."""
    from yanflow_tui.screens.queue import QueueScreen

    turns = []
    warm = QueueScreen._warm_members

    def counted(screen):
        turns.append(screen.warming.no_text)  # (set by a turn that makes something: None until then)
        warm(screen)

    monkeypatch.setattr(QueueScreen, "_warm_members", counted)
    no_catch_up(monkeypatch)
    app = make_app(hpc(refresh_seconds=3600))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        quiet = [0.0]
        monkeypatch.setattr(app, "idle_for", lambda: quiet[0])  # a key now, and the clock stands still: warming waits
        await with_bulk_jobs(pilot, app, FakeBackend.instances[-1], 1500)
        screen = app.screen
        warmed = lambda: screen.view.columns_ready  # noqa: E731
        began = lambda: screen.warming.no_text is not None  # noqa: E731  a turn made something (the warming's private state)
        await wait_for(pilot, lambda: len(turns) >= 3 or began() or warmed(), what="turns due")
        assert not began() and not warmed()
        quiet[0] += 1.0
        await wait_for(pilot, warmed, what="warming done once no key came")


async def test_a_filter_matching_most_jobs_tells_the_table_what_differs_from_the_rows_on_show(home):
    """The first keystroke of a filter over every group closed (1,500 jobs, a group of 60): the Queue
    says what differs (the group opened with its matching members, the jobs not matching gone), so the
    table compares no row and keeps the rows on show; every such change is checked against a full
    compare here (``check_changes``); escape comes back to the rows kept."""
    app = make_app(hpc(refresh_seconds=3600))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        backend = FakeBackend.instances[-1]
        add_array(backend, 60)
        await with_bulk_jobs(pilot, app, backend, 1500, wait=False)
        await wait_for(pilot, lambda: len(rows(app)) == 1504, what="1,500 jobs and a closed group")
        jobs = table(app)
        shown = [jobs.get_row(key) for key in rows(app)]
        compared = []
        splice = jobs._splice
        jobs._splice = lambda rows, old: compared.append(1) or splice(rows, old)  # type: ignore[method-assign]
        await pilot.press("slash", "b")  # every bulk job and member, and the group they are in
        await wait_for(pilot, lambda: len(rows(app)) == 1562, what="the filter")  # (and hpc/102)
        assert not compared and [kept.given for kept in jobs._kept] == [shown]
        assert jobs.cell_text("hpc/900", "id").startswith("▾") and "shown 1562 of 1564" in screen_text(app)
        assert "running 60" in screen_text(app) and "pending 1502" in screen_text(app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: len(rows(app)) == 1504, what="every row again")
        assert all(jobs.get_row(key) is row for key, row in zip(rows(app), shown, strict=True))


POD = "ml-research/train-ddp-7f9c8d/train-ddp-7f9c8d-worker"  # a pod row's id: namespace/job/pod


class FakePodsBackend(FakeBackend):
    """The fake as a Kubernetes cluster looks: long pod ids (namespace/pod), long names, node lists."""

    kind = "fake-pods"

    def __init__(self, config):
        super().__init__(config)
        self.jobs = [
            self.job(f"{POD}-0", "llama-finetune-2x8", JobState.RUNNING, gpus=8, nodes=("gpu-node-a",)),
            self.job(f"{POD}-1", "llama-finetune-2x8", JobState.PENDING, gpus=8, reason="Unschedulable"),
        ]


async def test_at_80x24_a_long_pod_id_gives_way_and_state_stays_readable(register_backend):
    """A Kubernetes pod id is cut with an ellipsis rather than pushing STATE (and what follows) off screen."""
    register_backend(FakePodsBackend)
    app = make_app(ClusterConfig("k8s-prod", "fake-pods", refresh_seconds=3600), pinned_clock=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 2, what="rows")
        await pilot.pause()
        lines = screen_text(app).splitlines()
        header = next(line for line in lines if "CLUSTER" in line)
        assert "STATE" in header and "GPUS" in header
        running = next(line for line in lines if "running" in line and "research" in line)
        pending = next(line for line in lines if "pending" in line and "research" in line)
        for line in (running, pending):
            assert "ml-research/…" in line  # the id cut, and said so
            assert len(line.rstrip()) <= 80
        assert running.split()[-4:] == ["running", "8", "gpu-n…", "10m"]  # STATE whole, and what follows


async def test_members_idle_warming_gives_later_rows_are_measured_before_a_filter_shows_them(home, monkeypatch):
    """Many members never shown get rows with their cells LATER from idle warming, which the table
    measures in its own idle turns: a filter typed after that shows those very rows, with the widths of
    all of them (the widest name far out of sight) in the key's own frame, and leaves nothing to
    measure after it (issue #32)."""
    from yanflow_tui.screens.models import warming
    from yanflow_tui.screens.widgets.tabledata import LATER

    monkeypatch.setattr(warming, "LATER_FROM", 50, raising=False)
    no_catch_up(monkeypatch)
    app = make_app(hpc(refresh_seconds=3600))
    async with app.run_test(size=(160, 30)) as pilot:
        await a_closed_array(pilot, app)
        jobs, screen = table(app), app.screen
        await wait_for(
            pilot, lambda: screen.warming.no_row == [] and not jobs._later, what="warmed, and measured", timeout=10
        )
        assert jobs._content_widths[2] < len("bulk-m" + "w" * 30)  # (the group closed: its members not shown)
        members = [entry.view_row for entry in screen.view.flat if entry.key in screen.view.parent_of]
        assert len(members) == 200 and all(row.cells is LATER for row in members)
        await pilot.press("slash", *"bulk")
        await wait_for(pilot, lambda: len(rows(app)) == 201, what="the filter", timeout=5)
        assert [row for row in jobs._given if row.cells is LATER] == members  # the very rows warming gave
        assert not jobs._later  # measured ahead: nothing left to measure after the key
        assert jobs._content_widths[2] == len("bulk-m" + "w" * 30)
        assert "shown 201 of 204" in screen_text(app)


@pytest.mark.parametrize("later_from", [1, 10**9])
async def test_a_filter_over_members_never_shown_draws_what_rows_made_at_once_would(home, monkeypatch, later_from):
    """A first keystroke over members never shown (no idle turn ran) gives them to the table with their
    cells LATER once there are ``LATER_FROM`` of them (made as drawn or measured, issue #32): the
    lines, widths and counts are those of the rows made at once; a member marked with space and unmarked
    is made anew alone, and the lines are as before."""
    from yanflow_tui.screens import queue
    from yanflow_tui.screens.models import queueview
    from yanflow_tui.screens.widgets.tabledata import LATER

    monkeypatch.setattr(queue, "WARM_SECONDS", 3600)  # no idle turn: the filter makes the members' rows
    monkeypatch.setattr(queueview, "LATER_FROM", later_from)
    no_catch_up(monkeypatch)
    app = make_app(hpc(refresh_seconds=3600))
    async with app.run_test(size=(160, 30)) as pilot:
        await a_closed_array(pilot, app)
        jobs = table(app)
        await pilot.press("slash", *"bulk")
        await wait_for(pilot, lambda: len(rows(app)) == 201, what="the filter", timeout=5)
        given_later = sum(row.cells is LATER for row in jobs._given)
        assert given_later == (200 if later_from == 1 else 0)
        await wait_for(pilot, lambda: not jobs._later, what="every member measured")
        await pilot.pause()
        assert jobs._content_widths[2] == len("bulk-m" + "w" * 30)  # the widest name, far out of sight
        assert "shown 201 of 204" in screen_text(app) and "running 200" in screen_text(app)
        assert jobs.cell_text("hpc/905", "id").endswith("905") and jobs.cell_text("hpc/905", "name") == "bulk-m"
        await pilot.press("enter", "down")
        await pilot.pause()
        top = [jobs.render_line(y).text for y in range(jobs.size.height)]
        await pilot.press("space")  # the first member marked
        await wait_for(pilot, lambda: jobs.cell_text("hpc/901", "id").startswith("●"), what="the mark")
        assert jobs.get_row("hpc/902").cells is not LATER  # (get_row: as drawn)
        assert sum(row.cells is LATER for row in jobs._given) == max(
            0, given_later - 1
        )  # only the marked one made anew
        await pilot.press("up", "space", "up")
        await wait_for(pilot, lambda: not jobs.cell_text("hpc/901", "id").startswith("●"), what="unmarked")
        await pilot.pause()
        assert [jobs.render_line(y).text for y in range(jobs.size.height)] == top
