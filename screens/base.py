"""The base classes of the screens that show cluster data: ``LiveScreen`` (the typed app handle, and
a redraw from every ``ClusterSnapshot`` the app publishes on ``app.snapshots_changed``) and
``DataScreen`` (a main screen: its header bar, and the key that shows the full text of its status
lines)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import events, on
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.screen import Screen

from yanflow_tui.hub import ClusterSnapshot
from yanflow_tui.screens.dialogs import FullTextScreen
from yanflow_tui.screens.failures import ForwardFailures
from yanflow_tui.screens.switching import StylesKept
from yanflow_tui.screens.widgets.cluster_bar import ClusterBar, HeaderSource
from yanflow_tui.screens.widgets.focus_repaint import FocusKeepsScreen
from yanflow_tui.screens.widgets.status_line import FULL_TEXT_BINDING, StatusLine

if TYPE_CHECKING:
    from textual import getters

    from yanflow_tui.app import YanflowApp


class LiveScreen(ForwardFailures, Screen):
    """A screen (or dialog) redrawn from each snapshot the app publishes, while it is on show (the
    current screen, or one a dialog over it shows through to). It subscribes once mounted, so a
    screen still composing is drawn by its own ``on_mount``. Its workers' failures go to the app."""

    if TYPE_CHECKING:
        # The typed app handle: screens reach ``self.app.hub`` and the app's state through this type.
        app = getters.app(YanflowApp)

    def refresh_data(self) -> None:
        """Redraw from ``app.hub.snapshots``. Must be cheap: it runs on every refresh."""

    @on(events.Mount)
    def _follow_snapshots(self) -> None:
        self.app.snapshots_changed.subscribe(self, self._snapshot_arrived, immediate=True)

    @on(events.Unmount)
    def _unfollow_snapshots(self) -> None:
        self.app.snapshots_changed.unsubscribe(self)

    _redraw_queued = False

    def _snapshot_arrived(self, snapshot: ClusterSnapshot) -> None:
        if not self.app.shows(self):
            return  # redrawn when it comes back (``on_screen_resume``)
        if not self._redraw_queued:  # the snapshots of a burst (every cluster woken at once): one redraw
            self._redraw_queued = True
            self.call_later(self._redraw_from_snapshots)

    def _redraw_from_snapshots(self) -> None:
        self._redraw_queued = False
        if not self.app.shows(self):
            return
        try:
            self.refresh_data()
        except NoMatches:
            pass  # torn down at exit: its widgets are gone already
        except Exception as exc:  # the signal would swallow it: said like a failed worker's
            self.app.report_failure(f"redrawing {type(self).__name__}", exc)


class DataScreen(HeaderSource, StylesKept, FocusKeepsScreen, LiveScreen):
    """A main screen that shows cluster data: redrawn when data arrives and when it becomes current
    (and shown again quickly: ``StylesKept``)."""

    BINDINGS = [Binding("i", "full_text", "Full text", show=False, id=FULL_TEXT_BINDING)]

    def action_full_text(self) -> None:
        """The whole text of this screen's status lines, in a dialog (a cut line ends with this key)."""
        texts = [line.full_text for line in self.query(StatusLine) if line.display and line.full_text.plain.strip()]
        self.app.push_screen(FullTextScreen(texts))

    def ages_ticked(self) -> None:
        """The header's time moved on with no refresh (``app.header_time``, once a minute): what this screen
        draws at that time besides the header (which the app redraws) is drawn again."""

    def refuses(self, what: str) -> bool:
        """Whether the mutating key ``what`` is refused here because its cluster is read-only."""
        return False

    def on_screen_resume(self) -> None:
        self.refresh_data()
        self.refresh_bar()

    def refresh_bar(self) -> None:
        for bar in self.query(ClusterBar):
            bar.redraw()
