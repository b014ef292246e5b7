"""The key footer (screens/widgets/footer.py): keys shown or hidden in place, in the same frame."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Input, Static
from textual.widgets._footer import FooterKey
from waiting import wait_for

from yanflow_tui.screens.widgets.footer import Footer


class Pane(Static, can_focus=True):
    BINDINGS = [Binding("o", "open", "Open")]

    def action_open(self) -> None:
        pass


class Host(App):
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [Binding("f2", "bell", "Bell")]

    def compose(self) -> ComposeResult:
        yield Pane("pane")
        yield Input()
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(Pane).focus()


def shown(app: App) -> list[str]:
    return [key.key for key in app.screen.query(FooterKey) if key.display]


async def test_a_bindings_change_shows_and_hides_keys_at_once_without_a_recompose():
    """In the frame that brought the change (the filter cleared, focus back on the table): shown or
    hidden a refresh later, the keys would lay the screen out again in the next frame."""
    app = Host()
    async with app.run_test() as pilot:
        await wait_for(pilot, lambda: shown(app) == ["o", "f2"], what="the pane's keys")
        footer = app.query_one(Footer)
        recomposed = footer.recomposed
        for widget, keys in ((app.query_one(Input), ["f2"]), (app.query_one(Pane), ["o", "f2"])):
            app.screen.set_focus(widget)
            await wait_for(pilot, lambda widget=widget: app.focused is widget, what="the focus")
            footer.bindings_changed(app.screen)  # (as the screen's signal calls it)
            assert shown(app) == keys  # at once, not after the next refresh
        await pilot.pause()
        assert shown(app) == ["o", "f2"]
        assert footer.recomposed == recomposed
