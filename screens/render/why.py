"""The job detail's "Why" block: an ``Explanation`` (``yanflow_tui.explain``) as text, the reason first,
then what to do and the expected start. Pure: tested alone."""

from __future__ import annotations

from rich.text import Text

from yanflow_tui.explain import Category, Explanation
from yanflow_tui.sanitize import clean

STYLES = {
    Category.RUNNING: "green",
    Category.FINISHED: "dim",
    Category.HELD: "magenta",
    Category.LIMITS: "yellow",
    Category.CONFIGURATION: "red",
    Category.LAUNCH_FAILURE: "red",
    Category.NODE_STATE: "red",
}


def why_text(found: Explanation) -> Text:
    """``Why: <category>`` in its colour, then each line of the explanation."""
    text = Text("Why ", style="bold")
    text.append(f"({found.category.value.replace('_', ' ')})", style=STYLES.get(found.category, "yellow"))
    for line in found.lines():
        text.append("\n" + clean(line))
    return text
