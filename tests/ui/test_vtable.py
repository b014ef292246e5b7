"""Pilot tests of the virtualised table on a small host app: keyed cursor, kept scroll, sorting with
groups, lazy drawing, widths, messages, and a cursor that shows in every theme and with NO_COLOR."""

from __future__ import annotations

from collections import Counter

import pytest
from rich.text import Text
from textual.app import App, ComposeResult
from waiting import wait_for

from yanflow_tui.screens.widgets.table import KEEP_ROWS, Column, Row, VirtualTable, _by_column, sort_value

COLUMNS = [Column("id", "ID"), Column("name", "NAME", flex=True), Column("gpus", "GPUS", justify="right")]


def row(i: int, name: str | None = None, gpus: int | None = None, parent: str = "", style: str = "") -> Row:
    return Row(
        f"r{i}",
        (Text(f"r{i}"), Text(name if name is not None else f"job-{i}"), Text(str(gpus if gpus is not None else i % 7))),
        parent=parent,
        style=style,
    )


class Host(App):
    def __init__(self, rows: list[Row], columns=COLUMNS) -> None:
        super().__init__()
        self.initial, self.columns = rows, columns
        self.messages: list[tuple[str, object]] = []

    def compose(self) -> ComposeResult:
        yield VirtualTable(self.columns, id="t")

    def on_mount(self) -> None:
        table = self.query_one(VirtualTable)
        table.set_rows(self.initial)
        table.focus()

    def on_virtual_table_row_highlighted(self, message: VirtualTable.RowHighlighted) -> None:
        self.messages.append(("highlighted", message.key))

    def on_virtual_table_row_selected(self, message: VirtualTable.RowSelected) -> None:
        self.messages.append(("selected", message.key))

    def on_virtual_table_header_selected(self, message: VirtualTable.HeaderSelected) -> None:
        self.messages.append(("header", message.column))


def lines(table: VirtualTable) -> list[str]:
    """What the table draws now, line by line, as text."""
    return [table.render_line(y).text.rstrip() for y in range(table.scrollable_content_region.height)]


async def test_cursor_keeps_its_key_when_rows_come_and_go_around_it():
    app = Host([row(i) for i in range(20)])
    async with app.run_test(size=(60, 12)) as pilot:
        table = app.query_one(VirtualTable)
        assert table.move_cursor_to_key("r5")
        assert table.cursor_row == 5
        table.set_rows([row(100), row(101)] + [row(i) for i in range(20) if i != 2])
        assert table.cursor_key == "r5" and table.cursor_row == 6
        assert table.row_keys[:3] == ["r100", "r101", "r0"]
        # the cursor's own row goes: the cursor takes the row now in its place
        table.set_rows([row(100), row(101)] + [row(i) for i in range(20) if i not in (2, 5)])
        assert table.cursor_key == "r6"
        await pilot.pause()
        assert ("highlighted", "r6") in app.messages
        assert not table.move_cursor_to_key("nope")
        table.set_rows([])
        assert table.row_count == 0 and table.cursor_key is None


async def test_scroll_offset_survives_set_rows():
    app = Host([row(i) for i in range(500)])
    async with app.run_test(size=(60, 12)) as pilot:
        table = app.query_one(VirtualTable)
        table.move_cursor_to_key("r250")
        await pilot.pause()
        top = table.scroll_offset.y
        assert top > 200
        rows = [row(i, name=f"renamed-{i}" if i % 3 == 0 else None) for i in range(500)]
        table.set_rows(rows + [row(900)])
        await pilot.pause()
        assert table.scroll_offset.y == top and table.cursor_key == "r250"
        assert f"renamed-{top + (3 - top % 3) % 3}" in "\n".join(lines(table))


async def test_keys_move_the_cursor_and_enter_selects():
    app = Host([row(i) for i in range(100)])
    async with app.run_test(size=(60, 12)) as pilot:
        table = app.query_one(VirtualTable)
        page = table.scrollable_content_region.height - 1
        await pilot.press("down", "down")
        assert table.cursor_key == "r2"
        await pilot.press("pagedown")
        assert table.cursor_row == 2 + page
        await pilot.press("pageup", "up")
        assert table.cursor_row == 1
        await pilot.press("G")
        assert table.cursor_key == "r99"
        assert table.scroll_offset.y == table.max_scroll_y
        await pilot.press("g")
        assert table.cursor_key == "r0" and table.scroll_offset.y == 0
        await pilot.press("end")
        await pilot.press("home")
        await pilot.press("up")  # stays at the top
        assert table.cursor_row == 0
        await pilot.press("enter")
        await wait_for(pilot, lambda: ("selected", "r0") in app.messages, what="selected")


async def test_click_selects_a_row_and_a_second_click_opens_it():
    app = Host([row(i) for i in range(10)])
    async with app.run_test(size=(60, 12)) as pilot:
        table = app.query_one(VirtualTable)
        await pilot.click(table, offset=(2, 4))  # line 4 = the fourth row under the header
        assert table.cursor_key == "r3"
        assert ("selected", "r3") not in app.messages
        await pilot.click(table, offset=(2, 4))
        await wait_for(pilot, lambda: ("selected", "r3") in app.messages, what="selected")


async def test_header_click_sorts_and_a_second_click_reverses_numbers_as_numbers():
    app = Host([row(1, gpus=10), row(2, gpus=9), row(3, gpus=100)])
    async with app.run_test(size=(60, 12)) as pilot:
        table = app.query_one(VirtualTable)
        gpus_x = lines(table)[0].index("GPUS")
        await pilot.click(table, offset=(gpus_x, 0))
        assert table.sort_column == "gpus" and not table.sort_reverse
        assert table.row_keys == ["r2", "r1", "r3"]  # 9 < 10 < 100, not text order
        assert "GPUS ▲" in lines(table)[0]
        await pilot.click(table, offset=(lines(table)[0].index("GPUS"), 0))
        assert table.row_keys == ["r3", "r1", "r2"] and "GPUS ▼" in lines(table)[0]
        await pilot.pause()
        assert ("header", "gpus") in app.messages
        table.sort_by(None)
        assert table.row_keys == ["r1", "r2", "r3"] and "▲" not in lines(table)[0]


