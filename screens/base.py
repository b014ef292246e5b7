"""The base class of the screens that show cluster data (``DataScreen``), with the key that shows the
full text of its status lines."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.binding import Binding
from textual.screen import Screen

from yanflow_tui.screens.dialogs import FullTextScreen
from yanflow_tui.screens.widgets.cluster_bar import ClusterBar
from yanflow_tui.screens.widgets.status_line import FULL_TEXT_BINDING, StatusLine

if TYPE_CHECKING:
    from yanflow_tui.app import YanflowApp


class DataScreen(Screen):
    """A screen that shows cluster data: redrawn when data arrives and when it becomes current."""

    TITLE_TEXT = ""

    if TYPE_CHECKING:
        # The typed app handle: screens reach ``self.app.hub`` and the app's state through this type.
        @property
        def app(self) -> YanflowApp: ...

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
