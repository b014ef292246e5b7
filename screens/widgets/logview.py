"""``LogView``: a line-API log widget that reads from a ``LogStore``.

Only the visible lines are read and rendered, so appending a batch costs O(batch) whatever the log's
length. It follows the tail, highlights the search term (and the current match's line), and wraps
long lines on demand. Lines arrive already cleaned (``sanitize.clean``) and are shown as plain
``rich.text.Text``: never markup.

Wrapping: only visible lines are wrapped. The vertical scroll range is then an estimate (the store
keeps line widths bucketed by 16 cells, ``LogStore.wrapped_rows``) and the position is an anchor,
(line, row within the line): small scrolls move the anchor row by row exactly, big jumps (a
scrollbar drag) land on the proportional line, and the ends are exact (top, and bottom, which is
laid out backwards from the last line).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from math import ceil
from re import Pattern

from rich.cells import cell_len, chop_cells
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import work
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import Reactive
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar
from textual.strip import Strip
from textual.widget import Widget

from yanflow_tui.logstore import LogStore, match_lines
from yanflow_tui.screens.failures import ForwardFailures
from yanflow_tui.screens.widgets.scrolling import set_virtual_size

MAX_MATCHES = 100_000  # match positions kept per view; beyond, n/N cycle through these
SYNC_LINES = 50_000  # a store this small, all in memory, is searched on the event loop
CHOP = 1024  # a no-wrap line is rendered up to the next multiple of this many characters past the view
STRIP_CACHE = 256  # rendered lines kept (a few screens' worth: each Strip carries its own caches)


class TailScrollBar(ScrollBar):
    """A ScrollBar that repaints only when its thumb moves on screen (in eighths of a cell).

    Textual's repaints on every change of the scroll range or position: a log growing by a batch of
    lines 20 times a second redrew it each time (as many rows as the view, about as dear as the
    view's own lines), though the thumb of a followed log sits still at the bottom."""

    window_virtual_size: Reactive[int] = Reactive(100, repaint=False)
    window_size: Reactive[int] = Reactive(0, repaint=False)
    position: Reactive[float] = Reactive(0, repaint=False)

    _drawn: tuple | None = None
    _settling = False

    def thumb(self) -> tuple:
        """Where ``ScrollBarRender.render_bar`` puts the thumb, in eighths of a cell (what it draws)."""
        size = self.size.height if self.vertical else self.size.width
        virtual, window, position = self.window_virtual_size, self.window_size, self.position
        if not (window and size and virtual and size != virtual) or virtual <= window:
            return (size, virtual, window, position)
        thumb = max(1, window / (virtual / size))
        start = int((size - thumb) * (position / (virtual - window)) * 8)
        return (size, start, start + ceil(thumb * 8))

    def _moved(self) -> None:
        # The range and the position change one after the other (a batch of lines, then the scroll to
        # the new end): look once they have all been set, not at each one.
        if not self._settling:
            self._settling = True
            self.call_later(self._settle)

    def _settle(self) -> None:
        self._settling = False
        drawn = self.thumb()
        if drawn != self._drawn:
            self._drawn = drawn
            self.refresh()

    def watch_window_virtual_size(self) -> None:
        self._moved()

    def watch_window_size(self) -> None:
        self._moved()

    def watch_position(self) -> None:
        self._moved()


class LogView(ForwardFailures, ScrollView, can_focus=True):
    """Shows one ``LogStore``. The owner calls ``lines_added`` after appending to the store."""

    COMPONENT_CLASSES = {"logview--match", "logview--current-match", "logview--current-line"}

    class Changed(Message):
        """The view's search state or position changed (the screen redraws its status line)."""

        def __init__(self, view: LogView) -> None:
            super().__init__()
            self.view = view

    def __init__(
        self,
        store: LogStore,
        *,
        wrap: bool = False,
        following: bool = True,
        pattern: Pattern[str] | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.store = store
        self.wrap = wrap
        self.following = following
        self.pattern = pattern  # searched for once mounted
        self.error_line: int | None = None  # the last error line jumped to (the screen's e/E)
        self.matches = array("Q")  # line numbers matching ``pattern``, in order
        self.match_index = -1
        self.matches_capped = False
        self.scanning = False  # a search of the whole store is running in a thread
        self.current_line: int | None = None  # the current match (or error) line, marked
        self._known = 0  # len(store) when last told
        self._scanned = 0  # lines [0, _scanned) are searched for ``pattern``
        self._generation = 0  # bumps on every new search; stale thread results are dropped
        self._jump_on_scan = False
        self._strips: LRUCache[tuple, Strip | list[Strip]] = LRUCache(STRIP_CACHE)  # a line, or its wrapped rows
        self._top: tuple[int, int] | None = None  # wrap mode: (line, row) at the top; None: the bottom
        self._layout_key: tuple | None = None
        self._layout: list[tuple[int, int]] = []
        self._quiet = False  # we move scroll_y ourselves (not the user): anchor and follow mode are set
        self._frame: tuple[int, Style] | None = None  # (width, base style) while one frame renders
        self.set_class(wrap, "-wrap")

    def on_mount(self) -> None:
        self._known = len(self.store)
        self._update_virtual_size()
        if self.pattern is not None:
            self._catch_up(self._generation)
        if self.following:
            self._stick_to_end()

    # -- what other parts call ---------------------------------------------------------------------
    def lines_added(self, lines: list[str] | None = None) -> None:
        """The store grew by ``lines`` (its last lines). O(len(lines))."""
        if not self.is_mounted:
            return  # on_mount catches up
        store = self.store
        start, total = self._known, len(store)
        if total == start:
            return
        self._known = total
        if self.pattern is not None and not self.matches_capped and self._scanned == start:
            if lines is not None and len(lines) == total - start:
                found = array("Q")
                self.matches_capped = match_lines(
                    self.pattern, "\n".join(lines), start, start, total, found, MAX_MATCHES - len(self.matches)
                )
                self.matches.extend(found)
                self._scanned = total
                if found:
                    self.post_message(self.Changed(self))
            else:
                self._catch_up(self._generation)
        self._update_virtual_size(repaint=False)
        if self.wrap:
            if self.following:  # (scrolling up pauses it, so following means sitting at the end)
                self._stick_to_end()
            self.refresh()
            return
        if self.following:  # the view scrolls to the new tail: scrolling repaints it all
            self._stick_to_end()
        # Lines already drawn stay as they are: repaint only the new lines that are on screen (a view
        # not yet full, or paused at the end), none when they land below the view.
        top = round(self.scroll_offset.y)
        height = self.scrollable_content_region.height
        first, stop = max(start, top), min(total, top + height)
        if first < stop:
            self.refresh_lines(first, stop - first)

    def set_store(self, store: LogStore) -> None:
        """Show another store (a rank filter changed); the search and position start over."""
        self.store = store
        self._known = len(store)
        self._strips.clear()
        self._top = None
        self.error_line = None
        self.set_pattern(self.pattern)
        self._update_virtual_size()
        if self.following:
            self._stick_to_end()
        else:
            self._quiet_scroll(0)
        self.refresh()

    def set_following(self, following: bool) -> None:
        self.following = following
        if following:
            self._stick_to_end()
        self.post_message(self.Changed(self))

    def set_wrap(self, wrap: bool) -> None:
        """Wrap long lines (or not), keeping the top line in view."""
        if wrap == self.wrap:
            return
        top = self.top_line
        at_end = self._top is None if self.wrap else self.is_vertical_scroll_end
        self.wrap = wrap
        self.set_class(wrap, "-wrap")
        self._strips.clear()
        self._top = None if at_end else (top, 0)
        self._update_virtual_size()
        if at_end:
            self._stick_to_end()
        else:
            self.go_to_line(top, center=False)
        self.refresh()

    def set_pattern(self, pattern: Pattern[str] | None, jump: bool = False) -> None:
        """Highlight ``pattern`` and collect its matches (in a thread when the store is big or spilled).
        With ``jump``, go to the first match once known."""
        self._generation += 1
        self.pattern = pattern
        self.matches = array("Q")
        self.match_index = -1
        self.matches_capped = False
        self.current_line = None
        self._scanned = 0
        self._jump_on_scan = jump and pattern is not None
        self._strips.clear()
        self.refresh()
        if pattern is None:
            self.scanning = False
            self._scanned = len(self.store)
        else:
            self._catch_up(self._generation)
        self.post_message(self.Changed(self))

    def jump_match(self, step: int) -> int | None:
        """Go to the next (``step`` 1) or previous (-1) match, wrapping around; its line, or None."""
        if not self.matches:
            return None
        self.match_index = (self.match_index + step) % len(self.matches)
        line = self.matches[self.match_index]
        self.mark_line(line)
        self.post_message(self.Changed(self))
        return line

    def mark_line(self, line: int | None) -> None:
        """Mark ``line`` as the current one and bring it into view; looking at it pauses the tail."""
        self.current_line = line
        self._strips.clear()
        if line is not None:
            self.following = False
            self.go_to_line(line)
        self.refresh()

    def find(self, pattern: Pattern[str], start: int, direction: int, done: Callable[[int | None], None]) -> None:
        """Find the first line matching ``pattern`` from ``start`` forwards (``direction`` 1) or
        backwards (-1); ``done(line or None)`` runs on the event loop. Big stores are read in a thread."""
        store = self.store
        if self._small():
            done(store.search(pattern, start, direction))
        else:
            self._find_in_thread(store, pattern, start, direction, done)

    def go_to_line(self, line: int, center: bool = True) -> None:
        """Scroll so that ``line`` is in view (a third of the way down with ``center``)."""
        total = len(self.store)
        if total == 0:
            return
        line = max(0, min(line, total - 1))
        height = max(1, self.scrollable_content_region.height)
        lift = height // 3 if center else 0
        if not self.wrap:
            self._quiet_scroll(max(0, line - lift))
            return
        top = self._move((line, 0), -lift)
        bottom = self._bottom_top()
        self._top = None if top is None or top >= bottom else top
        if self._top is None:
            self._quiet_scroll(self.max_scroll_y)
        else:
            estimate = round(self._top[0] / total * self.max_scroll_y)
            self._quiet_scroll(max(1 if self._top > (0, 0) else 0, min(estimate, self.max_scroll_y - 1)))
        self.refresh()

    @property
    def top_line(self) -> int:
        """The line at the top of the view."""
        if not self.wrap:
            return min(round(self.scroll_offset.y), max(0, len(self.store) - 1))
        layout = self._visible_rows()
        return layout[0][0] if layout else 0

    def copy_lines(self) -> list[str]:
        """What ``y`` copies: the marked line (a search match, an error), else the lines in view."""
        if self.current_line is not None:
            return [self._text(self.current_line)]
        top = self.top_line
        height = max(1, self.scrollable_content_region.height)
        return [self._text(line) for line in range(top, min(len(self.store), top + height))]

    def row_count(self, line: int) -> int:
        """How many screen rows ``line`` takes (1 unless wrapping)."""
        if not self.wrap:
            return 1
        return len(self._cuts(self._text(line)))

    # -- search plumbing ---------------------------------------------------------------------------
    def _small(self) -> bool:
        return self.store.spilled == 0 and len(self.store) <= SYNC_LINES

    def _catch_up(self, generation: int) -> None:
        """Search the lines not searched yet: here when they are few and in memory, else in a thread."""
        if generation != self._generation or self.pattern is None:
            return
        store, start, stop = self.store, self._scanned, len(self.store)
        if self.matches_capped or start >= stop:
            self._scan_finished()
            return
        if start >= store.spilled and stop - start <= SYNC_LINES:
            found = store.find_all(self.pattern, start, stop, MAX_MATCHES - len(self.matches))
            self._scan_done(generation, found, stop)
        else:
            self.scanning = True
            self._scan(generation, store, self.pattern, start, stop, MAX_MATCHES - len(self.matches))

    @work(thread=True, group="log-scan", exit_on_error=False)
    def _scan(self, generation: int, store: LogStore, pattern: Pattern[str], start: int, stop: int, limit: int) -> None:
        try:
            found = store.find_all(pattern, start, stop, limit)
        except (OSError, ValueError):
            found = array("Q")
        try:
            self.app.call_from_thread(self._scan_done, generation, found, stop)
        except RuntimeError:  # the app is gone
            pass

    def _scan_done(self, generation: int, found: array, upto: int) -> None:
        if generation != self._generation:
            return
        self.matches.extend(found)
        self.matches_capped = len(self.matches) >= MAX_MATCHES
        self._scanned = upto
        if upto < len(self.store) and not self.matches_capped:
            self._catch_up(generation)
            return
        self._scan_finished()

    def _scan_finished(self) -> None:
        self.scanning = False
        self._scanned = len(self.store)
        if self._jump_on_scan and self.matches:
            self._jump_on_scan = False
            self.jump_match(1)
        self.post_message(self.Changed(self))

    @work(thread=True, group="log-find", exclusive=True, exit_on_error=False)
    def _find_in_thread(
        self, store: LogStore, pattern: Pattern[str], start: int, direction: int, done: Callable[[int | None], None]
    ) -> None:
        try:
            line = store.search(pattern, start, direction)
        except (OSError, ValueError):
            line = None
        if store is self.store:
            try:
                self.app.call_from_thread(done, line)
            except RuntimeError:  # the app is gone
                pass

    # -- sizes and scrolling -------------------------------------------------------------------------
    def _update_virtual_size(self, repaint: bool = True) -> None:
        """The scroll range from the store's length (or wrapped rows) and widest line: O(1), no layout.
        Without ``repaint`` only the scrollbars are redrawn (the caller repaints the lines it changed)."""
        store = self.store
        if self.wrap:
            width = self._wrap_width()
            size = Size(width, store.wrapped_rows(width))
        else:
            size = Size(store.widest, len(store))
        if not repaint and self.is_mounted and self.container_size:
            if size != self.virtual_size:
                self.set_reactive(Widget.virtual_size, size)
                self._scroll_update(size)  # the scrollbars (shown or not, their thumb) and the offsets clamped
            return
        set_virtual_size(self, size)

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        """Textual's, as a ``TailScrollBar`` (repainted only when its thumb moves)."""
        if self._vertical_scrollbar is None:
            bar = self._vertical_scrollbar = TailScrollBar(
                vertical=True, name="vertical", thickness=self.scrollbar_size_vertical
            )
            bar.display = False
            self.app._start_widget(self, bar)
        return self._vertical_scrollbar

    def _scroll_update(self, virtual_size: Size) -> None:
        """Textual's, less its repaint of the vertical scrollbar: a ``TailScrollBar`` repaints itself
        when its thumb moves (and a layout repaints it anyway)."""
        self._refresh_scrollbars()
        width, height = self.container_size
        if self.show_vertical_scrollbar and self.styles.scrollbar_size_vertical:
            self.vertical_scrollbar.window_virtual_size = virtual_size.height
            self.vertical_scrollbar.window_size = height - self.scrollbar_size_horizontal
        if self.show_horizontal_scrollbar and self.styles.scrollbar_size_horizontal:
            self.horizontal_scrollbar.window_virtual_size = virtual_size.width
            self.horizontal_scrollbar.window_size = width - self.scrollbar_size_vertical
            self.horizontal_scrollbar.refresh()
        self.scroll_x = self.validate_scroll_x(self.scroll_x)
        self.scroll_y = self.validate_scroll_y(self.scroll_y)

    def _wrap_width(self) -> int:
        """Cells per wrapped row (0 before the first layout)."""
        return self._width_and_style()[0] if self._frame else self.scrollable_content_region.width

    def _stick_to_end(self) -> None:
        if self.wrap:
            self._top = None
            self._quiet_scroll(self.max_scroll_y)
            self.refresh()
        else:
            self._quiet_scroll(self.max_scroll_y)

    def _quiet_scroll(self, y: int) -> None:
        """Scroll without it counting as the user's scroll."""
        self._quiet = True
        try:
            self.scroll_to(y=y, animate=False)
        finally:
            self._quiet = False

    def on_resize(self) -> None:
        self._strips.clear()
        if self.wrap:
            at_end = self._top is None
            self._update_virtual_size()
            if at_end:
                self._stick_to_end()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        old, new = round(old_value), round(new_value)
        if not self._quiet and old != new:  # the user scrolled
            if self.wrap:
                self._anchor_moved(old, new)
            at_end = new >= self.max_scroll_y
            if self.following and new < old and not at_end:  # scrolling up pauses the tail...
                self.following = False
                self.post_message(self.Changed(self))
            elif not self.following and new > old and at_end:  # ...and scrolling back down to it resumes
                self.following = True
                self.post_message(self.Changed(self))
        super().watch_scroll_y(old_value, new_value)

    def _anchor_moved(self, old: int, new: int) -> None:
        """Wrap mode: turn a change of scroll_y into a new (line, row) anchor."""
        total = len(self.store)
        height = max(1, self.scrollable_content_region.height)
        maximum = self.max_scroll_y
        if total == 0 or new >= maximum:
            self._top = None
        elif new <= 0:
            self._top = (0, 0)
        elif abs(new - old) <= 2 * height:
            top = self._move(self._top if self._top is not None else self._bottom_top(), new - old)
            self._top = None if top is None or top >= self._bottom_top() else top
        else:
            self._top = (min(total - 1, total * new // max(1, maximum)), 0)
        self.refresh()

    def _move(self, top: tuple[int, int], delta: int) -> tuple[int, int] | None:
        """The anchor ``delta`` screen rows below (or above) ``top``; None past the end."""
        line, row = top
        total = len(self.store)
        while delta > 0:
            step = min(delta, self.row_count(line) - 1 - row)
            row += step
            delta -= step
            if delta == 0:
                break
            if line + 1 >= total:
                return None
            line, row, delta = line + 1, 0, delta - 1
        while delta < 0:
            step = min(-delta, row)
            row -= step
            delta += step
            if delta == 0:
                break
            if line == 0:
                break
            line = line - 1
            row, delta = self.row_count(line) - 1, delta + 1
        return line, row

    def _bottom_top(self) -> tuple[int, int]:
        rows = self._bottom_rows()
        return rows[0] if rows else (0, 0)

    def _bottom_rows(self) -> list[tuple[int, int]]:
        """The (line, row) of each screen row when the last line sits at the bottom."""
        height = max(1, self.scrollable_content_region.height)
        lines: list[tuple[int, int]] = []
        filled = 0
        line = len(self.store) - 1
        while line >= 0 and filled < height:
            count = self.row_count(line)
            lines.append((line, count))
            filled += count
            line -= 1
        rows = [(i, row) for i, count in reversed(lines) for row in range(count)]
        return rows[-height:]

    def _visible_rows(self) -> list[tuple[int, int]]:
        """Wrap mode: the (line, row) shown on each screen row, laid out for this frame."""
        height = max(1, self.scrollable_content_region.height)
        key = (self._top, self._wrap_width(), height, len(self.store), self.store)
        if key == self._layout_key:
            return self._layout
        rows: list[tuple[int, int]] = []
        if self._top is not None:
            line, row = self._top
            total = len(self.store)
            while len(rows) < height and line < total:
                rows.extend((line, r) for r in range(row, self.row_count(line)))
                line, row = line + 1, 0
            if len(rows) < height and self._top > (0, 0):  # ran out of lines: show a full last screen
                rows = self._bottom_rows()
        else:
            rows = self._bottom_rows()
        self._layout_key, self._layout = key, rows[:height]
        return self._layout

    # -- rendering ---------------------------------------------------------------------------------
    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()

    def _text(self, line: int) -> str:
        try:
            return self.store.get(line)
        except IndexError:
            return ""
        except (OSError, ValueError) as exc:  # the spill file went away under us
            return f"<line {line} unreadable: {exc}>"

    def _cuts(self, text: str) -> list[int]:
        """Character offsets where each wrapped row of ``text`` starts."""
        width = max(1, self._wrap_width())
        if text.isascii():
            return list(range(0, max(1, len(text)), width))
        cuts, pos = [], 0
        for piece in chop_cells(text, width) or [""]:
            cuts.append(pos)
            pos += len(piece)
        return cuts

    def _styled(self, line: int, text: str) -> Text:
        out = Text(text, style=self._line_style(line), no_wrap=True, end="")
        if self.pattern is not None:
            name = "logview--current-match" if line == self.current_line else "logview--match"
            style = self.get_component_rich_style(name, partial=True)
            for match in self.pattern.finditer(text):
                if match.end() > match.start():
                    out.stylize(style, match.start(), match.end())
        return out

    def _line_style(self, line: int) -> Style:
        if line == self.current_line:
            return self.get_component_rich_style("logview--current-line")
        return self._width_and_style()[1]

    def render_lines(self, crop: Region) -> list[Strip]:
        # Work out the width and base style once per frame, not once per line (both walk the DOM).
        self._frame = (self.scrollable_content_region.width, self.rich_style)
        try:
            return super().render_lines(crop)
        finally:
            self._frame = None

    def _width_and_style(self) -> tuple[int, Style]:
        return self._frame or (self.scrollable_content_region.width, self.rich_style)

    def render_line(self, y: int) -> Strip:
        width, base = self._width_and_style()
        if self.wrap:
            rows = self._visible_rows()
            if y >= len(rows):
                return Strip.blank(width, base)
            line, row = rows[y]
            strips = self._wrapped(line)
            strip = strips[row] if row < len(strips) else Strip.blank(0)
            return strip.crop_extend(0, width, self._line_style(line))
        scroll_x, scroll_y = self.scroll_offset
        line = scroll_y + y
        if line >= len(self.store):
            return Strip.blank(width, base)
        limit = (scroll_x + width) // CHOP * CHOP + CHOP
        key = (line, limit)
        cached = self._strips.get(key)
        if isinstance(cached, Strip):
            strip = cached
        else:
            text = self._text(line)
            if len(text) > limit:
                text = text[: limit + (len(self.pattern.pattern) if self.pattern is not None else 0)]
            if self.pattern is None:  # what ``Text.render`` yields for text without spans, made directly
                strip = Strip([Segment(text)], cell_len(text))
            else:
                styled = self._styled(line, text)
                strip = Strip(styled.render(self.app.console), styled.cell_len)
            self._strips[key] = strip
        return strip.crop_extend(scroll_x, scroll_x + width, self._line_style(line))

    def _wrapped(self, line: int) -> list[Strip]:
        key = (line, "wrap", self._wrap_width())
        strips = self._strips.get(key)
        if not isinstance(strips, list):
            text = self._text(line)
            styled = self._styled(line, text)
            cuts = self._cuts(text)
            parts = styled.divide(cuts[1:]) if len(cuts) > 1 else [styled]
            console = self.app.console
            strips = [Strip(part.render(console), part.cell_len) for part in parts]
            self._strips[key] = strips
        return strips