async def test_sorting_keeps_children_right_under_their_group():
    rows = [row(1, "b"), row(2, "a-group"), row(21, "z", parent="r2"), row(22, "c", parent="r2"), row(3, "c")]
    app = Host(rows)
    async with app.run_test(size=(60, 12)):
        table = app.query_one(VirtualTable)
        table.sort_by("name")
        assert table.row_keys == ["r2", "r22", "r21", "r1", "r3"]
        table.sort_by("name", reverse=True)
        assert table.row_keys == ["r3", "r1", "r2", "r21", "r22"]
        table.cycle_sort()  # next column: gpus, still reversed
        assert table.sort_column == "gpus" and table.sort_reverse
        table.reverse_sort()
        assert not table.sort_reverse
        # a sorted table keeps sorting what set_rows gives it
        table.sort_by("name")
        table.set_rows(rows + [row(4, "0-first")])
        assert table.row_keys[0] == "r4"


async def test_only_visible_rows_are_drawn_and_only_changed_ones_are_redrawn():
    app = Host([row(i) for i in range(5000)])
    async with app.run_test(size=(60, 12)) as pilot:
        table = app.query_one(VirtualTable)
        await pilot.pause()
        visible = table.scrollable_content_region.height - 1
        assert 0 < table.render_count <= visible
        drawn = table.render_count
        # changes far below the viewport: nothing redrawn
        table.set_rows([row(i, name="changed" if i > 1000 else None) for i in range(5000)])
        await pilot.pause()
        assert table.render_count == drawn
        # one visible row changes: that row is redrawn
        table.set_rows([row(i, name="changed" if i > 1000 or i == 3 else None) for i in range(5000)])
        await pilot.pause()
        assert table.render_count == drawn + 1
        # the cursor moves: the two rows it leaves and enters
        await pilot.press("down")
        await pilot.pause()
        assert table.render_count == drawn + 3


async def test_live_cells_are_evaluated_only_when_drawn():
    calls: list[int] = []

    def live(i: int):
        def cell() -> Text:
            calls.append(i)
            return Text(f"{i}s")

        return cell

    rows = [Row(f"r{i}", (Text(f"r{i}"), Text("x"), live(i))) for i in range(2000)]
    app = Host(rows)
    async with app.run_test(size=(60, 12)) as pilot:
        table = app.query_one(VirtualTable)
        await pilot.pause()
        assert calls and max(calls) < 20  # the first screenful only
        assert table.cell_text("r1500", "gpus") == "1500s"
        assert table.row_text("r1500") == "r1500 x 1500s" and table.row_text("nope") is None


async def test_long_cells_end_in_an_ellipsis_and_the_flexible_column_gives_way():
    long_name = "a-very-long-job-name-" * 4
    app = Host([row(1, long_name, gpus=12345)])
    async with app.run_test(size=(30, 6)) as pilot:
        table = app.query_one(VirtualTable)
        await pilot.pause()
        line = lines(table)[1]
        assert "…" in line and "12345" in line  # the flexible name shrank; the others kept their width
        assert table.virtual_size.width <= 30
    app = Host([row(1, long_name, gpus=12345)])
    async with app.run_test(size=(120, 6)) as pilot:
        await pilot.pause()
        assert long_name in lines(app.query_one(VirtualTable))[1]


async def test_widths_follow_content_as_rows_change():
    app = Host([row(1, "short")])
    async with app.run_test(size=(100, 6)) as pilot:
        table = app.query_one(VirtualTable)
        await pilot.pause()
        narrow = lines(table)[0].index("GPUS")
        table.set_rows([row(1, "a-much-longer-name")])
        await pilot.pause()
        wide = lines(table)[0].index("GPUS")
        assert wide > narrow
        table.set_rows([row(1, "short")])
        await pilot.pause()
        assert lines(table)[0].index("GPUS") == narrow


def _line_styles(table: VirtualTable, y: int):
    return {seg.style for seg in table.render_line(y) if seg.text.strip()}


async def test_cursor_row_stands_out_in_light_and_dark_themes():
    for theme in ("textual-dark", "textual-light"):
        app = Host([row(i) for i in range(5)])
        async with app.run_test(size=(60, 10)) as pilot:
            app.theme = theme
            await pilot.pause()
            table = app.query_one(VirtualTable)
            cursor_bg = {s.bgcolor for s in _line_styles(table, 1)}
            other_bg = {s.bgcolor for s in _line_styles(table, 2)} | {s.bgcolor for s in _line_styles(table, 3)}
            assert cursor_bg and not cursor_bg & other_bg, theme


