"""Updates that repaint only on a change: ``update_static`` gives a ``Static`` new content only when it
differs from what it shows (the same text, style and spans are left be). ``Static.update`` refreshes
its widget and its layout whatever it is given, so a screen that redraws its panels when it is shown
again wrote them out a second time, ~30 ms after the frame that showed it (issue #32)."""

from __future__ import annotations

from rich.text import Text
from textual.visual import VisualType
from textual.widgets import Static


def looks(content: object) -> object:
    """What a Text draws from, comparable (``Text.__eq__`` leaves out its style and layout)."""
    if isinstance(content, Text):
        return (content.plain, str(content.style), content.spans, content.justify, content.overflow, content.no_wrap)
    return content if isinstance(content, str) else object()  # (anything else: never the same)


def update_static(widget: Static, content: VisualType) -> bool:
    """``widget.update(content)`` unless it shows that very content already; whether it was updated."""
    if looks(widget.content) == looks(content):
        return False
    widget.update(content)
    return True
