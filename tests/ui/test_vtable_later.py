"""Pilot tests of rows given to the virtualised table with their cells ``LATER``: made (``make_row``) only
as they are drawn or measured, those in sight measured before the first frame, the rest in turns after
it, and then the same widths, lines, sorts and kept sets as rows given made (issue #32)."""

from __future__ import annotations

import pytest
from rich.text import Text
from textual.app import App, ComposeResult
from waiting import wait_for

from yanflow_tui.screens.widgets import table as table_module
from yanflow_tui.screens.widgets.table import KEEP_ROWS, LATER, Column, Row, VirtualTable

COLUMNS = [Column("id", "ID"), Column("name", "NAME"), Column("gpus", "GPUS", justify="right")]
WIDE = 250  # the row with the widest name, far out of sight


def made(i: int, tag: str = "") -> Row:
    """The row ``r{i}`` as made: the widest name at ``WIDE``."""
    name = ("x" * 40 if i == WIDE else f"job-{i}") + tag
    return Row(f"r{i}", (f"r{i}", Text(name), str(i % 7)), sort=(i, name, i % 7))


def later(i: int) -> Row:
    return Row(f"r{i}", LATER, sort=(i, "", i % 7))


class Host(App):
    def __init__(self, rows: list[Row]) -> None:
        super().__init__()
        self.initial = rows
        self.made: list[str] = []  # the keys make_row was asked for
        self.tag = ""

    def compose(self) -> ComposeResult:
        yield VirtualTable(COLUMNS, id="t")

    def on_mount(self) -> None:
        table = self.query_one(VirtualTable)
        table.make_row = self.make_row
        table.set_rows(self.initial)
        table.focus()

    def make_row(self, row: Row) -> Row:
        self.made.append(row.key)
        return made(int(row.key[1:]), self.tag)


def widths(table: VirtualTable) -> list[int]:
    return list(table._widths)


def drawn(table: VirtualTable) -> list[str]:
    return [table.render_line(y).text.rstrip() for y in range(table.scrollable_content_region.height)]


async def alike(rows: list[Row], size=(70, 12)) -> tuple[list[int], list[str]]:
    """The widths and lines of a table given ``rows`` made."""
    app = Host(rows)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        table = app.query_one(VirtualTable)
        return widths(table), drawn(table)


async def test_rows_given_later_are_made_in_sight_first_then_measured_in_turns_to_the_same_widths():
    """Only the rows in sight are made before the first frame; the rest are made and measured after
    it, and then the columns are as wide as for the rows given made (the widest name far below)."""
    count = 400
    app = Host([later(i) for i in range(count)])
    async with app.run_test(size=(70, 12)) as pilot:
        table = app.query_one(VirtualTable)
        first = drawn(table)
        assert len(set(app.made)) <= table.scrollable_content_region.height  # (none out of sight)
        assert "job-0" in first[1] and "job-3" in first[4]
        await wait_for(pilot, lambda: not table._later and len(set(app.made)) == count, what="every row measured")
        await pilot.pause()
        assert table._content_widths[1] == 40
        want_widths, want_lines = await alike([made(i) for i in range(count)])
        assert widths(table) == want_widths and drawn(table) == want_lines
        table.move_cursor_to_key(f"r{WIDE}")
        await pilot.pause()
        assert any("x" * 40 in line for line in drawn(table))


async def test_rows_in_sight_fit_as_first_drawn_and_scrolling_onto_rows_not_measured_measures_them(monkeypatch):
    monkeypatch.setattr(table_module, "LATER_SECONDS", 3600)  # no turn runs: only what is drawn is measured
    app = Host([later(i) for i in range(400)])
    async with app.run_test(size=(70, 12)) as pilot:
        table = app.query_one(VirtualTable)
        await pilot.pause()
        assert table._content_widths[1] == len("job-10")  # the widest in sight (rows 0-10)
        app.tag = "-v2"
        table.set_rows([later(i) for i in range(400)])  # another version of each
        assert table._content_widths[1] == len("job-10-v2")  # measured with the set, before its frame
        table.move_cursor_to_key(f"r{WIDE}")
        await pilot.pause()
        await pilot.pause()
        assert table._content_widths[1] == 43
        assert any(
            ("x" * 40 + "-v2") in line for line in drawn(table)
        )  # not cut: the column widened as it came in sight
        assert len(set(app.made)) < 40


