"""The header bar every data screen shows: the screen's title, one short state per cluster, then
job counts by state and READ-ONLY."""

from __future__ import annotations

import operator
from collections import Counter
from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

from yanflow_tui.hub import Health
from yanflow_tui.sanitize import clean
from yanflow_tui.screens.render.cluster_rows import has_note, short_state
from yanflow_tui.screens.render.rows import STATE_STYLES

if TYPE_CHECKING:
    from textual import getters

    from yanflow_tui.app import YanflowApp

HEALTH_STYLE = {Health.CONNECTING: "yellow", Health.OK: "green", Health.STALE: "bold yellow", Health.ERROR: "bold red"}


class HeaderSource:
    """What the header bar shows of the screen it is on (``DataScreen`` is one): its title, whether
    the "mine / all users" view applies to it, and its own counts of what it shows."""

    TITLE_TEXT = ""
    SHOWS_USERS = False

    def count_summary(self) -> Text | None:
        """The counts at the end of the header; None: the bar counts every cluster's jobs by state."""
        return None


class ClusterBar(Static):
    """The header: the screen's title, then one short state per cluster (``cluster_rows.short_state``),
    then job counts by state (or the screen's own ``count_summary()``), READ-ONLY. It takes as many
    lines as its clusters need: a cluster's state is never cut to make room for another's; only the
    counts at the end give way. Errors and notes are read in full on the Clusters screen (``5``)."""

    DEFAULT_CSS = """
    ClusterBar { height: auto; background: $panel; padding: 0 1; }
    """

    if TYPE_CHECKING:
        app = getters.app(YanflowApp)

    _height = 1
    _drawn: tuple[int, list[Text]] | None = None  # the width and lines last rendered

    def redraw(self) -> None:
        """Repaint; lay the screen out again only when the header's height changes. The same lines as
        those on screen (a refresh that changed nothing the header says) are not painted again."""
        width = self.content_size.width or self.app.size.width
        lines = self._lines(width)
        if self._drawn == (width, lines):
            return
        height = len(lines)
        self.refresh(layout=height != self._height)
        self._height = height

    def render(self) -> Text:
        width = self.content_size.width or self.app.size.width
        lines = self._lines(width)
        self._drawn = (width, lines)
        return Text("\n", no_wrap=True, overflow="ellipsis").join(lines)

    def get_content_height(self, container, viewport, width: int) -> int:
        return len(self._lines(width))

    def _segments(self) -> tuple[Text, list[Text], Text | None]:
        app = self.app
        screen = self.screen
        source = screen if isinstance(screen, HeaderSource) else _NO_SOURCE
        head = Text(f"YanFlow · {source.TITLE_TEXT}", "bold")
        if app.read_only:
            head.append("  READ-ONLY ", "bold reverse red")
        if source.SHOWS_USERS:
            head.append("  all users" if app.all_users else "  mine", "cyan")
        now = app.header_time()  # (the last refresh's time: ages do not tick between refreshes)
        summary = source.count_summary()  # the screen counts what it shows
        counts: Counter = Counter()
        clusters: list[Text] = []
        noted = False
        snaps = app.hub.snapshots.values()
        if summary is None:
            counts = self._state_counts([snap.jobs for snap in snaps])
        for snap in snaps:
            part = Text("● ", HEALTH_STYLE[snap.health])
            part.append(clean(snap.name), "bold")
            part.append(
                f" {short_state(snap, now)}",
                HEALTH_STYLE[snap.health] if snap.health is not Health.OK or snap.login_user else "dim",
            )
            if snap.read_only and not app.read_only:
                part.append(" ro", "red")
            noted |= has_note(snap)
            clusters.append(part)
        if noted:
            clusters.append(Text("5: details", "dim"))
        tail: Text | None = None
        if summary is not None:  # the Queue: its filtered rows
            tail = summary
        elif counts:
            tail = Text()
            for state, n in sorted(counts.items(), key=lambda kv: kv[0].value):
                tail.append(f"{state.value} {n}  ", STATE_STYLES.get(state, ""))
            tail.rstrip()
        return head, clusters, tail

    _counted: tuple[list[tuple], Counter] | None = None

    def _state_counts(self, job_lists: list[tuple]) -> Counter:
        """Jobs by state over ``job_lists`` (each snapshot's jobs tuple), counted again only when one of
        the tuples is another: the bar is drawn several times a refresh and once a minute between them,
        and counting 100,000 jobs takes 50-100 ms."""
        cached = self._counted
        if cached is not None and len(cached[0]) == len(job_lists) and all(map(operator.is_, cached[0], job_lists)):
            return cached[1]
        counts: Counter = Counter()
        for jobs in job_lists:
            counts.update(job.state for job in jobs)
        self._counted = (job_lists, counts)  # holds the tuples: their ids cannot be reused meanwhile
        return counts

    def _lines(self, width: int) -> list[Text]:
        """The header packed into ``width`` columns, a cluster's state never split across lines."""
        head, clusters, tail = self._segments()
        width = max(1, width)
        lines = [head]
        for part in clusters:
            if lines[-1].cell_len and lines[-1].cell_len + 2 + part.cell_len > width:
                lines.append(Text())
            if lines[-1].cell_len:
                lines[-1].append("  ")
            lines[-1].append_text(part)
        if tail is not None:
            if lines[-1].cell_len + 4 + min(tail.cell_len, 12) > width:
                lines.append(Text())
            if lines[-1].cell_len:
                lines[-1].append("  │ ")
            lines[-1].append_text(tail)
        for line in lines:
            line.no_wrap, line.overflow = True, "ellipsis"
        return lines


_NO_SOURCE = HeaderSource()  # a bar on a screen that says nothing of itself
