"""Small widgets shared by the screens: the cluster status bar and the screen base class (with the
key that shows the full text of its status lines)."""

from __future__ import annotations

from collections import Counter

from rich.text import Text
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

from yanflow_tui.hub import Health
from yanflow_tui.rows import STATE_STYLES, duration
from yanflow_tui.sanitize import clean
from yanflow_tui.screens.dialogs import FullTextScreen
from yanflow_tui.screens.status_line import FULL_TEXT_BINDING, StatusLine

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
            bar.refresh()
