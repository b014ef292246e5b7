"""Changing a ScrollView's virtual size without a layout of the whole screen.

Textual's ``Widget.virtual_size`` is a reactive with ``layout=True``: every change (a log line more,
a filter that shows fewer rows) lays out the whole screen again and repaints all of it, 15-40 ms
with a Queue or Logs screen on show. A ScrollView that draws itself line by line needs none of it:
its region stays the same, only its scrollbars move. So the size is set quietly and the scrollbars
are brought up to date, which lays out only when one appears or goes (their own reactives do).

``QuietScrollBar`` is a ScrollBar for such a view, for a view that grows or shrinks (the Queue's
table when the filter box shows or hides) or gains or loses the focus to be drawn in one frame.
Textual's scrollbar asked for more frames, each a frame period after the last: at every layout it is
given its view's inner size as its virtual size, a reactive that lays out the whole screen again, and
it is repainted after the layout that drew it and at every restyle of its view. Here its virtual
size (which no layout uses) asks for nothing, and it repaints only when what it draws changed.
"""

from __future__ import annotations

from rich.console import RenderableType
from textual.geometry import Region, Size
from textual.reactive import Reactive
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar
from textual.widget import Widget
from typing_extensions import Self  # typing.Self is 3.11+


class QuietScrollBar(ScrollBar):
    """Textual's ScrollBar, which lays out nothing and repaints only when what it would draw differs
    from what it drew last. A repaint asked for is looked at once what is queued for the scrollbar was
    handled, so that the frame of a layout, which draws it anyway, is seen first. (Textual's view
    repaints its scrollbars after the layout that resized them, and at every restyle, a focus change,
    whether their colours changed or not.)"""

    virtual_size: Reactive[Size] = Reactive(Size(0, 0), repaint=False)

    _drawn: tuple | None = None  # what it was drawn from last
    _asked: tuple | None = None  # what it was last repainted for, until drawn
    _settling = False

    def _drawing(self) -> tuple:
        """All that ``render`` draws from."""
        parent = self.parent
        assert isinstance(parent, Widget)
        styles = parent.styles
        return (
            self.size,
            self.window_virtual_size,
            self.window_size,
            self.position,
            self.thickness,
            self.grabbed,
            self.mouse_over,
            styles.scrollbar_background,
            styles.scrollbar_background_hover,
            styles.scrollbar_background_active,
            styles.scrollbar_color,
            styles.scrollbar_color_hover,
            styles.scrollbar_color_active,
            parent.background_colors,
            self.screen.styles.scrollbar_color,
        )

    def render(self) -> RenderableType:
        self._drawn, self._asked = self._drawing(), None
        return super().render()

    def refresh(self, *regions: Region, repaint: bool = True, layout: bool = False, recompose: bool = False) -> Self:
        """A repaint, once what is queued was handled and only if what it draws changed. A layout it
        asks for (its own styles set, the first time its view is restyled) is one too: its view places
        it, whatever its own styles say."""
        if regions or recompose or not self.is_mounted:
            return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)
        if (repaint or layout) and not self._settling:
            self._settling = self.call_later(self._settle)  # (False: closing, nothing to paint)
        return self

    def _settle(self) -> None:
        self._settling = False
        if self._drawn is None or not isinstance(self.parent, Widget):
            super().refresh()
            return
        drawing = self._drawing()
        if drawing != self._drawn and drawing != self._asked:  # (asked: a repaint on its way already)
            self._asked = drawing
            super().refresh()


def quiet_scrollbar(view: Widget, vertical: bool) -> ScrollBar:
    """``view``'s scrollbar, made a ``QuietScrollBar`` when first asked for (a view's
    ``vertical_scrollbar`` and ``horizontal_scrollbar`` overridden with this)."""
    bar = view._vertical_scrollbar if vertical else view._horizontal_scrollbar
    if bar is None:
        if vertical:
            bar = view._vertical_scrollbar = QuietScrollBar(
                vertical=True, name="vertical", thickness=view.scrollbar_size_vertical
            )
        else:
            bar = view._horizontal_scrollbar = QuietScrollBar(
                vertical=False, name="horizontal", thickness=view.scrollbar_size_horizontal
            )
        bar.display = False
        view.app._start_widget(view, bar)
    return bar


class QuietScrollView(ScrollView):
    """A ScrollView whose scrollbars are ``QuietScrollBar``: growing, shrinking (a filter box shown or
    hidden above it) or changing focus, it is drawn in one frame, not again a frame later for them."""

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        return quiet_scrollbar(self, vertical=True)

    @property
    def horizontal_scrollbar(self) -> ScrollBar:
        return quiet_scrollbar(self, vertical=False)


def set_virtual_size(view: ScrollView, size: Size) -> None:
    """``view.virtual_size = size``, with no layout unless a scrollbar comes or goes."""
    if size == view.virtual_size:
        return
    view.set_reactive(Widget.virtual_size, size)
    if view.is_mounted and view.container_size:
        view._scroll_update(size)  # scrollbars (shown or not, their thumb) and the scroll offsets clamped
    else:
        view.refresh(layout=True)  # before its first layout: the usual way
    view.refresh()
