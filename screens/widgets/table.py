"""A virtualised table on Textual's line API: thousands of keyed rows, only the visible ones drawn.

``set_rows`` replaces the whole ordered row list in one call (cheap: unchanged rows are skipped by
identity, a changed row is measured once); the cursor stays on its key and the scroll offset stays
put. Each drawn row is cached as a ``Strip`` until its cells, the layout, the styles, its stripe or
the cursor change. A cell is a plain ``str`` (styled by its column), a ``rich.text.Text``, or a
zero-argument callable returning a ``Text`` (a live cell, e.g. an age: evaluated only when its line
is drawn). Rows may name a ``parent``: sorting keeps them right under it. Header clicks, ``sort_by``,
``cycle_sort`` and ``reverse_sort`` sort. Nothing here knows about jobs.
"""

from __future__ import annotations

import re
import time
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from itertools import chain, compress, count, filterfalse, groupby, islice, repeat
from operator import eq, is_, is_not, itemgetter, ne, not_
from typing import ClassVar, NamedTuple, TypeGuard, cast

from rich.cells import cell_len
from rich.control import strip_control_codes
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip

from yanflow_tui.screens.render.rows import natural_key
from yanflow_tui.screens.widgets.focus_repaint import FocusRepaintsLines
from yanflow_tui.screens.widgets.scrolling import QuietScrollView, set_virtual_size
from yanflow_tui.screens.widgets.tabledata import LATER, Cell, Row, RowChanges
from yanflow_tui.speed import Shared, collector_off
from yanflow_tui.widths import fit_widths

PAD = 1  # blank cells each side of every column
SORT_MARKS = {False: " ▲", True: " ▼"}
_NUMBER = re.compile(r"^\s*-?\d+(?:\.\d*)?\s*$")
KEEP_ROWS = 1000  # sets of at least this many rows are kept when left for a quite different one
KEEP_SETS = 2
DROP_SECONDS = 0.25  # big structures replaced are let go this long after (see VirtualTable._drop_later)
_FIRST = itemgetter(0)
_SECOND = itemgetter(1)
_UNMEASURED: tuple = (None, ())  # measured.get's default: matches no row
# rows given with their cells ``LATER`` are made and measured after the frame, in turns of about
# LATER_BUDGET s (a key waits for one at most: ~8 µs a row), LATER_CHUNK rows at a time, LATER_SECONDS apart
LATER_BUDGET, LATER_CHUNK, LATER_SECONDS = 0.008, 256, 0.002


class Column(NamedTuple):
    key: str
    label: str
    min_width: int = 0  # also the room kept for live cells, which are not measured ahead
    flex: bool = False  # gives up width first (down to its label, or ``floor``) when the table is too narrow
    floor: int = 0  # a flexible column never shrinks below this (nor below its label)
    give_way: int = 0  # 1, 2, ...: hidden in that order when shrinking is not enough; 0: never hidden
    justify: str = "left"  # or "right"
    style: str = ""  # a Rich style under every cell of the column (plain ``str`` cells get only this)


# a Row's fields by index: in C, about 2.5x quicker than by name (each row a cache miss either way)
_ROW_KEY, _PARENT, _SORT = (itemgetter(Row._fields.index(name)) for name in ("key", "parent", "sort"))


def sort_value(text: str) -> tuple:
    """Numbers sort as numbers, before text; text sorts naturally (``a9`` before ``a10``)."""
    if _NUMBER.match(text):
        return (0, float(text), ())
    return (1, 0.0, natural_key(text.lower()))


def _width(cell: Cell) -> int:
    """Cells a static cell takes (live cells: 0, measured when drawn)."""
    if type(cell) is str:  # (most cells: checked first, at once)
        return len(cell) if cell.isascii() else cell_len(cell)
    if isinstance(cell, str):
        plain = cell
    elif isinstance(cell, Text):
        plain = cell.plain
    else:
        return 0
    return len(plain) if plain.isascii() else cell_len(plain)


# each set of widths met, kept once: rows mostly repeat a few thousand sets, so 100,000 rows measured
# hold a few thousand tuples, not 100,000 (11 MB)
_shared_widths: Callable[[tuple[int, ...]], tuple[int, ...]] = Shared(lambda widths: widths).__getitem__


def _cell_text(cell: Cell) -> Text:
    if isinstance(cell, Text):
        return cell
    return Text(cell) if isinstance(cell, str) else cell()


def _flipped(keys: list, order: Sequence[int]) -> list[int]:
    """An order stably sorted by ``keys`` (indexes into them), stably sorted the other way: its runs
    of equal keys in the other order, each run as it was (the given order). Found and joined in C,
    from the keys in the given order (looking each row up in sorted order: cache misses, 40 ms at
    85,000 rows)."""
    ranked = list(map(keys.__getitem__, order))
    starts = [0, *compress(count(1), map(ne, islice(ranked, 1, None), ranked))]
    ends = [*starts[1:], len(order)]
    return list(chain.from_iterable(map(order.__getitem__, map(slice, reversed(starts), reversed(ends)))))


def _by_column(widths: list[tuple[int, ...]], ncols: int) -> list[list[int]]:
    """Rows' widths (``ncols`` each), a list per column. Each row's tuple is read once, in order:
    the rows' tuples lie all over the heap, and reading them a column at a time (``zip(*...)``, or
    ``itemgetter(i)`` per column) fetches each one ``ncols`` times (3-4x slower at 100,000 rows)."""
    flat = list(chain.from_iterable(widths))  # (``_row_widths`` gives every row a width per column)
    return [flat[i::ncols] for i in range(ncols)]


def _tally(widths: list[tuple[int, ...]], ncols: int) -> list[Counter[int]]:
    """Per column, how many of ``widths`` (rows' tuples, ``ncols`` each) have each width. The tuples are
    shared (``_shared_widths``: 2,232 distinct among 51,306 member rows at 100,000 jobs): each distinct one
    is counted first, then its widths are added in (4x quicker); when most are distinct, a column at a
    time in C."""
    tally = Counter(widths)
    if 4 * len(tally) > len(widths):
        return list(map(Counter, _by_column(widths, ncols)))
    times = list(tally.values())
    out = []
    for column in _by_column(list(tally), ncols):
        counter: Counter[int] = Counter()
        for width, n in zip(column, times):
            counter[width] += n
        out.append(counter)
    return out


BULK = 64  # rows measured together, a column at a time in C, from this many on (fewer: one by one)
_CELLS = itemgetter(Row._fields.index("cells"))


# characters one cell wide in rich's own measure (Latin with accents, Greek, Cyrillic, box drawing): a text
# of only these is its length, found in C (rich's ``cell_len`` takes ~1 µs a text to say so)
_single_cells: Callable[[str], bool] = frozenset(
    c
    for first, last in ((0x20, 0x7E), (0xA0, 0x2FF), (0x370, 0x52F), (0x2500, 0x25FF))
    for c in map(chr, range(first, last + 1))
    if cell_len(c) == 1
).issuperset


def _widths_of(rows: Sequence[Row], ncols: int) -> list[tuple[int, ...]]:
    """Each row's widths (``ncols`` each, as ``_width`` gives them, each tuple shared), measured a column
    at a time: a column of plain ``str`` cells (nearly all) has its lengths taken in C and only its
    non-ASCII cells measured one by one, each distinct one once; any other column (the state's shared
    ``Text``, the age's live cells) measures each distinct cell object once. 3-5x quicker than cell by
    cell at 35,000 new rows: the members a first filter keystroke shows at 100,000 jobs."""
    cells = list(map(_CELLS, rows))
    if not cells:
        return []
    if min(map(len, cells)) >= ncols:
        columns = list(zip(*cells))[:ncols]  # (one pass over every cell, in C)
    else:
        columns = [tuple(c[i] if i < len(c) else "" for c in cells) for i in range(ncols)]
    measured: list[list[int]] = []
    for column in columns:
        try:
            plain = list(map(str.isascii, column))  # (a TypeError for any cell that is no str: a quick type check)
        except TypeError:
            if not any(issubclass(kind, (str, Text)) for kind in set(map(type, column))):
                measured.append([0] * len(column))  # live cells only (the age): measured when drawn
                continue
            ids = list(map(id, column))
            each = {key: _width(cell) for key, cell in dict(zip(ids, column)).items()}
            measured.append(list(map(each.__getitem__, ids)))
            continue
        widths = list(map(len, column))
        if not all(plain):
            wide: dict[str, int] = {}
            for j in compress(count(), map(not_, plain)):
                text = column[j]
                width = wide.get(text)
                if width is None:
                    width = wide[text] = len(text) if _single_cells(text) else cell_len(text)
                widths[j] = width
        measured.append(widths)
    return list(map(_shared_widths, zip(*measured)))


