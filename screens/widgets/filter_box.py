"""The ``/`` filter box of the Queue and Nodes screens: an ``Input`` that costs one frame per keystroke.

Textual's ``Input`` sets its virtual size on every keystroke, a reactive that lays out the whole
screen (15-40 ms with a big Queue); the box's own size never depends on its text (the screens'
stylesheets: fixed height, full width), so here that size only repaints the box.

Its text is applied (``apply``) in the box's own turn, before the box asks to be repainted: the rows
the keystroke filtered are then ready in the frame that draws the character. Handled by the screen
(``Input.Changed``, a message later), the box was painted alone first and the rows a frame after it,
17-33 ms later (Textual paints a frame as soon as the screen is idle, the next one no sooner than a
frame period after).

Where it shows (``app.tcss``): opened with ``/`` it takes the footer's line at the bottom, as htop's
filter and less's search do, so the table above it neither moves nor repaints (at the top it pushed
every row down a line and the whole screen was written again: 40-70 ms at 200x50, issue #32). Kept
after Enter it sits above the footer (``-kept``), which comes back with the keys.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import Input

from yanflow_tui.screens.widgets.footer import Footer


class FilterBox(Input):
    """An ``Input`` whose text is applied as it changes (``apply``), laying nothing out."""

    virtual_size: Reactive[Size] = Reactive(Size(0, 0))

    def __init__(self, apply: Callable[[str], None], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._apply = apply

    def watch_value(self, value: str) -> None:
        self._apply(value)

    def open(self) -> None:
        """Shown for typing (in the footer's line when it was hidden), and focused at once: the box and
        the table's focus drawn in one frame, not a message later."""
        if not self.display:
            self.display = True  # (first: the footer's line is never free between the two)
            self._footer(False)
        self.screen.set_focus(self)

    def done(self, keep: bool) -> None:
        """Typing ended (Enter): kept above the footer while ``keep`` (a filter on), else closed."""
        if keep:
            self.add_class("-kept")
            self._footer(True)
        else:
            self.close()

    def close(self) -> None:
        """Emptied and hidden; the footer back in its line."""
        self.value = ""
        self._footer(True)  # (first, as in ``open``)
        self.display = False
        self.remove_class("-kept")

    def _footer(self, shown: bool) -> None:
        for footer in self.screen.query(Footer):
            footer.display = shown