async def test_sorting_rows_given_later_uses_their_sort_values_or_the_made_cells():
    app = Host([later(i) for i in range(30)])
    async with app.run_test(size=(70, 12)) as pilot:
        table = app.query_one(VirtualTable)
        table.sort_by("gpus", reverse=True)
        assert [int(k[1:]) % 7 for k in table.row_keys[:5]] == [6, 6, 6, 6, 5]
        table.set_rows([Row(f"r{i}", LATER) for i in range(30)])  # no sort values: the made cells' text
        table.sort_by("gpus")
        assert table.row_keys[:6] == ["r0", "r7", "r14", "r21", "r28", "r1"]
        await pilot.pause()


async def test_a_row_given_later_again_is_made_again_and_drawn_as_made_now():
    app = Host([later(i) for i in range(20)])
    async with app.run_test(size=(70, 12)) as pilot:
        table = app.query_one(VirtualTable)
        await pilot.pause()
        assert "job-2 " in drawn(table)[3] + " "
        app.tag = "-v2"
        table.set_rows([later(i) for i in range(20)])  # new rows, cells LATER again: another version
        await pilot.pause()
        assert "job-2-v2" in drawn(table)[3] and table.get_row("r2") == made(2, "-v2")
        assert table.cell_text("r3", "name") == "job-3-v2" and "job-4-v2" in (table.row_text("r4") or "")
        table.set_rows([made(i, "-v3") for i in range(20)])  # made rows in their place
        await pilot.pause()
        assert "job-2-v3" in drawn(table)[3]


@pytest.mark.parametrize("escape_first", [False, True])
async def test_kept_sets_come_back_with_the_widths_of_their_rows_measured_after_they_were_kept(escape_first):
    """Every row made (the unfiltered set, kept), then a set given LATER (a filter), then the first set
    again (escape, before or after the LATER rows were measured), then the LATER set again (kept in
    turn): each shows the widths it has when made."""
    everything = [made(i + 1000) for i in range(KEEP_ROWS + 100)]
    filtered = [later(i) for i in range(KEEP_ROWS + 10)]
    app = Host(everything)
    async with app.run_test(size=(70, 12)) as pilot:
        table = app.query_one(VirtualTable)
        await pilot.pause()
        full_widths = list(table._content_widths)
        table.set_rows(filtered)
        if not escape_first:
            await wait_for(pilot, lambda: not table._later, what="the LATER rows measured")
            assert table._content_widths[1] == 40
        table.set_rows(everything)  # the first set comes back (kept)
        assert table._content_widths == full_widths
        await wait_for(pilot, lambda: not table._later, what="the LATER rows measured")
        assert table._content_widths == full_widths  # (measured while not on show: no change here)
        assert all(kept.counts is not None for kept in table._kept)  # (no recount when it comes back)
        come_back = table._come_back
        recounts = []
        table._update_content_widths = lambda *a, **k: recounts.append(1)  # type: ignore[method-assign]
        table.set_rows(filtered)  # kept in turn: with the widths of the rows measured since, counted in
        del table._update_content_widths
        assert not recounts and table._content_widths[1] == 40 and come_back is not None
        await pilot.pause()


async def test_a_turn_measures_chunks_only_while_its_budget_lasts(monkeypatch):
    """The rows given LATER are made and measured in turns after the frame: a turn whose budget is
    spent after its first chunk leaves the rest to the next turns (a key waits for one turn at most)."""
    monkeypatch.setattr(table_module, "LATER_BUDGET", 0.0)
    monkeypatch.setattr(table_module, "LATER_CHUNK", 10)
    monkeypatch.setattr(table_module, "LATER_SECONDS", 3600)  # turns run only when called here
    app = Host([later(i) for i in range(100)])
    async with app.run_test(size=(70, 12)) as pilot:
        table = app.query_one(VirtualTable)
        await pilot.pause()
        waiting = len(table._later)
        assert waiting == 100
        table._measure_some_later()
        assert len(table._later) == waiting - 10
        while table._later:
            table._measure_some_later()
        assert table._content_widths[1] == len("job-99") and not table._later_due