def _is_live(cell: Cell) -> TypeGuard[Callable[[], Text]]:
    return not isinstance(cell, (str, Text))


def _fits(known: tuple[Row, tuple[int, ...]] | None, row: Row) -> TypeGuard[tuple[Row, tuple[int, ...]]]:
    """``known`` (a row measured and its widths) holds for ``row``: that very row, or equal cells."""
    return known is not None and (known[0] is row or known[0].cells == row.cells)


# a row's cells laid out (runs of text and the style over the line's), the cells they take, and
# the lines painted from them by the line's style (stripe or cursor, focused or not, per theme)
_Laid = tuple[list[tuple[str, Style | None]], int, dict[Style, Strip]]


_Measured = tuple[Row, tuple[int, ...]]  # a row measured and its widths


class _Kept:
    """A set of rows left for a quite different one (a filter typed), kept to come back to at once
    (the filter cleared): the rows given, keyed, their width counts, the display order for the sort
    it was shown in, and the measured entries written over since (the first of each key): only
    those are looked at on the way back, never every row."""

    __slots__ = ("given", "by_key", "counts", "rows", "order", "measured", "saved", "strips")

    def __init__(self, table: VirtualTable) -> None:
        self.given = table._given
        self.by_key = table._by_key
        counts = table._width_counts
        self.counts = [Counter(c) for c in counts] if counts is not None else None
        self.rows = table._rows
        self.order = (table.sort_column, table.sort_reverse)
        self.measured = table._measured  # a pruned (replaced) dict: every row is looked at again
        self.saved: dict[str, _Measured] = {}
        self.strips = dict(table._strips)  # the lines drawn of its rows (few: those on screen so far)


class _Groups:
    """The rows given (one list object), their top rows and each group's members, and the top rows
    as sorted by each (column, reversed) so far, with that order as indexes (to flip it): sorting by
    a column again costs nothing until the rows change (about 1 MB an order at 85,000 rows; at most
    two per column). An order taken from another set's (``VirtualTable._restricted``) has no indexes.
    ``orphans``: some rows name a parent that is not there (they sort as top rows)."""

    __slots__ = ("rows", "top", "children", "orders", "orphans")

    def __init__(self, rows: list[Row], top: list[Row], children: dict[str, list[Row]], orphans: bool) -> None:
        self.rows, self.top, self.children, self.orphans = rows, top, children, orphans
        self.orders: dict[tuple[int, bool], tuple[list[Row], array[int] | None]] = {}


