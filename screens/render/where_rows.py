"""The Submit panel's "where soonest" lines: one cluster's placement for the form's job (its rank,
the verdict coloured, when, why) and a cluster that could not answer. Pure functions to ``Text``."""

from __future__ import annotations

from datetime import datetime

from rich.text import Text

from yanflow_tui.placement_rank import NEVER, NOW, Placement, when_text
from yanflow_tui.sanitize import clean

STYLES = {NOW: "green", NEVER: "bold red"}


def placement_text(rank: int, place: Placement, current: str, takes_jobs: bool, now: datetime | None = None) -> Text:
    """``2. site  waits  in 12 min (13:05)`` then the reason on the next line; the form's cluster is
    marked, and one that takes no jobs from here (read-only) says so."""
    out = Text(no_wrap=False)
    out.append(f"{rank}. ", "dim")
    out.append(clean(place.cluster), "bold")
    out.append(f"  {place.verdict}", STYLES.get(place.verdict, "yellow"))
    out.append(f"  {when_text(place, now)}")
    if place.cluster == current:
        out.append("  (the form's)", "dim")
    elif not takes_jobs:
        out.append("  (takes no jobs from here)", "dim")
    out.append(f"\n   {clean(place.reason)}", "dim")
    return out


def failed_text(cluster: str, message: str) -> Text:
    out = Text()
    out.append(clean(cluster), "bold")
    out.append("  no answer", "red")
    out.append(f"\n   {clean(message)}", "dim")
    return out
