"""Small widgets shared by the screens: the cluster status bar, the footer, and the screen base class."""

from __future__ import annotations

from collections import Counter

from rich.text import Text
from textual.screen import Screen
from textual.widgets import Footer as TextualFooter
from textual.widgets import Static

from yanflow_tui.hub import Health
from yanflow_tui.rows import STATE_STYLES, duration
from yanflow_tui.sanitize import clean

HEALTH_STYLE = {Health.CONNECTING: "yellow", Health.OK: "green", Health.STALE: "bold yellow", Health.ERROR: "bold red"}


class ClusterBar(Static):
    """One line: every cluster's connection state and data age, job counts by state (or the screen's
    own ``count_summary()``), READ-ONLY."""

    DEFAULT_CSS = """
    ClusterBar { height: 1; background: $panel; padding: 0 1; }
    """

    def render(self) -> Text:
        app = self.app
        out = Text(no_wrap=True, overflow="ellipsis")
        out.append(f"YanFlow · {getattr(self.screen, 'TITLE_TEXT', '')}", "bold")
        if getattr(app, "read_only", False):
            out.append("  READ-ONLY ", "bold reverse red")
        if getattr(self.screen, "SHOWS_USERS", False):
            out.append("  all users" if getattr(app, "all_users", False) else "  mine", "cyan")
        now = app.clock()
        summary = getattr(self.screen, "count_summary", None)  # the screen counts what it shows
        counts: Counter = Counter()
        for snap in app.hub.snapshots.values():
            if summary is None:
                counts.update(job.state for job in snap.jobs)
            out.append("  ● ", HEALTH_STYLE[snap.health])
            out.append(clean(snap.name), "bold")
            age = snap.age(now)
            status = snap.health.value if snap.health is not Health.OK else duration(age) if age is not None else "ok"
            if snap.health is Health.STALE and age is not None:
                status = f"stale {duration(age)}"
            out.append(f" {status}", HEALTH_STYLE[snap.health] if snap.health is not Health.OK else "dim")
            if snap.read_only and not getattr(app, "read_only", False):
                out.append(" ro", "red")
            if snap.message:
                out.append(f" ({clean(snap.message)})", "dim")
        if summary is not None:  # the Queue: its filtered rows
            out.append("  │ ")
            out.append_text(summary())
        elif counts:
            out.append("  │ ")
            for state, n in sorted(counts.items(), key=lambda kv: kv[0].value):
                out.append(f"{state.value} {n}  ", STATE_STYLES.get(state, ""))
        return out


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

    def refresh_data(self) -> None:
        """Redraw from ``app.hub.snapshots``. Must be cheap: it runs on every refresh."""

    def on_screen_resume(self) -> None:
        self.refresh_data()
        self.refresh_bar()

    def refresh_bar(self) -> None:
        for bar in self.query(ClusterBar):
            bar.refresh()