async def test_cursor_row_is_reversed_with_no_color(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = Host([row(i) for i in range(5)])
    async with app.run_test(size=(60, 10)) as pilot:
        await pilot.pause()
        table = app.query_one(VirtualTable)
        assert all(s.reverse for s in _line_styles(table, 1))
        assert not any(s.reverse for s in _line_styles(table, 2))


async def test_a_row_style_applies_under_its_cells():
    app = Host([row(1, style="dim"), row(2)])
    async with app.run_test(size=(60, 10)) as pilot:
        await pilot.pause()
        table = app.query_one(VirtualTable)
        table.move_cursor_to_key("r2")
        assert all(s.dim for s in _line_styles(table, 1))
        assert not any(s.dim for s in _line_styles(table, 2))


def test_sort_value_numbers_before_text_and_text_naturally():
    values = ["b", "10", "a10", "9", "a9", "-1.5"]
    assert sorted(values, key=sort_value) == ["-1.5", "9", "10", "a9", "a10", "b"]


def _state(table: VirtualTable) -> tuple:
    """What set_rows works out: order, keys, cursor, widths (not the caches)."""
    by_key = {key: table.get_row(key) for key in table.row_keys}
    widths = {key: table._measured[key][1] for key in table.row_keys}  # what rows on show count as
    kept = table._width_counts  # (None after a filter narrowed: not counted till needed; then what they would be)
    if kept is None and widths:
        kept = [Counter(column) for column in zip(*widths.values())]
    counts = [{w: n for w, n in c.items() if n} for c in kept or ()]
    return table.row_keys, by_key, widths, counts, table._content_widths, table.cursor_key, table.cursor_row


@pytest.mark.parametrize("bulk", [2, 10**9])
async def test_set_rows_patching_what_changed_ends_as_a_fresh_table_would(monkeypatch, bulk):
    """Runs put in, taken out and changed (a group opened, a refresh), narrowed and widened sets (a
    filter typed, then cleared), sorted or not: the table then equals one given those rows afresh. New
    rows measured together (``bulk`` 2: from two on) or one by one."""
    import random

    from yanflow_tui.screens.widgets import table as table_module

    monkeypatch.setattr(table_module, "KEEP_ROWS", 20)  # sets kept (and come back to) at this size too
    monkeypatch.setattr(table_module, "BULK", bulk)
    rng = random.Random(17)
    pool = {i: row(i, "n" * rng.randint(1, 30), gpus=rng.randint(0, 12000)) for i in range(400)}
    kids = {i: row(i, f"kid-{i}", parent=f"r{i // 100 * 100}") for i in range(1000, 1040)}
    app = Host(list(pool.values()))
    async with app.run_test(size=(80, 12)):
        table = app.query_one(VirtualTable)
        came_back = []
        come_back = table._come_back
        monkeypatch.setattr(table, "_come_back", lambda kept: came_back.append(1) or come_back(kept))
        current = list(pool.values())
        history: list[list[Row]] = []
        for step in range(200):
            kind = rng.choice(["splice", "open", "close", "change", "filter", "all", "sort", "same", "back", "back"])
            if kind == "back" and history:  # rows shown before, the very same (a filter cleared)
                current = rng.choice(history)
            elif kind == "splice" and current:
                at = rng.randrange(len(current))
                out = current[at : at + rng.randint(0, 5)]
                shown = {r.key for r in current}
                extra = [r for r in pool.values() if r.key not in shown][: rng.randint(0, 5)]
                current = [*current[:at], *extra, *current[at + len(out) :]]
            elif kind == "open":
                shown = {r.key for r in current}
                group = [k for k in kids.values() if k.parent in shown and k.key not in shown]
                if group:
                    at = next(i for i, r in enumerate(current) if r.key == group[0].parent) + 1
                    same_parent = [k for k in group if k.parent == group[0].parent]
                    current = [*current[:at], *same_parent, *current[at:]]
            elif kind == "close":
                current = [r for r in current if not r.parent or rng.random() < 0.5]
            elif kind == "change" and current:
                i = rng.randrange(len(current))
                n = int(current[i].key[1:])
                replaced = row(n, "w" * rng.randint(1, 40), gpus=rng.randint(0, 99), parent=current[i].parent)
                pool.setdefault(n, replaced)
                current = [*current[:i], replaced, *current[i + 1 :]]
            elif kind == "filter":
                current = [r for r in current if rng.random() < 0.3]
            elif kind == "all":
                shown = {r.key for r in current}
                current = current + [r for r in pool.values() if r.key not in shown]
            elif kind == "sort":
                column = rng.choice([None, "id", "name", "gpus"])
                reverse = rng.random() < 0.5
                table.sort_by(column, reverse)
            if current and rng.random() < 0.3:
                key = rng.choice(current).key
                table.move_cursor_to_key(key)
            table.set_rows(current)
            history = [*history[-5:], current]
            fresh_copy = VirtualTable(COLUMNS)
            fresh_copy.sort_column, fresh_copy.sort_reverse = table.sort_column, table.sort_reverse
            fresh_copy._cursor_key = table.cursor_key
            await app.mount(fresh_copy)
            fresh_copy.set_rows(current)
            fresh_copy.move_cursor_to_key(table.cursor_key or "")
            assert _state(table) == _state(fresh_copy), (step, kind)
            await fresh_copy.remove()
        assert len(came_back) > 3


async def test_a_kept_set_comes_back_as_a_fresh_table_would_show_it_even_after_its_widths_were_dropped(monkeypatch):
    """Coming back to a kept set (a filter cleared) looks only at the widths written over meanwhile;
    when the measured widths were pruned (a new dict), every row is looked at again."""
    from yanflow_tui.screens.widgets import table as table_module

    monkeypatch.setattr(table_module, "KEEP_ROWS", 20)
    everything = [row(i, "n" * (i % 13)) for i in range(60)]
    opened = [row(i, "open " + "w" * 30) if i % 10 == 0 else everything[i] for i in range(0, 60, 2)]
    app = Host(everything)
    async with app.run_test(size=(80, 12)):
        table = app.query_one(VirtualTable)
        for prune in (False, True):
            table.set_rows(everything)
            table.move_cursor_to_key("r20")
            table.set_rows(opened)  # another version of some rows: their widths written over
            assert table._content_widths[1] == len("open ") + 30
            if prune:
                table._measured = dict(table._measured)  # what _update_content_widths does when pruning
            table.set_rows(everything)
            assert all(table.get_row(r.key) is r for r in everything)
            assert all(table._measured[r.key][0] is r for r in everything)
            fresh = VirtualTable(COLUMNS)
            await app.mount(fresh)
            fresh.set_rows(everything)
            fresh.move_cursor_to_key("r20")
            assert _state(table) == _state(fresh)
            await fresh.remove()


def painted(table: VirtualTable) -> list[list[tuple[str, object]]]:
    """Each line as drawn now, as (character, style) pairs: equal whatever the segments' grouping."""
    out = []
    for y in range(table.scrollable_content_region.height):
        out.append([(char, seg.style) for seg in table.render_line(y) for char in seg.text])
    return out


async def test_cached_lines_match_lines_drawn_afresh_after_every_kind_of_change():
    styled = Text("job-1 ")
    styled.append("hot", "bold red")
    rows = [row(i) for i in range(30)]
    rows[1] = Row("r1", (Text("r1"), styled, "3"), style="dim")
    columns = [*COLUMNS[:2], Column("gpus", "GPUS", justify="right", style="italic")]
    app = Host(rows, columns)
    async with app.run_test(size=(60, 12)) as pilot:
        table = app.query_one(VirtualTable)
        await pilot.pause()

        async def check() -> None:
            await pilot.pause()
            cached = painted(table)
            table._strips.clear()
            assert cached == painted(table)

        await check()
        await pilot.press("down", "down")  # the cursor leaves one row and enters another
        await check()
        table.set_rows([row(100), *rows])  # every row below moves to the other stripe
        await check()
        table.set_rows([row(100), rows[0], rows[1]._replace(style=""), *rows[2:]])  # a row's style
        await check()
        table.set_rows([row(100, name="a much longer name than before"), *rows])  # a column widens
        await check()
        table.set_rows([row(100), *rows])  # and narrows again: the lines of that layout come back
        await check()
        table.set_rows([row(100), rows[0], rows[1]._replace(cells=(Text("r1"), "plain", "12345")), *rows[2:]])
        await check()
        table.sort_by("gpus", reverse=True)  # the header's mark, rows moved
        await check()
        table.blur()  # focus out and in: the cursor's style
        await check()
        table.focus()
        await check()
        app.theme = "textual-light" if app.theme != "textual-light" else "nord"  # the styles
        await check()
        table.blur()
        await check()


async def test_focus_coming_and_going_paints_only_the_cursor_line_again():
    app = Host([row(i) for i in range(30)])
    async with app.run_test(size=(60, 12)) as pilot:
        table = app.query_one(VirtualTable)
        await pilot.pause()
        table.move_cursor_to_key("r3")
        await pilot.pause()
        focused = painted(table)
        drawn = table.render_count
        table.blur()
        await pilot.pause()
        blurred = painted(table)
        assert blurred[4] != focused[4]  # the cursor's line (under the header) shows the focus
        assert blurred[:4] + blurred[5:] == focused[:4] + focused[5:]
        assert table.render_count - drawn == 1  # only that line was painted again
        table.focus()
        await pilot.pause()
        assert painted(table) == focused
        assert table.render_count - drawn == 1  # and its focused line was still at hand


async def test_rows_coming_back_with_a_kept_set_bring_their_lines(monkeypatch):
    """A filter cleared: the rows on screen before it come back with the lines drawn of them then."""
    from yanflow_tui.screens.widgets import table as table_module

    monkeypatch.setattr(table_module, "KEEP_ROWS", 20)
    everything = [row(i) for i in range(300)]
    app = Host(everything)
    async with app.run_test(size=(60, 12)) as pilot:
        table = app.query_one(VirtualTable)
        await pilot.pause()
        before = painted(table)
        table.set_rows(everything[:1] + everything[150:])  # a filter typed (the cursor's row stays)
        await pilot.pause()
        drawn = table.render_count
        table.set_rows(everything)  # and cleared
        await pilot.pause()
        assert painted(table) == before
        assert table.render_count == drawn  # no line drawn again
        table._strips.clear()
        assert painted(table) == before


async def test_a_row_moved_to_the_other_stripe_is_painted_again_but_not_laid_out_again():
    app = Host([row(i) for i in range(30)])
    async with app.run_test(size=(60, 12)) as pilot:
        table = app.query_one(VirtualTable)
        await pilot.pause()
        laid: list[object] = []
        lay_out = table._lay_out

        def spy(cells, under=None, header=False):
            if not header:  # (the header is laid out again with each layout)
                laid.append(cells)
            return lay_out(cells, under, header)

        table._lay_out = spy  # type: ignore[method-assign]
        drawn = table.render_count
        table.set_rows([row(99)] + [row(i) for i in range(30)])  # (no wider than the others: the same layout)
        await pilot.pause()
        assert table.render_count > drawn  # every visible row was painted on its new stripe ...
        assert len(laid) == 1  # ... but only the new row's cells were laid out
        table.set_rows([row(99), row(1000)] + [row(i) for i in range(30)])  # a wider id: another layout
        await pilot.pause()
        laid.clear()
        table.set_rows([row(99)] + [row(i) for i in range(30)])  # the layout before comes back
        await pilot.pause()
        assert laid == []  # its lines were kept
        assert lines(table)[1].startswith(" r99 ")


async def test_widths_kept_as_rows_change_equal_a_full_measure():
    import random

    rng = random.Random(3)
    rows = {i: row(i) for i in range(300)}
    app = Host(list(rows.values()))
    async with app.run_test(size=(60, 12)) as pilot:
        table = app.query_one(VirtualTable)
        await pilot.pause()
        for turn in range(40):
            for i in rng.sample(sorted(rows), rng.choice([1, 5, 50, 250])):  # some cells new, the rest the same objects
                old = rows[i]
                name = Text("x" * rng.randrange(1, 30)) if rng.random() < 0.5 else old.cells[1]
                gpus = Text(str(rng.randrange(10**6))) if rng.random() < 0.5 else old.cells[2]
                rows[i] = old._replace(cells=(old.cells[0], name, gpus))
            for i in rng.sample(sorted(rows), 3):  # rows gone, rows come
                del rows[i]
            for _ in range(3):
                new = max(rows) + 1
                rows[new] = row(new, name="y" * rng.randrange(1, 40))
            table.set_rows(list(rows.values()))
            full = [max(len(r.cells[c].plain) for r in rows.values()) for c in range(3)]
            assert table._content_widths == full, f"turn {turn}"


async def test_a_filter_narrowing_takes_only_the_widest_and_widths_still_equal_a_full_measure():
    """Rows only gone (a filter typed, each key narrowing): each column's widest is taken, with no
    counts made; the next change (a refresh) counts them, and widths stay those of a full measure."""
    import random

    rng = random.Random(5)
    rows = {i: row(i, name="n" * rng.randrange(1, 40), gpus=rng.randrange(10**6)) for i in range(600)}
    app = Host(list(rows.values()))
    async with app.run_test(size=(60, 12)) as pilot:
        table = app.query_one(VirtualTable)
        await pilot.pause()

        def full(shown: list[Row]) -> list[int]:
            return [max(len(r.cells[c].plain) for r in shown) for c in range(3)]

        shown = list(rows.values())
        for turn in range(30):
            if turn % 3 == 2:  # a refresh: a few rows changed (counted from then on)
                for i in rng.sample(range(len(shown)), min(3, len(shown))):
                    shown[i] = shown[i]._replace(cells=(shown[i].cells[0], Text("x" * rng.randrange(1, 50)), Text("1")))
                table.set_rows(shown)
                assert table._width_counts is not None
            elif len(shown) > 20:  # a key narrowing the filter: most rows go
                many = len(shown) - len(shown) // 3 > 64  # (a few rows gone are taken out of the counts)
                shown = rng.sample(shown, len(shown) // 3)
                table.set_rows(shown)
                assert table._width_counts is None or not many, f"turn {turn}"
            else:  # cleared
                shown = list(rows.values())
                table.set_rows(shown)
            assert table._content_widths == full(shown), f"turn {turn}"


async def test_a_sort_flipped_is_the_stable_sort_the_other_way():
    def sorted_rows(i: int) -> Row:
        # sort values with many equal ones (and a group with members, which stay under it)
        return Row(
            f"r{i}", (f"r{i}", f"n{i % 3}", str(i % 4)), sort=(i, i % 3, i % 4), parent="r5" if i in (7, 9) else ""
        )

    rows = [sorted_rows(i) for i in range(40)]
    app = Host(rows)
    async with app.run_test(size=(60, 12)):
        table = app.query_one(VirtualTable)
        for column in ("name", "gpus"):
            table.sort_by(column)
            table.sort_by(column, reverse=True)  # flipped from the sort before
            flipped = table.row_keys
            table.sort_by("id")
            table.sort_by(column, reverse=True)  # sorted afresh
            assert flipped == table.row_keys
            table.sort_by(column)  # and back
            back = table.row_keys
            table.sort_by("id")
            table.sort_by(column)
            assert back == table.row_keys
        keys = table.row_keys
        at = keys.index("r5")
        assert set(keys[at + 1 : at + 3]) == {"r7", "r9"}  # the members right under their group


def _reference_order(rows: list[Row], column: int, reverse: bool) -> list[str]:
    """The order sorting gave before its orders were kept (the plain algorithm): top rows and each
    group's members stably sorted (by their sort values, else their text; mixed types by text), the
    members right under their group (nested), rows in parent cycles after the rest."""
    present = {r.key for r in rows}

    def value(r: Row):
        if len(r.sort) > column:
            return r.sort[column]
        cell = r.cells[column]
        return sort_value(cell if isinstance(cell, str) else cell.plain)

    def ordered(group: list[Row]) -> list[Row]:
        try:
            return sorted(group, key=value, reverse=reverse)
        except TypeError:
            return sorted(group, key=lambda r: str(value(r)), reverse=reverse)

    is_kid = [bool(r.parent) and r.parent != r.key and r.parent in present for r in rows]
    top = ordered([r for r, kid in zip(rows, is_kid) if not kid])
    kids: dict[str, list[Row]] = {}
    for r, kid in zip(rows, is_kid):
        if kid:
            kids.setdefault(r.parent, []).append(r)
    kids = {parent: ordered(group) for parent, group in kids.items()}
    out: list[str] = []
    placed = {r.key for r in top}

    def place(r: Row, depth: int = 0) -> None:
        for kid in kids.get(r.key, ()):
            if kid.key not in placed and depth < 16:
                out.append(kid.key)
                placed.add(kid.key)
                place(kid, depth + 1)

    for r in top:
        out.append(r.key)
        place(r)
    out.extend(r.key for r in rows if r.key not in placed)
    return out


def _random_rows(rng, count: int, version: int = 0) -> list[Row]:
    names = ["alpha", "beta", "job-2", "job-10", "Beta", ""]
    out = []
    for i in range(count):
        name, gpus = rng.choice(names), rng.choice([0, 1, 2, 8, 8, 16])
        sort = () if rng.random() < 0.1 else (f"{i:03d}", name.lower(), gpus)
        parent = rng.choice(["", "", "", f"r{rng.randrange(count)}", "gone"])
        cells = (f"r{i}", Text(name), str(gpus) if rng.random() < 0.9 else f"x{version}")
        out.append(Row(f"r{i}", cells, sort, parent))
    return out


async def test_kept_and_flipped_orders_equal_the_plain_sort_over_random_rows_with_groups():
    """Sorts, flips, rows changed, taken out or filtered (a subset in the given order, whose order is
    taken from the rows before when it may be: ``_restricted``): always the plain sort's order."""
    import random

    app = Host([])
    async with app.run_test(size=(60, 12)):
        table = app.query_one(VirtualTable)
        restricted, restrict = [], table._restricted
        table._restricted = lambda *args: restricted.append(restrict(*args)) or restricted[-1]  # type: ignore[method-assign]
        for seed in range(25):
            rng = random.Random(seed)
            rows = _random_rows(rng, rng.randrange(1, 60))
            table.set_rows(rows)
            for step in range(30):
                action = rng.random()
                if action < 0.3:
                    table.sort_by(rng.choice(["id", "name", "gpus"]), rng.random() < 0.5)
                elif action < 0.5:
                    table.cycle_sort()
                elif action < 0.7:
                    table.reverse_sort()
                elif action < 0.9:  # some rows changed (new sort values, parents), the rest the very same
                    fresh = _random_rows(rng, 1 + max(int(r.key[1:]) for r in rows), step)
                    rows = [fresh[int(r.key[1:])] if rng.random() < 0.2 else r for r in rows]
                    table.set_rows(rows)
                elif action < 0.95:  # rows taken out or added
                    rows = rows[: rng.randrange(len(rows) + 1)] or _random_rows(rng, 3, step)
                    table.set_rows(rows)
                else:  # a filter typed on: some rows left, in the order given (members whose group left: top rows)
                    rows = [r for r in rows if rng.random() < 0.7] or rows
                    table.set_rows(rows)
                cursor = table.cursor_key
                if table.sort_column is None:
                    assert table.row_keys == [r.key for r in rows]
                else:
                    column = [c.key for c in COLUMNS].index(table.sort_column)
                    assert table.row_keys == _reference_order(rows, column, table.sort_reverse), (seed, step)
                if cursor is not None and action < 0.7:  # a sort keeps the cursor on its row
                    assert table.cursor_key == cursor
                    assert table.row_keys[table.cursor_row] == cursor
        assert any(order is not None for order in restricted) and None in restricted  # both ways


async def test_a_changed_row_is_sorted_again_where_it_now_belongs():
    rows = [Row(f"r{i}", (f"r{i}", f"n{i}", str(i)), sort=(i, f"n{i}", i)) for i in range(10)]
    app = Host(rows)
    async with app.run_test(size=(60, 12)):
        table = app.query_one(VirtualTable)
        table.sort_by("gpus")
        table.sort_by("name")  # (the order by gpus is kept for these rows)
        assert table.row_keys[0] == "r0"
        changed = [*rows[:3], Row("r3", ("r3", "n3", "99"), sort=(3, "a", 99)), *rows[4:]]
        table.set_rows(changed)
        assert table.row_keys[0] == "r3"  # by name, at once
        table.sort_by("gpus")
        assert table.row_keys[-1] == "r3"  # not the order kept for the rows before
        table.sort_by("gpus", reverse=True)
        assert table.row_keys[0] == "r3"


async def test_the_scrollbar_is_drawn_again_only_when_what_it_draws_changed(monkeypatch):
    """The table's scrollbar (``QuietScrollBar``) ignores repaints and layouts asked for with nothing
    to show for them (Textual's view asks after every layout that resized it and at every restyle, a
    focus change: each a frame more), and is drawn again when its thumb moves or its colours change."""
    from yanflow_tui.screens.widgets.scrolling import QuietScrollBar

    drawn: list[tuple] = []
    render = QuietScrollBar.render

    def counted(bar):
        out = render(bar)
        drawn.append(bar._drawing())
        return out

    monkeypatch.setattr(QuietScrollBar, "render", counted)
    app = Host([row(i) for i in range(200)])
    async with app.run_test(size=(60, 12)) as pilot:
        table = app.query_one(VirtualTable)
        bar = table.vertical_scrollbar
        assert isinstance(bar, QuietScrollBar) and isinstance(table.horizontal_scrollbar, QuietScrollBar)
        await wait_for(pilot, lambda: drawn, what="the scrollbar drawn")
        await pilot.pause()
        count = len(drawn)
        bar.refresh()
        bar.refresh(layout=True)
        table.refresh_bindings()
        app.update_styles(table)  # a restyle: Textual repaints the view's scrollbars
        table._scroll_update(table.virtual_size)  # what a layout does: Textual repaints them after it
        await pilot.pause()
        await pilot.pause()
        assert len(drawn) == count
        table.move_cursor_to_key("r150")  # the thumb moves
        await wait_for(pilot, lambda: len(drawn) > count and drawn[-1][3] > 0, what="the moved thumb drawn")
        count = len(drawn)
        app.theme = "textual-light" if app.theme != "textual-light" else "textual-dark"  # its colours change
        await wait_for(pilot, lambda: len(drawn) > count, what="the new colours drawn")


async def test_rows_given_with_what_changed_end_as_a_fresh_table_would(monkeypatch):
    """A refresh that says what changed (``RowChanges``: rows put, keys gone): the table takes those
    alone and ends as a table given the rows afresh, sorted or not; told wrong (changes that do not
    add up), it compares every row instead."""
    import random

    from yanflow_tui.screens.widgets.table import RowChanges

    rng = random.Random(5)
    current = [row(i, "n" * rng.randint(1, 30), gpus=rng.randint(0, 999)) for i in range(300)]
    next_id = 300
    app = Host(list(current))
    async with app.run_test(size=(80, 12)):
        table = app.query_one(VirtualTable)
        compared = []
        splice = table._splice
        monkeypatch.setattr(table, "_splice", lambda rows, old: compared.append(1) or splice(rows, old))
        for step in range(60):
            rows = list(current)
            put = []
            for at in rng.sample(range(len(rows)), 12):  # changed (some with the very same cells)
                n = int(rows[at].key[1:])
                width = rng.choice([rng.randint(1, 45), len(rows[at].cells[1].plain)])
                put.append(row(n, "w" * width, gpus=rng.randint(0, 99999)))
                rows[at] = put[-1]
            gone = [r.key for r in rng.sample(rows, 3) if r not in put]
            rows = [r for r in rows if r.key not in gone]
            for _ in range(3):  # new ones, at the end or in among the others
                made = row(next_id, "new" * rng.randint(1, 9))
                rows.insert(rng.choice([len(rows), rng.randrange(len(rows))]), made)
                put.append(made)
                next_id += 1
            wrong = step % 10 == 9
            if wrong:  # a new row not said
                put.pop()
            if step % 15 == 7:
                table.sort_by(rng.choice([None, "id", "name", "gpus"]), rng.random() < 0.5)
            if rng.random() < 0.3:
                table.move_cursor_to_key(rng.choice(rows).key)
            compared.clear()
            table.set_rows(rows, RowChanges(put, gone))
            assert bool(compared) is wrong, step
            current = rows
            fresh = VirtualTable(COLUMNS)
            fresh.sort_column, fresh.sort_reverse = table.sort_column, table.sort_reverse
            await app.mount(fresh)
            fresh.set_rows(rows)
            fresh.move_cursor_to_key(table.cursor_key or "")
            assert _state(table) == _state(fresh), step
            await fresh.remove()


def test_rows_measured_together_get_the_widths_each_would_get_alone():
    """``_widths_of`` (many rows a column at a time) gives what ``_width`` gives cell by cell: ASCII,
    accents, wide CJK and emoji, ``Text``, live cells (0) and rows short of cells (0), each row's tuple
    shared with equal ones."""
    import random

    from yanflow_tui.screens.widgets.table import BULK, _width, _widths_of

    rng = random.Random(7)
    words = ["train", "données-prép", "训练-模型", "🚀-launch", "ジョブ", "ŝlurm", "", "a" * 40]

    def cell():
        word = rng.choice(words) + str(rng.randrange(1000))
        return rng.choice([word, word, word, Text(word), lambda: Text(word)])

    rows = [Row(f"k{i}", tuple(cell() for _ in range(rng.choice([4, 4, 4, 2])))) for i in range(500)]
    rows += [Row(f"s{i}", (rng.choice(words), "x")) for i in range(100)]  # columns of plain str only, short
    got = _widths_of(rows, 4)
    assert got == [tuple(_width(r.cells[c]) if c < len(r.cells) else 0 for c in range(4)) for r in rows]
    shared = Text("running")  # a column of one shared Text, one of live cells only, one of plain str
    columns = [Row(f"c{i}", (f"名{i}", shared, lambda: Text("9d"))) for i in range(BULK)]
    assert set(_widths_of(columns, 3)) == {(2 + len(str(i)), 7, 0) for i in range(BULK)}
    alike = [w for w, r in zip(got, rows) if r.cells == rows[-1].cells]
    assert len(alike) > 1 and all(w is alike[0] for w in alike)
    assert _widths_of([Row("w", ("训练-模型", "🚀", "ok"))] * BULK, 3)[0] == (9, 2, 2)  # in cells, not characters
    assert _widths_of([], 3) == []


def test_widths_by_column_read_each_row_once_in_order():
    assert _by_column([(1, 2, 3), (4, 5, 6), (7, 8, 9)], 3) == [[1, 4, 7], [2, 5, 8], [3, 6, 9]]
    assert _by_column([], 2) == [[], []]


async def test_structures_a_big_set_replaced_are_let_go_after_the_paint():
    """Freeing 100k rows' dict entries is left out of the key that replaced them (a filter typed):
    what was replaced is held until shortly after, then let go; the table shows the new rows at once."""
    everything = [row(i) for i in range(KEEP_ROWS + 200)]
    app = Host(everything)
    async with app.run_test(size=(60, 12)) as pilot:
        table = app.query_one(VirtualTable)
        await pilot.pause()
        replaced = table._by_key
        table.set_rows(everything[::3])  # a filter typed
        assert table.row_count == len(everything[::3]) and table._by_key is not replaced
        assert any(held is replaced for held in table._litter)
        await wait_for(pilot, lambda: not table._litter, what="the replaced rows let go")
        table.set_rows(everything)  # the filter cleared: the kept set comes back as it was
        assert table.row_keys == [r.key for r in everything]
        await wait_for(pilot, lambda: not table._litter, what="the filtered rows let go")


async def test_a_filter_told_as_changes_keeps_the_rows_on_show_and_comes_back_to_them(monkeypatch):
    """A filter over the rows on show can say what differs (``RowChanges`` with ``keep``: groups opened
    and their members put, rows not matching gone): the table compares no row, keeps the rows on show,
    and escape (those very rows given again) comes back to them; each step ends as a fresh table
    would. Told wrong (the counts do not add up), it compares every row and keeps them once."""
    from yanflow_tui.screens.widgets import table as table_module
    from yanflow_tui.screens.widgets.table import RowChanges

    monkeypatch.setattr(table_module, "KEEP_ROWS", 20)
    shown = [row(i, f"group-{i} ▸" if i % 10 == 0 else "n" * (i % 13)) for i in range(60)]
    app = Host(list(shown))
    async with app.run_test(size=(80, 12)):
        table = app.query_one(VirtualTable)
        compared, came_back = [], []
        splice, come_back = table._splice, table._come_back
        monkeypatch.setattr(table, "_splice", lambda rows, old: compared.append(1) or splice(rows, old))
        monkeypatch.setattr(table, "_come_back", lambda kept: came_back.append(kept) or come_back(kept))

        async def equals_fresh(rows: list[Row]) -> None:
            fresh = VirtualTable(COLUMNS)
            fresh.sort_column, fresh.sort_reverse = table.sort_column, table.sort_reverse
            await app.mount(fresh)
            fresh.set_rows(rows)
            fresh.move_cursor_to_key(table.cursor_key or "")
            assert _state(table) == _state(fresh)
            await fresh.remove()

        for wrong, sort in ((False, None), (True, None), (False, "name")):
            table.sort_by(sort)
            table.move_cursor_to_key("r21")
            filtered, put = [], []
            for r in shown:
                n = int(r.key[1:])
                if n % 10 == 0:  # a group, opened, and its members under it
                    put.append(row(n, f"group-{n} ▾ wider than before"))
                    put += [row(1000 + 10 * n + k, f"member {k}", parent=r.key) for k in range(3)]
                    filtered += put[-4:]
                elif n % 3:
                    filtered.append(r)  # the very row on show
            gone = [r.key for r in shown if int(r.key[1:]) % 10 and not int(r.key[1:]) % 3]
            if wrong:
                gone.pop()
            compared.clear()
            table.set_rows(filtered, RowChanges(put, gone, keep=True))
            assert bool(compared) is wrong
            assert [kept.given for kept in table._kept].count(shown) == 1  # kept (once, even when told wrong)
            await equals_fresh(filtered)
            came_back.clear()
            table.set_rows(list(shown))  # escape
            assert len(came_back) == 1 and came_back[0].given == shown
            await equals_fresh(shown)


async def test_changes_checked_against_a_full_compare_in_tests_name_what_is_wrong():
    """``check_changes`` (on in every UI test): changes that add up but lie raise, naming the rows."""
    import pytest

    from yanflow_tui.screens.widgets.table import RowChanges

    shown = [row(i) for i in range(10)]
    app = Host(list(shown))
    async with app.run_test(size=(80, 12)):
        table = app.query_one(VirtualTable)
        assert table.check_changes
        changed = [*shown[:4], row(4, "another version, not said"), *shown[5:]]
        with pytest.raises(AssertionError, match="r4"):
            table.set_rows(changed, RowChanges([]))


async def test_a_filter_typed_over_sorted_rows_takes_their_order_instead_of_sorting_again(monkeypatch):
    """Typing a filter while sorted: the rows left keep the order they had (a stable sort of a subset
    is the subset of the stable sort), so no sort runs; a row whose sort value changed meanwhile
    sorts afresh. Groups stay together, their members sorted under them."""
    import random

    rng = random.Random(3)
    rows = []
    for i in range(300):
        name = rng.choice(["alpha", "beta", "gamma", "delta"]) + str(rng.randrange(20))
        rows.append(Row(f"r{i}", (f"r{i}", name, str(i % 7)), (f"{i:03d}", name, i % 7)))
        if i % 25 == 0:  # a group of 4 under it
            rows += [
                Row(f"r{i}.{k}", (f"r{i}.{k}", f"m{k}", "1"), (f"{i:03d}.{k}", f"m{(7 * k) % 4}", 1), f"r{i}")
                for k in range(4)
            ]
    app = Host(list(rows))
    async with app.run_test(size=(60, 12)):
        table = app.query_one(VirtualTable)
        table.sort_by("name", reverse=True)
        sorts = []
        real_sorted = sorted
        monkeypatch.setattr("builtins.sorted", lambda *a, **k: sorts.append(len(a[0])) or real_sorted(*a, **k))
        for step in range(4):
            kept = {r.key for r in rows if not r.parent and rng.random() < 0.6}
            rows = [r for r in rows if (r.parent or r.key) in kept]
            if step == 3:  # a row in a new version, another name: sorted afresh
                at = next(i for i, r in enumerate(rows) if not r.parent)
                rows[at] = rows[at]._replace(cells=(rows[at].key, "zzz", "0"), sort=(rows[at].sort[0], "zzz", 0))
            sorts.clear()
            table.set_rows(rows)
            top_sorts = [n for n in sorts if n == len([r for r in rows if not r.parent])]
            assert bool(top_sorts) is (step == 3), step
            assert table.row_keys == _reference_order(rows, 1, True), step


async def test_rows_of_equal_widths_share_one_widths_tuple():
    """The widths kept per measured row: rows measuring alike hold one tuple (100,000 rows: a few
    thousand tuples, not 100,000)."""
    rows = [row(i, name="same", gpus=3) for i in range(10, 40)]
    app = Host(rows)
    async with app.run_test(size=(60, 12)) as pilot:
        table = app.query_one(VirtualTable)
        await pilot.pause()
        kept = [table._measured[r.key][1] for r in rows]
        assert kept[0] == (3, 4, 1)
        assert all(widths is kept[0] for widths in kept)
        other = table._measured["r10"][0]._replace(cells=(Text("r10"), Text("longer"), Text("3")))
        assert table._row_widths(other) == (3, 6, 1)


async def test_rows_back_as_new_but_equal_objects_repaint_no_line(monkeypatch):
    """A backend that builds its jobs afresh each refresh gives new Rows with the same keys and cells:
    the table draws them as before, so no line is painted again (a whole repaint rewrote every row to the
    terminal); a row whose cells changed among them is painted again."""
    app = Host([row(i) for i in range(20)])
    async with app.run_test(size=(60, 12)) as pilot:
        table = app.query_one(VirtualTable)
        await pilot.pause()
        before = lines(table)
        refreshed: list[object] = []
        original = table.refresh
        monkeypatch.setattr(
            table, "refresh", lambda *regions, **kw: refreshed.append(regions) or original(*regions, **kw)
        )
        table.set_rows([row(i) for i in range(20)])
        await pilot.pause()
        assert refreshed == [] and lines(table) == before
        table.set_rows([row(i, name="renamed" if i == 3 else None) for i in range(20)])
        await pilot.pause()
        assert refreshed and any("renamed" in line for line in lines(table))


async def test_lines_below_the_last_row_take_the_new_theme():
    """The blank lines under a short table are made once per width and style (an idle refresh draws them
    again to compare), and a theme switched repaints them in its own background, not the old one's."""
    app = Host([row(i) for i in range(3)])
    async with app.run_test(size=(60, 12)) as pilot:
        table = app.query_one(VirtualTable)
        await pilot.pause()
        last = table.scrollable_content_region.height - 1
        assert table.render_line(last) is table.render_line(last - 1)  # one blank line, made once
        for theme in ("textual-light", "textual-dark"):
            app.theme = theme
            await pilot.pause()
            blank = table.render_line(last)
            assert blank.text.strip() == "" and blank.cell_length == table.scrollable_content_region.width
            assert {seg.style.bgcolor for seg in blank} == {table.rich_style.bgcolor}, theme


@pytest.mark.parametrize("distinct", [3, 500])
def test_widths_tallied_per_column_are_what_counting_each_column_gives(distinct):
    """``_tally`` counts shared tuples first when few are distinct, a column at a time when most are."""
    import random

    from yanflow_tui.screens.widgets.table import _tally

    rng = random.Random(distinct)
    pool = [tuple(rng.randrange(12) for _ in range(4)) for _ in range(distinct)]
    widths = [rng.choice(pool) for _ in range(600)]
    assert _tally(widths, 4) == [Counter(column) for column in _by_column(widths, 4)]
    assert _tally([], 4) == [Counter()] * 4
