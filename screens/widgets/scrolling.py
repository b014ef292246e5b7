"""Changing a ScrollView's virtual size without a layout of the whole screen.

Textual's ``Widget.virtual_size`` is a reactive with ``layout=True``: every change (a log line more,
a filter that shows fewer rows) lays out the whole screen again and repaints all of it, 15-40 ms
with a Queue or Logs screen on show. A ScrollView that draws itself line by line needs none of it:
its region stays the same, only its scrollbars move. So the size is set quietly and the scrollbars
are brought up to date, which lays out only when one appears or goes (their own reactives do).
"""

from __future__ import annotations

from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.widget import Widget


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
