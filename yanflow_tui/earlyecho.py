"""The Queue's ``/`` box, drawn by the cached paint (``earlypaint``) for keys typed while it shows.

Textual and the live Queue take most of a second after the cached paint (at 10,000 jobs: about
0.8-1.1 s from the start, the paint at 0.2-0.3 s); a key typed meanwhile is held and delivered to
the live console in order (``earlykeys``), but until then nothing on screen answered it (issue #32).
``FilterEcho`` answers what it can draw exactly as the live console will: ``/`` opens the filter box in
the last line (where the live Queue opens it: ``screens/widgets/filter_box.py``), the characters typed
into it show there with Backspace, and a lone Escape closes it (the footer's line back). The first key
it cannot draw so (any other key before ``/``, Enter, an arrow, a control key) ends it: the picture
stays as it is, and the live console answers that key and every other. It draws only; it changes
nothing that the live console receives. Nothing here imports Textual.
"""

from __future__ import annotations

from codecs import getincrementaldecoder
from collections.abc import Callable

from yanflow_tui.earlypaint import FOREGROUND, Style, cells
from yanflow_tui.queuecolumns import FILTER_PLACEHOLDER

ECHO_BG = "593e19"  # the focused box's background on the dark theme: its accent at 30 % over the screen
ESCAPE, BACKSPACES = "\x1b", ("\x7f", "\x08")


class FilterEcho:
    """Draws the filter box in line ``row`` (1-based) of a ``columns``-wide paint through ``write``, in the
    paint's ``style``; ``footer`` is the line drawn there before (put back on Escape)."""

    def __init__(self, write: Callable[[str], None], row: int, columns: int, footer: str, style: Style) -> None:
        self._write, self._row, self._columns, self._footer = write, row, columns, footer
        self._sgr = style.sgr
        self._decode = getincrementaldecoder("utf-8")(errors="replace").decode
        self.state = "closed"  # "open" (drawn), or "done" (a key it cannot draw came: no more drawing)
        self.text = ""

    def feed(self, data: bytes) -> None:
        """One read of the terminal's input (a key typed by hand is one read)."""
        if self.state == "done":
            return
        text = self._decode(data)
        if text == ESCAPE:  # a lone Escape: the box closes (a sequence that starts with one is another key)
            self._close() if self.state == "open" else self._stop()
            return
        for char in text:
            if self.state == "closed":
                if char != "/":
                    self._stop()
                    return
                self.state = "open"
            elif char in BACKSPACES:
                self.text = self.text[:-1]
            elif char.isprintable():
                self.text += char
            else:
                self._stop()
                return
        if self.state == "open":
            self._draw()

    def _stop(self) -> None:
        self.state = "done"

    def _close(self) -> None:
        self.state, self.text = "closed", ""
        self._write(f"\x1b[{self._row};1H{self._footer}\x1b[0m")

    def _draw(self) -> None:
        room = max(0, self._columns - 3)  # a cell of padding each side, one for the cursor
        shown = _cut(self.text, room, from_end=True)  # (cut as the box scrolls: to the cursor, no ellipsis)
        pad = self._sgr("", ECHO_BG)
        if shown:
            body = self._sgr(FOREGROUND, ECHO_BG) + shown + self._sgr("", ECHO_BG, reverse=True) + " "
            used = cells(shown) + 1
        else:  # the placeholder under the cursor, as the empty box shows it
            hint = _cut(FILTER_PLACEHOLDER, room + 1)
            body = self._sgr(FOREGROUND, ECHO_BG, dim=True, reverse=True) + hint[:1]
            body += self._sgr(FOREGROUND, ECHO_BG, dim=True) + hint[1:]
            used = cells(hint)
        line = pad + " " + body + pad + " " * max(0, self._columns - 1 - used)
        self._write(f"\x1b[{self._row};1H{line}\x1b[0m")


def _cut(text: str, width: int, from_end: bool = False) -> str:
    """The most of ``text`` that fits ``width`` cells, from its start (or its end)."""
    chars = reversed(text) if from_end else iter(text)
    kept: list[str] = []
    used = 0
    for char in chars:
        used += cells(char)
        if used > width:
            break
        kept.append(char)
    return "".join(reversed(kept) if from_end else kept)
