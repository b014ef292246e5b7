"""A one-line status widget that never cuts a word: text too long for its width is cut at the last
word boundary that fits, and ends with ``… i: full text`` (the key of the ``show-full-text``
binding, as remapped). The full text stays in ``full_text`` for the dialog that key opens
(``FullTextScreen``). Generic: any screen line that may outgrow the terminal uses it."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.text import Text
from textual.binding import Binding
from textual.visual import VisualType
from textual.widgets import Static

if TYPE_CHECKING:
    from textual import getters

    from yanflow_tui.app import YanflowApp

FULL_TEXT_BINDING = "show-full-text"
ELLIPSIS = "… "


def cut_at_word(text: Text, width: int, hint: str = "") -> Text:
    """``text`` if it fits ``width`` cells; otherwise its longest start that ends at a word boundary
    (a space; mid-word only if the first word alone is too long), then ``…`` and ``hint``."""
    if text.cell_len <= width:
        return text
    tail = ELLIPSIS + hint if hint else ELLIPSIS.rstrip()
    if cell_len(tail) >= width:  # too narrow for the hint: the ellipsis alone
        tail = ELLIPSIS.rstrip()
    room = max(0, width - cell_len(tail))
    plain = text.plain
    end = 0
    used = 0
    for i, char in enumerate(plain):  # the cell position, for wide characters
        used += cell_len(char)
        if used > room:
            break
        end = i + 1
    space = plain.rfind(" ", 0, end + 1)
    if space > 0 and plain[:space].strip():
        end = space
    out = text[:end]
    out.rstrip()
    while out.plain.endswith((" ·", "·", ",", ":", ";")):  # no dangling separator before the ellipsis
        out = out[: len(out.plain.rstrip(" ·,:;"))]
    out.append(tail, "dim")
    out.no_wrap, out.overflow = True, "ellipsis"
    return out


class StatusLine(Static):
    """``update`` it like a ``Static``; it draws what fits, cut at a word."""

    if TYPE_CHECKING:
        app = getters.app(YanflowApp)

    def __init__(self, content: VisualType = "", **kwargs) -> None:
        super().__init__(content, **kwargs)
        self.full_text = self._as_text(content)

    @staticmethod
    def _as_text(content: VisualType) -> Text:
        return content.copy() if isinstance(content, Text) else Text(str(content))

    def update(self, content: VisualType = "", *, layout: bool = True) -> None:
        self.full_text = self._as_text(content)
        super().update(content, layout=layout)

    @property
    def truncated(self) -> bool:
        width = self.content_region.width
        return bool(width) and self.full_text.cell_len > width

    def _hint(self) -> str:
        """``i: full text``, with the key the binding has now (a keymap may move it); "" if none."""
        app = self.app
        found = next(
            (
                active.binding
                for active in self.screen.active_bindings.values()
                if active.binding.id == FULL_TEXT_BINDING
            ),
            None,
        )
        if found is None:  # not active yet (the screen is still mounting): the screen's own bindings
            for cls in type(self.screen).__mro__:
                found = next(
                    (b for b in vars(cls).get("BINDINGS", ()) if isinstance(b, Binding) and b.id == FULL_TEXT_BINDING),
                    None,
                )
                if found is not None:
                    keymap = app.config.keymap or {}
                    if FULL_TEXT_BINDING in keymap:
                        found = replace(found, key=keymap[FULL_TEXT_BINDING].split(",")[0].strip())
                    break
        return f"{app.get_key_display(found)}: full text" if found is not None else ""

    def render(self) -> Text:
        width = self.content_region.width
        if not width or self.full_text.cell_len <= width:
            return self.full_text
        return cut_at_word(self.full_text, width, self._hint())
