"""The ``/`` filter box of the Queue and Nodes screens: an ``Input`` that costs one frame per keystroke.

Textual's ``Input`` sets its virtual size on every keystroke, a reactive that lays out the whole
screen (15-40 ms with a big Queue); the box's own size never depends on its text (the screens'
stylesheets: fixed height, full width), so here that size only repaints the box.

Its text is applied (``apply``) in the box's own turn, before the box asks to be repainted: the rows
the keystroke filtered are then ready in the frame that draws the character. Handled by the screen
(``Input.Changed``, a message later), the box was painted alone first and the rows a frame after it,
17-33 ms later (Textual paints a frame as soon as the screen is idle, the next one no sooner than a
frame period after).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import Input


class FilterBox(Input):
    """An ``Input`` whose text is applied as it changes (``apply``), laying nothing out."""

    virtual_size: Reactive[Size] = Reactive(Size(0, 0))

    def __init__(self, apply: Callable[[str], None], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._apply = apply

    def watch_value(self, value: str) -> None:
        self._apply(value)