class VirtualTable(FocusRepaintsLines, QuietScrollView, can_focus=True):
    """Keyed rows under a fixed header; the cursor is a row, kept by key."""

    check_changes: ClassVar[bool] = False  # tests: check each ``RowChanges`` given against a full compare

    COMPONENT_CLASSES: ClassVar[set[str]] = {"vtable--header", "vtable--cursor", "vtable--even-row", "vtable--odd-row"}
    DEFAULT_CSS = """
    VirtualTable {
        height: 1fr;
        background: $surface;
        color: $foreground;
        & > .vtable--header { text-style: bold; background: $panel; color: $foreground; }
        &:ansi > .vtable--header { background: ansi_bright_blue; color: ansi_default; }
        & > .vtable--even-row { background: $surface-lighten-1 50%; }
        &:dark > .vtable--even-row { background: $surface-darken-1 40%; }
        & > .vtable--odd-row { }
        & > .vtable--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus > .vtable--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
            text-style: $block-cursor-text-style;
        }
        &:nocolor > .vtable--cursor { text-style: reverse; }
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor_up", "Row up", show=False, id="table-row-up"),
        Binding("down", "cursor_down", "Row down", show=False, id="table-row-down"),
        Binding("pageup", "cursor_page_up", "Page up", show=False, id="table-page-up"),
        Binding("pagedown", "cursor_page_down", "Page down", show=False, id="table-page-down"),
        Binding("home,g", "cursor_first", "First row", show=False, id="table-first-row"),
        Binding("end,G", "cursor_last", "Last row", show=False, id="table-last-row"),
        Binding("enter", "select_cursor", "Select", show=False, id="table-select-row"),
    ]

    class RowHighlighted(Message):
        """The cursor moved to another row (``key`` is None when the table emptied)."""

        def __init__(self, table: VirtualTable, key: str | None) -> None:
            super().__init__()
            self.table, self.key = table, key

        @property
        def control(self) -> VirtualTable:
            return self.table

    class RowSelected(Message):
        """Enter, or a click on the cursor row."""

        def __init__(self, table: VirtualTable, key: str) -> None:
            super().__init__()
            self.table, self.key = table, key

        @property
        def control(self) -> VirtualTable:
            return self.table

    class HeaderSelected(Message):
        """A click on a column label (the table has sorted by it already, when sortable)."""

        def __init__(self, table: VirtualTable, column: str) -> None:
            super().__init__()
            self.table, self.column = table, column

        @property
        def control(self) -> VirtualTable:
            return self.table

    def __init__(
        self,
        columns: Sequence[Column],
        *,
        zebra_stripes: bool = True,
        sortable: bool = True,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.columns: tuple[Column, ...] = tuple(columns)
        self.zebra_stripes = zebra_stripes
        self.sortable = sortable
        self.sort_column: str | None = None
        self.sort_reverse = False
        self.render_count = 0  # rows drawn (strip cache misses): tests check that only visible ones are
        self._given: list[Row] = []  # the order set_rows received
        self._rows: list[Row] = []  # display order
        self._by_key: dict[str, Row] = {}
        self._index: dict[str, int] | None = {}  # key -> display index, built when first needed
        self._cursor_key: str | None = None
        self._cursor_index: int | None = None  # display index of the cursor's row
        ncols = len(self.columns)
        self._measured: dict[str, tuple[Row, tuple[int, ...]]] = {}  # key -> (row measured, its widths)
        # key -> another version of a row on show, measured ahead (a group as a filter opens it); kept
        # as the two versions take turns
        self._ahead: dict[str, tuple[Row, tuple[int, ...]]] = {}
        self._content_widths = [0] * ncols  # widest static cell per column, over the current rows
        self._width_counts: list[Counter[int]] | None = None  # per column: how many current rows have each width
        self._most_rows = 0  # the most rows set at once since widths were last pruned
        self._live_widths = [0] * ncols
        self._widths: list[int] = [0] * ncols
        self._starts: list[int] = [0] * ncols
        self._hidden: frozenset[int] = frozenset()  # columns given way (see Column.give_way)
        self._layout_key: tuple | None = None
        # key -> by layout and live text: its cells laid out in the columns (runs, cells taken) and its
        # lines by the style they are painted in: a filter, a sort or a group opened above moves rows
        # between odd and even stripes and back (and often widens a column and back), the cursor comes
        # and goes, and focus changes the cursor's style
        self._strips: dict[str, dict[tuple, _Laid]] = {}
        self._header: Strip | None = None
        self._base_style: Style | None = None  # the widget's own, under rows without stripes (until styles change)
        self._blank: tuple[int, Style, Strip] | None = None  # (width, style, the line below the last row)
        self._sort_cache: dict[str, tuple[Row, object]] = {}
        self._groups_of: _Groups | None = None  # the rows given, grouped, and their orders by sort
        # sets of rows left for a quite different one (a filter typed), kept to come back to at once
        # (the filter cleared): the rows given, keyed, their width counts, and widths measured of them
        self._kept: list[_Kept] = []
        self._litter: list[object] = []  # replaced structures to let go of after the paint (_drop_later)
        self._painted: dict[int, Strip] = {}  # line y -> the strip drawn there last (render_line)
        # rows given with their cells ``LATER``: ``make_row(row)`` makes the row they stand for (None: nothing
        # left to make it from), as they are drawn or measured; till they are measured (a few ms a turn, after
        # the frame, ``_later``), each counts as zero wide (``_zeros``), except those in sight
        self.make_row: Callable[[Row], Row | None] | None = None
        self._made: dict[str, tuple[Row, Row]] = {}  # key -> (a row given LATER, the row made for it)
        self._later: list[Row] = []  # rows given LATER, to measure (first given, first measured)
        self._later_due = False
        self._later_moved = False  # the widest cells moved since the last of them was measured
        self._zeros = _shared_widths((0,) * ncols)
        self._no_entry: _Measured = (None, self._zeros)  # type: ignore[assignment]  # a row given LATER, not measured

    # -- public API --------------------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        return len(self._rows)

    @property
    def row_keys(self) -> list[str]:
        """Keys in display order."""
        return [row.key for row in self._rows]

    @property
    def cursor_key(self) -> str | None:
        return self._cursor_key

    @property
    def cursor_row(self) -> int:
        """The cursor's display index (0 when the table is empty)."""
        return self._cursor_index or 0

    def get_row(self, key: str) -> Row | None:
        """The row of ``key`` as drawn (a row given ``LATER``: the row made for it)."""
        row = self._by_key.get(key)
        return None if row is None else self._real(row)

    def cell_text(self, key: str, column: str) -> str:
        """A cell's text as drawn now (live cells evaluated), for tests and export."""
        row = self._real(self._by_key[key])
        index = self._column_index(column)
        return _cell_text(row.cells[index]).plain if index < len(row.cells) else ""

    def row_text(self, key: str) -> str | None:
        """A row's cells as drawn now, joined by spaces (None: no such row), for tests and export."""
        row = self._by_key.get(key)
        return None if row is None else " ".join(_cell_text(cell).plain for cell in self._real(row).cells)

    def set_rows(self, rows: Iterable[Row], changes: RowChanges | None = None) -> None:
        """Replace every row, in order. Unchanged ``Row`` objects (or equal cells) cost a lookup.

        The rows are compared with those on show in C (keys, identity); only the rows added, changed
        or gone are looked at one by one, so a filter or a refresh over 100k rows costs little more
        than what it changed. ``changes``: what differs from the rows given last, when the caller
        knows (a refresh): not even the comparing then."""
        rows = list(rows)
        old = self._by_key
        if len(old) >= KEEP_ROWS:  # (what replaces them is set below; these go after the paint)
            self._drop_later(old, self._given, self._rows, self._index)
        page = self._page_height()
        top = self.scroll_offset.y
        old_cursor = self._cursor_index
        cursor_was_visible = old_cursor is not None and top <= old_cursor < top + page
        kept = self._kept_for(rows)
        if kept is not None:  # rows shown before (a filter cleared): as they were then
            self._come_back(kept)
            self._after_set(old_cursor, cursor_was_visible, top, page, True)
            return
        keeping = None
        if changes is not None and changes.keep and len(old) >= KEEP_ROWS:  # (patched on a copy: they stay)
            keeping, old = self._keep(), old.copy()
        spliced = self._changed(rows, old, changes) if changes is not None else None
        if spliced is None and keeping is not None:  # (the changes did not add up: as if not given)
            self._kept.remove(keeping)
            keeping, old = None, self._by_key
        if spliced is None:
            spliced = self._splice(rows, old)
        if spliced is None:
            keys = list(map(_ROW_KEY, rows))
            by_key = dict(zip(keys, rows))
            if len(by_key) != len(rows):
                raise ValueError("duplicate row keys")
            differ = list(compress(rows, map(is_not, map(old.get, keys), rows))) if old else rows
            befores = list(map(old.get, map(_ROW_KEY, differ))) if old else [None] * len(differ)
        else:  # a run of rows put in, taken out or changed (a group opened): the rest stays as it is
            by_key, differ, befores, gone_keys = spliced
            keys = None
        if spliced is None and old and len(old) >= KEEP_ROWS:
            keeping = self._keep()
        measured = self._measured
        arrived: list[tuple[int, ...]] = []  # widths of rows added or changed, and of those changed or gone
        left: list[tuple[int, ...]] = []
        same = len(rows) - len(differ)
        new = list(compress(differ, map(is_, befores, repeat(None))))
        added = len(new)
        dirty = bool(new)  # rows added, changed or gone: the column widths may move
        deferred = 0
        if new:  # those measured ahead (or before a filter hid them) bring their widths
            knowns = list(map(measured.get, map(_ROW_KEY, new), repeat(_UNMEASURED)))
            ready = list(map(is_, map(_FIRST, knowns), new))
            arrived.extend(map(_SECOND, compress(knowns, ready)))
            waiting = len(self._later)
            arrived.extend(self._measure_new(list(compress(new, map(not_, ready)))))
            deferred = len(self._later) - waiting  # (given LATER: they arrive in turns, counted then)
        changed = cast("Iterable[tuple[Row, Row]]", compress(zip(differ, befores), befores))
        for row, before in changed:  # rows on show in another version
            if before.cells == row.cells and before.style == row.style:
                continue
            key = row.key
            dirty = True
            self._strips.pop(key, None)
            known = measured.get(key)
            if known is not None:
                left.append(known[1])
            if row.cells is LATER:  # made and measured later; zero wide till then
                self._put_measured(key, (row, self._zeros))
                self._defer([row])
                continue
            if not _fits(known, row):
                ahead = self._ahead.get(key)
                if ahead is not None:  # the version on show now takes its place there
                    if known is not None:
                        self._ahead[key] = known
                    if not _fits(ahead, row):
                        ahead = (row, self._row_widths(row))
                    known = self._put_measured(key, ahead)
                else:
                    known = self._put_measured(key, (row, self._row_widths(row, known)))
            arrived.append(known[1])
        gone_count = len(gone_keys) if spliced is not None else len(old) - (len(by_key) - added)
        recount = spliced is None and len(arrived) + 4 * gone_count > len(rows)  # widths counted afresh
        if gone_count:  # some rows went away
            dirty = True
            if recount:  # (what went is not needed for the counts: only the caches' few keys are looked at)
                for cache in (self._strips, self._sort_cache):
                    for key in [key for key in cache if key not in by_key]:
                        del cache[key]
            else:
                gone = set(gone_keys) if spliced is not None else set(filterfalse(by_key.__contains__, old))
                for cache in (self._strips, self._sort_cache):  # (both hold few keys: drawn or text-sorted rows)
                    for key in cache.keys() & gone:
                        del cache[key]
                left.extend(map(_SECOND, filter(None, map(measured.get, gone))))
        if keeping is not None:
            if dirty:
                self._evict()
            else:  # the same rows: nothing to come back to
                self._kept.remove(keeping)
        widths_changed = dirty and self._update_content_widths(
            rows, arrived, left, recount, counted=2 * (len(arrived) + deferred) > len(rows), keys=keys
        )
        self._by_key = by_key
        identical = same == len(rows) == len(by_key) and not dirty and rows == self._given  # same Rows, same order
        # rows that draw as before (the same keys, cells and styles, maybe new but equal objects: a backend
        # that rebuilds its jobs): only the lines that now draw differently are painted again (none if the
        # order is the same), not the whole table
        drawn_alike = identical or (not dirty and len(rows) == len(by_key) == len(self._given))
        self._given = rows
        if not identical:
            self._reorder()
        self._after_set(old_cursor, cursor_was_visible, top, page, widths_changed, same_rows=drawn_alike)

    def _after_set(
        self,
        old_cursor: int | None,
        cursor_was_visible: bool,
        top: int,
        page: int,
        relayout: bool,
        same_rows: bool = False,
    ) -> None:
        if self._cursor_index is None:  # its row went away: the row now in its place
            self._move_to_index(min(old_cursor or 0, len(self._rows) - 1), scroll=False)
        if relayout:
            self._relayout()
        self._update_virtual_size()
        index = self._cursor_index
        if cursor_was_visible and index is not None and not top <= index < top + page:
            self._scroll_to_index(index)
        if self._later and self._measure_in_sight():  # rows given LATER in sight: they fit as first drawn
            relayout = True
        if same_rows and not relayout and index == old_cursor and self.scroll_offset.y == top:
            self.refresh_changed_lines()
        else:
            self.refresh()

    def refresh_changed_lines(self) -> None:
        """The same rows in the same order (a refresh that changed nothing on show): only the lines that
        draw differently now (an age that ticked) are repainted, not the whole table, so that an idle
        console writes next to nothing at each refresh (issue #32)."""
        painted = self._painted
        width = self.size.width
        for y in range(self.scrollable_content_region.height):
            before = painted.get(y)
            if before is None or self.render_line(y) != before:
                self.refresh(Region(0, y, width, 1))

    def _keep(self) -> _Kept:
        """Keep the rows on show (about to go) to come back to; the measured entries of its rows that
        are written over meanwhile are saved in it (``_put_measured``)."""
        kept = _Kept(self)
        self._kept.append(kept)
        return kept

    def _evict(self) -> None:
        if len(self._kept) > KEEP_SETS:  # the smallest goes (the unfiltered rows are the most costly)
            evicted = min(self._kept, key=lambda kept: len(kept.given))
            self._kept.remove(evicted)
            self._drop_later(evicted)

    def _drop_later(self, *garbage: object) -> None:
        """Let go of big structures replaced (a kept set evicted, the keyed rows of a set left)
        after the screen is painted: freeing 100k rows' dict entries touches every row (5-15 ms at
        100,000 rows), which the key that replaced them need not wait for."""
        if not self._litter:
            self.set_timer(DROP_SECONDS, self._litter.clear)
        self._litter.extend(garbage)

    def _put_measured(self, key: str, known: _Measured) -> _Measured:
        """``_measured[key] = known``, the entry it replaces saved first in each kept set."""
        measured = self._measured
        if self._kept:
            before = measured.get(key)
            if before is not None and before is not known:
                for kept in self._kept:
                    kept.saved.setdefault(key, before)
        measured[key] = known
        return known

    def _kept_for(self, rows: list[Row]) -> _Kept | None:
        """A kept set that ``rows`` are: the very same ``Row`` objects in the same order (in C)."""
        for kept in self._kept:
            if len(kept.given) == len(rows) and kept.given is not self._given and all(map(is_, kept.given, rows)):
                return kept
        return None

    def _come_back(self, kept: _Kept) -> None:
        """Show a kept set again: its keyed rows, width counts and order as they were; only the rows
        whose measured entries were written over meanwhile are looked at, and the caches' few keys."""
        old = self._by_key
        self._kept.remove(kept)
        by_key = kept.by_key
        if len(old) >= KEEP_ROWS:  # the rows on show now, to come back to in turn
            self._keep()
            self._evict()
        for cache in (self._strips, self._sort_cache):  # (few keys: drawn or text-sorted rows)
            for key in [key for key in cache if by_key.get(key) is not old.get(key)]:
                del cache[key]
        strips = self._strips  # the lines its rows had (the very same rows) come back with them
        for key in kept.strips.keys() - strips.keys():
            strips[key] = kept.strips[key]
        measured, ahead = self._measured, self._ahead
        if kept.measured is measured:
            saved = kept.saved
            suspects: Iterable[Row] = filter(None, map(by_key.get, saved))
        else:  # measured entries were dropped meanwhile (see _update_content_widths): every row
            saved = {}
            suspects = kept.given
        for row in suspects:
            known = measured.get(row.key)
            if known is not None and known[0] is row:
                continue
            before = saved.get(row.key)
            if _fits(before, row):
                known = before
            elif not _fits(known, row):
                turn = ahead.get(row.key)
                if _fits(turn, row):
                    if known is not None:  # the two versions take turns
                        ahead[row.key] = known
                    known = turn
                else:
                    known = (row, self._row_widths(row))
            self._put_measured(row.key, known if known[0] is row else (row, known[1]))
        self._by_key, self._given = by_key, kept.given
        counts = kept.counts
        if counts is None:
            self._width_counts = None
            self._update_content_widths(kept.given, [], [], recount=True, counted=False)
        else:
            self._width_counts = [Counter(c) for c in counts]
            self._content_widths = [max((w for w, n in c.items() if n > 0), default=0) for c in counts]
        if kept.order != (self.sort_column, self.sort_reverse):
            self._reorder()
            return
        self._rows, self._index = kept.rows, None  # the order it had, for the sort still in force
        cursor = by_key.get(self._cursor_key) if self._cursor_key is not None else None
        self._cursor_index = self._rows.index(cursor) if cursor is not None else None

    def _splice(self, rows: list[Row], old: dict[str, Row]) -> tuple[dict[str, Row], list[Row], list, list[str]] | None:
        """When ``rows`` are the rows on show with one run replaced (the same ``Row`` objects before
        and after it, found in C): the keyed rows patched in place, the new run's rows that differ
        from the old, their old versions (or None) and the keys gone. None when much changed."""
        given = self._given
        n, m = len(rows), len(given)
        short = min(n, m)
        if not short or len(old) != m:
            return None
        lo = next(compress(count(), map(is_not, rows, given)), short)
        hi = next(compress(count(), map(is_not, reversed(rows), reversed(given))), short)
        hi = min(hi, short - lo)
        if (n - hi - lo) + (m - hi - lo) > max(64, short // 4):  # (before copying the runs: 100k rows, often)
            return None
        new_run, old_run = rows[lo : n - hi], given[lo : m - hi]
        was = {row.key: row for row in old_run}
        now = {row.key: row for row in new_run}
        if len(now) != len(new_run) or any(key in old and key not in was for key in now):
            raise ValueError("duplicate row keys")
        gone = [key for key in was if key not in now]
        for key in gone:
            del old[key]
        old.update(now)
        differ = [row for row in new_run if was.get(row.key) is not row]
        return old, differ, [was.get(row.key) for row in differ], gone

    def _changed(
        self, rows: list[Row], old: dict[str, Row], changes: RowChanges
    ) -> tuple[dict[str, Row], list[Row], list, list[str]] | None:
        """``_splice``'s answer from the caller's ``changes``, when they add up (the rows given last,
        less those gone, plus those new, are as many as ``rows``): the keyed rows patched in place,
        the rows put that differ from the old, their old versions (or None) and the keys gone."""
        put = changes.put
        if not old or len(old) != len(self._given):
            return None
        put_keys = list(map(_ROW_KEY, put))
        befores = list(map(old.get, put_keys))
        named = set(put_keys)
        gone = [key for key in changes.gone if key in old and key not in named]
        if len(named) != len(put) or len(old) - len(gone) + befores.count(None) != len(rows):
            return None
        if self.check_changes:
            self._check_changes(rows, old, put, gone)
        for key in gone:
            del old[key]
        moved = list(map(is_not, befores, put))
        differ = list(compress(put, moved))
        old.update(zip(map(_ROW_KEY, differ), differ))
        return old, differ, list(compress(befores, moved)), gone

    def _check_changes(self, rows: list[Row], old: dict[str, Row], put: Sequence[Row], gone: list[str]) -> None:
        """What ``check_changes`` asks: the changes given are what comparing every row finds (tests)."""
        keys = {row.key for row in put}
        stale = [row.key for row in rows if row.key not in keys and old.get(row.key) is not row]
        now = {row.key for row in rows}
        missed = [key for key in old if key not in now and key not in gone]
        if stale or missed:
            raise AssertionError(f"RowChanges wrong: rows not put that differ {stale[:5]}, gone not named {missed[:5]}")

    def _measure_new(self, rows: list[Row]) -> list[tuple[int, ...]]:
        """The widths of ``rows`` (none of them measured as they are), now in ``_measured``. Few: one by
        one, each reusing what an earlier version of it measured; many: together (``_widths_of``)."""
        measured = self._measured
        later = list(map(is_, map(_CELLS, rows), repeat(LATER)))
        if any(later):  # made and measured later (``_defer``): zero wide till then, with no entry (but
            waiting = list(compress(rows, later))  # where another version has one: zeros in its place)
            for row in compress(waiting, map(is_not, map(measured.get, map(_ROW_KEY, waiting)), repeat(None))):
                self._put_measured(row.key, (row, self._zeros))
            self._defer(waiting)
            rows = list(compress(rows, map(not_, later)))
        if len(rows) < BULK:
            out = []
            for row in rows:
                known = measured.get(row.key)
                if not _fits(known, row):  # (an earlier version's widths hold for the cells it shares)
                    known = self._put_measured(row.key, (row, self._row_widths(row, known)))
                out.append(known[1])
            return out
        widths = _widths_of(rows, len(self.columns))
        self._put_all(rows, widths)
        return widths

    def _put_all(self, rows: list[Row], widths: Iterable[tuple[int, ...]]) -> None:
        """``_put_measured`` for many rows: only the entries they replace (few: most rows were never
        measured) are saved in each kept set, one by one; the rest go straight in, in C."""
        measured = self._measured
        keys = list(map(_ROW_KEY, rows))
        pairs = list(zip(rows, widths))
        if self._kept:
            for key, pair in compress(zip(keys, pairs), map(is_not, map(measured.get, keys), repeat(None))):
                self._put_measured(key, pair)
        measured.update(zip(keys, pairs))

    def measure(self, rows: Iterable[Row]) -> None:
        """Measure rows ahead of the ``set_rows`` that shows them (in idle time): these very ``Row``
        objects then cost no measuring there."""
        measured, shown, ahead = self._measured, self._by_key, self._ahead
        fresh = []
        for row in rows:
            on_show = shown.get(row.key)
            if on_show is not None:  # another version of a row on show: kept aside till it is shown
                if on_show is not row and on_show.cells != row.cells:
                    known = ahead.get(row.key)
                    if not _fits(known, row):
                        ahead[row.key] = (row, self._row_widths(row))
                continue
            if not _fits(measured.get(row.key), row):
                fresh.append(row)
        self._measure_new(fresh)

    # -- rows given with their cells LATER ------------------------------------------------------------
    def _real(self, row: Row, keep: bool = True) -> Row:
        """``row``, or for a row given ``LATER`` the row ``make_row`` makes for it (blank cells when there
        is nothing to make it from), kept while it is drawn (``keep``: rows measured in turns are not:
        ~8 MB at 50,000 rows; the owner keeps what it made, and makes it again in no time)."""
        if row.cells is not LATER:
            return row
        made = self._made.get(row.key)
        if made is not None and made[0] is row:
            return made[1]
        real = self.make_row(row) if self.make_row is not None else None
        if real is None or real.cells is LATER:
            real = row._replace(cells=("",) * len(self.columns))
        if keep:
            self._made[row.key] = (row, real)
        return real

    def _made_now(self, row: Row) -> Row:
        return self._real(row, keep=False)

    def _defer(self, rows: list[Row]) -> None:
        """Measure ``rows`` (given ``LATER``) in turns after the frame, a chunk at a time."""
        self._later.extend(rows)
        if not self._later_due:
            self._later_due = True
            self.set_timer(LATER_SECONDS, self._measure_some_later)

    def _measure_some_later(self) -> None:
        """One turn of ``_defer``; after the last, the columns take the widths found (one repaint, when
        they moved)."""
        later = self._later
        until = time.perf_counter() + LATER_BUDGET
        with collector_off(keep=True):  # (what is made lives on: no collection walks it as it grows)
            while later:  # (one chunk at least)
                chunk = later[:LATER_CHUNK]
                del later[:LATER_CHUNK]
                self._later_moved |= self._measure_later(chunk)
                if time.perf_counter() >= until:
                    break
        if later:
            self.set_timer(LATER_SECONDS, self._measure_some_later)
            return
        self._later_due = False
        if self._later_moved:
            self._later_moved = False
            if self._relayout():
                self.refresh()

    def _measure_later(self, rows: list[Row]) -> bool:
        """Make and measure those of ``rows`` (given ``LATER``) still counted zero wide, or measured in
        another version since: their widths replace the zeros where they are on show (the counts), and in
        the counts of each kept set that holds them (it comes back as it was, with no recount). True when
        the widest cells on show moved."""
        measured, shown, zeros = self._measured, self._by_key, self._zeros
        todo = []
        for row in rows:
            known = measured.get(row.key)
            if known is None or known[0] is not row or known[1] is zeros:
                todo.append(row)
        if not todo:
            return False
        widths = _widths_of(list(map(self._made_now, todo)), len(self.columns))
        arrived: list[tuple[int, ...]] = []
        left: list[tuple[int, ...]] = []
        for row, width in zip(todo, widths):
            key = row.key
            known = measured.get(key)
            if known is None or known[0] is row:  # (the entry of this very row: kept sets saved none of it)
                measured[key] = (row, width)
                if shown.get(key) is row:
                    arrived.append(width)
                    if known is not None:
                        left.append(known[1])
            else:  # another version measured since: kept sets that saved this one's entry get its widths
                for kept in self._kept:
                    saved = kept.saved.get(key)
                    if saved is not None and saved[0] is row:
                        kept.saved[key] = (row, width)
        keys = list(map(_ROW_KEY, todo))
        for kept in self._kept:  # sets kept with some of them (counted zero wide): their widths counted in
            held = list(map(is_, map(kept.by_key.get, keys), todo)) if kept.counts is not None else ()
            if any(held):
                for counter, more in zip(kept.counts or (), _tally(list(compress(widths, held)), len(self.columns))):
                    counter.update(more)
        if not arrived:
            return False
        if self._width_counts is None:  # no counts kept: widths only grow (zeros are what leave), no pass over all
            widest = list(map(max, self._content_widths, map(max, _by_column(arrived, len(self.columns)))))
            moved, self._content_widths = widest != self._content_widths, widest
            return moved
        return self._update_content_widths(self._given, arrived, left)

    def _measure_in_sight(self) -> bool:
        """The rows in sight that wait to be measured (given ``LATER``), measured now; True when the widest
        cells moved (then laid out again)."""
        top = self.scroll_offset.y
        sight = [row for row in self._rows[top : top + self._page_height() + 1] if row.cells is LATER]
        if not sight or not self._measure_later(sight):
            return False
        self._relayout()
        return True

    def move_cursor_to_key(self, key: str) -> bool:
        """Put the cursor on ``key`` (scrolling it into view); False when there is no such row."""
        index = self._cursor_index if key == self._cursor_key else self._key_index(key)
        if index is None:
            return False
        self._move_to_index(index)
        return True

    def sort_by(self, column: str | None, reverse: bool = False) -> None:
        """Sort by ``column`` (None: the order ``set_rows`` gave); the cursor stays on its row."""
        if column is not None:
            self._column_index(column)  # KeyError for an unknown column
        self.sort_column, self.sort_reverse = column, reverse
        self._sort_cache.clear()
        self._header = None
        self._reorder()
        self._relayout()  # the sorted column's label has a mark now
        if self._cursor_index is not None:
            self._scroll_to_index(self._cursor_index)
        self.refresh()

    def cycle_sort(self) -> None:
        """Sort by the next column (from the given order, the first), keeping the direction."""
        keys = [c.key for c in self.columns]
        index = keys.index(self.sort_column) + 1 if self.sort_column in keys else 0
        self.sort_by(keys[index % len(keys)], self.sort_reverse)

    def reverse_sort(self) -> None:
        """Flip the direction (sorting by the first column if nothing was sorted)."""
        self.sort_by(self.sort_column or self.columns[0].key, not self.sort_reverse)

    # -- actions -----------------------------------------------------------------------------------
    def action_cursor_up(self) -> None:
        self._move_to_index(self.cursor_row - 1)

    def action_cursor_down(self) -> None:
        self._move_to_index(self.cursor_row + 1)

    def action_cursor_page_up(self) -> None:
        self._move_to_index(self.cursor_row - self._page_height())

    def action_cursor_page_down(self) -> None:
        self._move_to_index(self.cursor_row + self._page_height())

    def action_cursor_first(self) -> None:
        self._move_to_index(0)

    def action_cursor_last(self) -> None:
        self._move_to_index(len(self._rows) - 1)

    def action_select_cursor(self) -> None:
        if self._cursor_key is not None:
            self.post_message(self.RowSelected(self, self._cursor_key))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y == 0:
            column = self._column_at(offset.x + self.scroll_offset.x)
            if column is not None:
                event.stop()
                if self.sortable:
                    key = self.columns[column].key
                    self.sort_by(key, not self.sort_reverse if key == self.sort_column else False)
                self.post_message(self.HeaderSelected(self, self.columns[column].key))
            return
        index = offset.y - 1 + self.scroll_offset.y
        if 0 <= index < len(self._rows):
            event.stop()
            key = self._rows[index].key
            if key == self._cursor_key or event.chain > 1:
                self._move_to_index(index)
                self.post_message(self.RowSelected(self, key))
            else:
                self._move_to_index(index)

    # -- cursor and order --------------------------------------------------------------------------
    def _page_height(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def _move_to_index(self, index: int, scroll: bool = True) -> None:
        if not self._rows:
            self._cursor_index = None
            if self._cursor_key is not None:
                self._cursor_key = None
                self.post_message(self.RowHighlighted(self, None))
            return
        index = max(0, min(index, len(self._rows) - 1))
        key = self._rows[index].key
        if key != self._cursor_key:  # (the cursor is in each drawn line's signature)
            old = self._cursor_index
            self._cursor_key = key
            self._refresh_row(old)
            self._refresh_row(index)
            self.post_message(self.RowHighlighted(self, key))
        self._cursor_index = index
        if scroll:
            self._scroll_to_index(index)

    def _refresh_row(self, index: int | None) -> None:
        if index is not None:
            self.refresh_line(index + 1)

    def _scroll_to_index(self, index: int) -> None:
        page = self._page_height()
        top = self.scroll_offset.y
        if index < top:
            self.scroll_to(y=index, animate=False)
        elif index >= top + page:
            self.scroll_to(y=index - page + 1, animate=False)

    def _reorder(self) -> None:
        self._rows = self._sorted(self._given)
        self._index = None
        row = self._by_key.get(self._cursor_key) if self._cursor_key is not None else None
        # (found by identity, in C: list.index would compare each row before it with ==)
        self._cursor_index = (
            next(compress(count(), map(is_, self._rows, repeat(row))), None) if row is not None else None
        )

    def _key_index(self, key: str) -> int | None:
        if self._index is None:
            self._index = dict(zip(map(_ROW_KEY, self._rows), range(len(self._rows))))
        return self._index.get(key)

    def _groups(self, rows: list[Row]) -> _Groups:
        """The top rows of ``rows`` and each group's members, kept for as long as ``rows`` is the
        list given (the same list object: a refresh, a filter or a group opened gives a new one)."""
        groups = self._groups_of
        if groups is not None and groups.rows is rows:
            return groups
        present = self._by_key
        parents = list(map(_PARENT, rows))
        children: dict[str, list[Row]] = {}
        orphans = False  # rows naming a parent that is not there (or themselves): they sort as top rows
        kids = list(compress(rows, parents))
        if all(map(present.__contains__, map(_PARENT, kids))) and not any(
            map(eq, map(_PARENT, kids), map(_ROW_KEY, kids))
        ):  # (the usual case, in C: members in runs under their group, a turn per run)
            for parent, run in groupby(kids, _PARENT):
                children.setdefault(parent, []).extend(run)
        else:
            for row in kids:
                if row.parent != row.key and row.parent in present:
                    children.setdefault(row.parent, []).append(row)
                else:
                    orphans = True
        if orphans:
            top = [row for row in rows if not (row.parent and row.parent != row.key and row.parent in present)]
        else:
            top = list(compress(rows, map(not_, parents))) if children else rows
        groups = self._groups_of = _Groups(rows, top, children, orphans)
        return groups

    def _sorted(self, rows: list[Row]) -> list[Row]:
        if self.sort_column is None:
            self._groups_of = None  # (the orders kept go: unsorted, the given rows are shown as they are)
            return rows
        column = self._column_index(self.sort_column)
        cache = self._sort_cache

        def value(row: Row):
            given = row.sort
            if len(given) > column:
                return given[column]
            hit = cache.get(row.key)
            if hit is not None and hit[0] is row:
                return hit[1]
            cells = self._real(row).cells
            result = sort_value(_cell_text(cells[column]).plain if column < len(cells) else "")
            cache[row.key] = (row, result)
            return result

        previous = self._groups_of
        groups = self._groups(rows)
        top, children = groups.top, groups.children
        reverse = self.sort_reverse
        at = itemgetter(column)

        def by(keys: list) -> list[int]:
            try:
                return sorted(range(len(keys)), key=keys.__getitem__, reverse=reverse)
            except TypeError:  # sort values of mixed types: fall back to their text
                texts = [str(k) for k in keys]
                return sorted(range(len(keys)), key=texts.__getitem__, reverse=reverse)

        def ordered(group: list[Row]) -> list[Row]:
            try:
                keys = list(map(at, map(_SORT, group)))
            except IndexError:  # some rows bring no sort values: use their cells' text
                keys = [value(row) for row in group]
            return list(map(group.__getitem__, by(keys)))

        known = groups.orders.get((column, reverse))  # sorted so before, these very rows
        if known is not None:
            sorted_top = known[0]
        else:
            try:
                keys = list(map(at, map(_SORT, top)))
            except IndexError:  # some rows bring no sort values: their text, sorted afresh each time
                sorted_top = ordered(top)  # (live cells may read otherwise next time)
            else:
                other = groups.orders.get((column, not reverse))
                narrowed = self._restricted(previous, groups, column, reverse) if previous is not groups else None
                if narrowed is not None:  # a filter typed on (or the same rows in new versions): no sort
                    sorted_top = narrowed
                    groups.orders[(column, reverse)] = (sorted_top, None)
                else:
                    if other is not None and other[1] is not None and len(set(map(type, keys))) <= 1:
                        order = _flipped(keys, other[1])  # O after o: the runs of equal values in the other order
                    else:  # (mixed types sort by their text)
                        order = by(keys)
                    sorted_top = list(map(top.__getitem__, order))
                    groups.orders[(column, reverse)] = (sorted_top, array("I", order))
        if not children:
            return sorted_top
        return self._place(rows, sorted_top, {parent: ordered(kids) for parent, kids in children.items()})

    def _restricted(self, previous: _Groups | None, groups: _Groups, column: int, reverse: bool) -> list[Row] | None:
        """The top rows of ``groups`` in the order ``previous`` (the rows given before) had them sorted
        by ``column``, when every one of them was a top row there and those in a new version sort as
        they did: a stable sort of a subset is the subset of the stable sort (given orders agree), so a
        filter typed over sorted rows costs a pass, not a sort (100,000 rows: 40-60 ms). Else None."""
        known = previous.orders.get((column, reverse)) if previous is not None else None
        if known is None or groups.orphans:
            return None
        before = known[0]
        now = list(map(self._by_key.get, map(_ROW_KEY, before)))
        kept = list(filter(None, now))  # (a Row is a non-empty tuple)
        if len(kept) != len(groups.top) or any(map(_PARENT, kept)):
            return None
        was = list(compress(before, now))
        moved = list(map(is_not, kept, was))
        if any(moved):  # rows in another version: the same sort value, or not this way
            at = itemgetter(column)
            if any(map(ne, map(at, map(_SORT, compress(kept, moved))), map(at, map(_SORT, compress(was, moved))))):
                return None
        return kept

    @staticmethod
    def _place(rows: list[Row], top: list[Row], children: dict[str, list[Row]]) -> list[Row]:
        """The sorted top rows with each group's sorted members right under it (nested groups too)."""
        if not children:
            return top
        out: list[Row] = []
        if not any(map(children.__contains__, map(_ROW_KEY, chain.from_iterable(children.values())))):
            start = 0  # no member is a group itself (the usual case): each group's members in one go
            for i in compress(range(len(top)), map(children.__contains__, map(_ROW_KEY, top))):
                out.extend(top[start : i + 1])
                out.extend(children[top[i].key])
                start = i + 1
            out.extend(top[start:])
            return out
        placed: set[str] = set(map(_ROW_KEY, top))

        def place_kids(row: Row, depth: int = 0) -> None:
            for kid in children.get(row.key, ()):
                if kid.key not in placed and depth < 16:
                    out.append(kid)
                    placed.add(kid.key)
                    place_kids(kid, depth + 1)

        start = 0  # runs of top rows with no children go in whole
        for i in compress(range(len(top)), map(children.__contains__, map(_ROW_KEY, top))):
            out.extend(top[start : i + 1])
            place_kids(top[i])
            start = i + 1
        out.extend(top[start:])
        if len(out) < len(rows):  # parent cycles: keep them, after the rest
            out.extend(row for row in rows if row.key not in placed)
        return out

    # -- widths and layout -------------------------------------------------------------------------
    def _column_index(self, key: str) -> int:
        for i, column in enumerate(self.columns):
            if column.key == key:
                return i
        raise KeyError(key)

    def _row_widths(self, row: Row, known: tuple[Row, tuple[int, ...]] | None = None) -> tuple[int, ...]:
        """Each static cell's width; ``known``: an earlier version of the row and its widths, whose
        very cell objects are not measured again (a refreshed job: mostly its state is new)."""
        ncols = len(self.columns)
        if row.cells is LATER:  # (seldom: most are measured together, in turns)
            row, known = self._real(row), None
        cells = row.cells[:ncols]
        if known is not None and len(known[0].cells) >= len(cells):
            widths = tuple(w if c is o else _width(c) for c, o, w in zip(cells, known[0].cells, known[1]))
        else:
            widths = tuple(map(_width, cells))
        if len(widths) < ncols:
            widths += (0,) * (ncols - len(widths))
        return _shared_widths(widths)

    def _update_content_widths(
        self,
        rows: list[Row],
        arrived: list[tuple[int, ...]],
        left: list[tuple[int, ...]],
        recount: bool = False,
        counted: bool = True,
        keys: list[str] | None = None,
    ) -> bool:
        """The widest cell per column from each row's cached widths (no text measured here); True
        when that moved. Per column, how many rows have each width is kept: rows added or gone (a
        group opened, a refresh, a filter narrowed) update those counts; when most rows changed, they
        are all counted again (in C). ``counted=False`` (a filter narrowed: most rows went, few came): only
        each column's widest is taken, about 5x cheaper; the counts are made when next needed (a
        refresh of those rows). Widths of rows that went away are kept a while, for when they come
        back (a filter cleared), then dropped. ``keys``: ``rows``' keys, when the caller has them."""
        measured = self._measured
        counts = self._width_counts
        ncols = len(self.columns)
        if counts is not None and not recount and len(arrived) + 4 * len(left) <= len(rows):
            if arrived:
                for counter, more in zip(counts, _tally(arrived, ncols)):
                    counter.update(more)
            if left:
                for counter, fewer in zip(counts, _tally(left, ncols)):
                    counter.subtract(fewer)  # (counted first: subtract loops in Python)
            widths = [max((w for w, n in counter.items() if n > 0), default=0) for counter in counts]
        else:
            keys = keys if keys is not None else list(map(_ROW_KEY, rows))  # (``rows``' keys, when known)
            per_row = list(map(_SECOND, map(measured.get, keys, repeat(self._no_entry))))  # (none: LATER)
            if not per_row:
                counts = self._width_counts = None
                widths = [0] * ncols
            elif counted or not recount:  # (counts wanted now: a change to count in, or counts not made yet)
                counts = self._width_counts = _tally(per_row, ncols)
                widths = [max(counter) for counter in counts]
            else:
                self._width_counts = None
                widths = list(map(max, _by_column(per_row, ncols)))
        self._most_rows = max(self._most_rows, len(rows))
        if len(measured) > 2 * self._most_rows + 1024:  # many keys gone for good (jobs that ended)
            self._drop_later(measured, self._ahead)
            self._measured = {key: measured[key] for key in (keys if keys is not None else map(_ROW_KEY, rows))}
            self._ahead = {key: known for key, known in self._ahead.items() if key in self._measured}
            self._made = {key: made for key, made in self._made.items() if key in self._measured}
            self._most_rows = len(rows)
        if widths == self._content_widths:
            return False
        self._content_widths = widths
        return True

    def _natural_widths(self) -> list[int]:
        out = []
        for i, column in enumerate(self.columns):
            label = Text(column.label).cell_len + (len(SORT_MARKS[False]) if column.key == self.sort_column else 0)
            out.append(max(column.min_width, label, self._live_widths[i], self._content_widths[i]))
        return out

    def _fit_widths(self, available: int) -> tuple[list[int], frozenset[int]]:
        """Widths that fit ``available`` cells, and the columns hidden: flexible columns shrink first,
        the widest first, down to their floor; if that is not enough, columns with a ``give_way``
        rank are hidden in rank order (and the others shrink only as far as they still must)."""
        floors = {i: max(c.min_width, c.floor, Text(c.label).cell_len, 3) for i, c in enumerate(self.columns) if c.flex}
        give_way = [(c.give_way, i) for i, c in enumerate(self.columns) if c.give_way]
        return fit_widths(self._natural_widths(), floors, give_way, available, PAD)

    @property
    def hidden_columns(self) -> tuple[str, ...]:
        """Keys of the columns hidden to make room (see ``Column.give_way``)."""
        return tuple(c.key for i, c in enumerate(self.columns) if i in self._hidden)

    def _relayout(self) -> bool:
        """Column widths for the current content and width (rows' lines are cached per layout); True when
        they moved."""
        available = self.scrollable_content_region.width
        widths, hidden = self._fit_widths(available)
        layout = (tuple(widths), hidden, available)
        if layout == self._layout_key:
            return False
        self._layout_key = layout
        self._widths = widths
        self._hidden = hidden
        starts, x = [], 0
        for i, width in enumerate(widths):
            starts.append(x)
            if i not in hidden:
                x += width + 2 * PAD
        self._starts = starts
        self._header = None  # (rows' lines are kept by layout: a group opened and closed widens a column and back)
        self._update_virtual_size()
        return True

    def _total_width(self) -> int:
        return sum(w + 2 * PAD for i, w in enumerate(self._widths) if i not in self._hidden)

    def _update_virtual_size(self) -> None:
        set_virtual_size(self, Size(self._total_width(), len(self._rows) + 1))

    def _column_at(self, x: int) -> int | None:
        for i, (start, width) in enumerate(zip(self._starts, self._widths)):
            if i not in self._hidden and start <= x < start + width + 2 * PAD:
                return i
        return None

    # -- drawing -----------------------------------------------------------------------------------
    def notify_style_update(self) -> None:
        """Styles changed (a theme, or mere focus: only the cursor's style moves). Rows' lines are
        kept by the style they were painted in, and their cells' layout owes nothing to the CSS: the
        lines whose style moved are painted again as they are drawn, the others stay as they are."""
        super().notify_style_update()
        self._base_style = None
        self._header = None
        self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        self._relayout()

    def render_lines(self, crop):
        if self._layout_key is None or self._layout_key[-1] != self.scrollable_content_region.width:
            self._relayout()  # a scrollbar came or went: the width changed without a resize
        if self._later and self._measure_in_sight():  # scrolled onto rows not measured yet, wider
            self.call_later(self.refresh)  # (the lines not drawn now, in the old layout)
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        scroll_x, scroll_y = self.scroll_offset
        if y == 0:
            strip = self._header_strip()
        else:
            index = y - 1 + scroll_y
            if index >= len(self._rows):
                strip = self._painted[y] = self._blank_line(width)
                return strip
            strip = self._row_strip(index, self._rows[index])
        if scroll_x or strip.cell_length != width:
            strip = strip.crop(scroll_x, scroll_x + width).adjust_cell_length(width, self._own_style())
        self._painted[y] = strip
        return strip

    def _own_style(self) -> Style:
        """The widget's own style (rows without stripes, blank lines), looked up once until styles change:
        ``rich_style`` walks the ancestors' backgrounds, and an idle refresh draws every line below the
        last row again to see whether it changed (``refresh_changed_lines``)."""
        if self._base_style is None:
            self._base_style = self.rich_style
        return self._base_style

    def _blank_line(self, width: int) -> Strip:
        """The line below the last row, made once per width and style."""
        style = self._own_style()
        blank = self._blank
        if blank is None or blank[0] != width or blank[1] is not style:
            blank = self._blank = (width, style, Strip.blank(width, style))
        return blank[2]

    def _header_strip(self) -> Strip:
        if self._header is None:
            style = self.get_component_rich_style("vtable--header")
            cells = []
            for column in self.columns:
                label = Text(column.label)
                if column.key == self.sort_column:
                    label.append(SORT_MARKS[self.sort_reverse])
                cells.append(label)
            self._header = self._build_strip(cells, style, header=True)
        return self._header

    def _row_strip(self, index: int, row: Row) -> Strip:
        """A row's line, cached in two steps: its cells laid out in the columns (runs of text and
        the style over the line's, kept until the row, the layout or the live text changes), then
        that layout painted in the line's style (stripe or cursor: a few segments, no text looked at)."""
        if row.cells is LATER:
            row = self._real(row)
        cells = row.cells
        live = [(i, c()) for i, c in enumerate(cells) if _is_live(c)]
        if row.key == self._cursor_key:
            style = self.get_component_rich_style("vtable--cursor")
        elif self.zebra_stripes:
            style = self.get_component_rich_style("vtable--odd-row" if index % 2 else "vtable--even-row")
        else:
            style = self._own_style()
        texts = (self._layout_key, *(t.plain for _, t in live))
        drawn = self._strips.get(row.key)
        if drawn is None:
            drawn = self._strips[row.key] = {}
        laid = drawn.get(texts)
        if laid is not None:
            hit = laid[2].get(style)
            if hit is not None:
                return hit
        self.render_count += 1
        if laid is None:
            shown = cast("Sequence[str | Text]", cells)  # no live cell left after this
            if live:
                shown = list(shown)
                for i, text in live:
                    shown[i] = text
                self._note_live_widths(live)
            if len(drawn) >= 4:  # ages moved on, or layouts came and went: the old ones are no use
                drawn.clear()
            runs, total = self._lay_out(shown, Style.parse(row.style) if row.style else None)
            laid = drawn[texts] = (runs, total, {})
        painted = laid[2]
        if len(painted) >= 6:  # themes came and went: the lines of the old ones are no use
            painted.clear()
        strip = painted[style] = self._paint(laid[0], laid[1], style)
        return strip

    def _note_live_widths(self, live: list[tuple[int, Text]]) -> None:
        """Live cells are measured as they are drawn: a wider one widens its column (once)."""
        grew = False
        for i, text in live:
            if i < len(self.columns) and text.cell_len > max(self._live_widths[i], self._widths[i]):
                self._live_widths[i] = text.cell_len
                grew = True
        if grew:
            self.call_later(self._relayout_and_refresh)

    def _relayout_and_refresh(self) -> None:
        self._relayout()
        self.refresh()

    def _build_strip(
        self, cells: Sequence[str | Text], style: Style, under: Style | None = None, header: bool = False
    ) -> Strip:
        """One full-width line: each cell padded or cut (with an ellipsis) to its column's width.
        ``style``: the line's (stripe, cursor, header); ``under``: the row's own, under its cells."""
        runs, total = self._lay_out(cells, under, header)
        return self._paint(runs, total, style)

    def _paint(self, runs: list[tuple[str, Style | None]], total: int, style: Style) -> Strip:
        """Laid-out runs (``_lay_out``) in the line's ``style``, padded to the table's width."""
        segments = [Segment(text, style if over is None else style + over) for text, over in runs]
        width = max(total, self.scrollable_content_region.width)
        if width > total:
            segments.append(Segment(" " * (width - total), style))
        return Strip(segments, width)

    def _lay_out(
        self, cells: Sequence[str | Text], under: Style | None = None, header: bool = False
    ) -> tuple[list[tuple[str, Style | None]], int]:
        """Cells padded or cut (with an ellipsis) to their columns' widths, as runs of text with the
        style each puts over the line's (None: the line's own: padding, plain cells), runs of the same
        style joined; and the cells they take. Styles add up in order (line, row, column, text,
        span), so the line's style can go under them afterwards."""
        console = self.app.console
        get_style = console.get_style
        runs: list[tuple[str, Style | None]] = []
        text_run: list[str] = []  # the run being joined, and its style
        run_style: Style | None = None
        total = 0
        hidden = self._hidden
        pad = " " * PAD
        null = Style.null()

        def put(piece: str, over: Style | None) -> None:
            nonlocal run_style
            if over is not run_style and over != run_style:
                if text_run:
                    runs.append(("".join(text_run), run_style))
                    text_run.clear()
                run_style = over
            text_run.append(piece)

        for i, column in enumerate(self.columns):
            if i in hidden:
                continue
            width = self._widths[i]
            cell = cells[i] if i < len(cells) else ""
            base = under
            if column.style and not header:
                column_style = get_style(column.style, default=null)
                base = column_style if base is None else base + column_style
            pieces: list[tuple[str, Style | None]]
            if isinstance(cell, str):
                plain = strip_control_codes(cell)
                used = len(plain) if plain.isascii() else cell_len(plain)
                if used <= width:
                    pieces = [(plain, base)] if plain else []
                else:
                    cell = Text(plain)
            if not isinstance(cell, str):
                text = cell  # live cells were evaluated already
                if text.cell_len > width:
                    text = text.copy()
                    text.truncate(width, overflow="ellipsis")
                used = text.cell_len
                if text.style:  # Text.render leaves the Text's own style out when it has no spans
                    own = get_style(text.style, default=null)
                    base = own if base is None else base + own
                pieces = [
                    (s.text, base if not s.style else (s.style if base is None else base + s.style))
                    for s in text.render(console, end="")
                    if s.text
                ]
            room = width - used
            put(pad, None)
            if room and column.justify == "right":
                put(" " * room, None)
            for piece, over in pieces:
                put(piece, over)
            if room and column.justify != "right":
                put(" " * room, None)
            put(pad, None)
            total += width + 2 * PAD
        if text_run:
            runs.append(("".join(text_run), run_style))
        return runs, total
