"""Small widgets shared by the screens: the cluster status bar, the footer, and the screen base class
(with the key that shows the full text of its status lines)."""

from __future__ import annotations

from collections import Counter

from rich.text import Text
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer as TextualFooter
from textual.widgets import Static

from yanflow_tui.cluster_rows import has_note, short_state
from yanflow_tui.hub import Health
from yanflow_tui.rows import STATE_STYLES
from yanflow_tui.sanitize import clean
from yanflow_tui.screens.dialogs import FullTextScreen
from yanflow_tui.screens.status_line import FULL_TEXT_BINDING, StatusLine

HEALTH_STYLE = {Health.CONNECTING: "yellow", Health.OK: "green", Health.STALE: "bold yellow", Health.ERROR: "bold red"}


class ClusterBar(Static):
    """The header: the screen's title, then one short state per cluster (``cluster_rows.short_state``),
    then job counts by state (or the screen's own ``count_summary()``), READ-ONLY. It takes as many
    lines as its clusters need: a cluster's state is never cut to make room for another's; only the
    counts at the end give way. Errors and notes are read in full on the Clusters screen (``5``)."""

    DEFAULT_CSS = """
    ClusterBar { height: auto; background: $panel; padding: 0 1; }
    """

    _height = 1

    def redraw(self) -> None:
        """Repaint; lay the screen out again only when the header's height changes."""
        height = len(self._lines(self.content_size.width or self.app.size.width))
        self.refresh(layout=height != self._height)
        self._height = height

    def render(self) -> Text:
        return Text("\n", no_wrap=True, overflow="ellipsis").join(self._lines(self.content_size.width or self.app.size.width))

    def get_content_height(self, container, viewport, width: int) -> int:
        return len(self._lines(width))

    def _segments(self) -> tuple[Text, list[Text], Text | None]:
        app = self.app
        head = Text(f"YanFlow · {getattr(self.screen, 'TITLE_TEXT', '')}", "bold")
        if getattr(app, "read_only", False):
            head.append("  READ-ONLY ", "bold reverse red")
        if getattr(self.screen, "SHOWS_USERS", False):
            head.append("  all users" if getattr(app, "all_users", False) else "  mine", "cyan")
        now = app.clock()
        summary = getattr(self.screen, "count_summary", None)  # the screen counts what it shows
        counts: Counter = Counter()
        clusters: list[Text] = []
        noted = False
        for snap in app.hub.snapshots.values():
            if summary is None:
                counts.update(job.state for job in snap.jobs)
            part = Text("● ", HEALTH_STYLE[snap.health])
            part.append(clean(snap.name), "bold")
            part.append(f" {short_state(snap, now)}",
                        HEALTH_STYLE[snap.health] if snap.health is not Health.OK or snap.login_user else "dim")
            if snap.read_only and not getattr(app, "read_only", False):
                part.append(" ro", "red")
            noted |= has_note(snap)
            clusters.append(part)
        if noted:
            clusters.append(Text("5: details", "dim"))
        tail: Text | None = None
        if summary is not None:  # the Queue: its filtered rows
            tail = summary()
        elif counts:
            tail = Text()
            for state, n in sorted(counts.items(), key=lambda kv: kv[0].value):
                tail.append(f"{state.value} {n}  ", STATE_STYLES.get(state, ""))
            tail.rstrip()
        return head, clusters, tail

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


class Footer(TextualFooter):
    """Textual's Footer without its leak (8.2.8): each recompose binds every new ``FooterKey``'s
    ``compact`` to the footer with ``data_bind``, a watcher kept on the footer that is only dropped
    when ``compact`` changes, which it never does. Every focus change or ``refresh_bindings`` thus
    kept ~19 dead keys (about 20 KB each, with their styles and caches) alive for good. Here the
    watchers of keys no longer mounted are dropped after each recompose."""

    async def recompose(self) -> None:
        await super().recompose()
        self.prune_watchers()

    def prune_watchers(self) -> None:
        watchers = getattr(self, "__watchers", None)  # textual.reactive keeps them under this name
        for name, bound in (watchers or {}).items():
            bound[:] = [(node, callback) for node, callback in bound
                        if node is self or (not node._closing and node.is_attached)]


class DataScreen(Screen):
    """A screen that shows cluster data: redrawn when data arrives and when it becomes current."""

    TITLE_TEXT = ""
    BINDINGS = [Binding("i", "full_text", "Full text", show=False, id=FULL_TEXT_BINDING)]

    def action_full_text(self) -> None:
        """The whole text of this screen's status lines, in a dialog (a cut line ends with this key)."""
        texts = [line.full_text for line in self.query(StatusLine) if line.display and line.full_text.plain.strip()]
        self.app.push_screen(FullTextScreen(texts))

    def refresh_data(self) -> None:
        """Redraw from ``app.hub.snapshots``. Must be cheap: it runs on every refresh."""

    def on_screen_resume(self) -> None:
        self.refresh_data()
        self.refresh_bar()

    def refresh_bar(self) -> None:
        for bar in self.query(ClusterBar):
            bar.redraw()
