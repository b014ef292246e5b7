"""Switching back to a main screen shown before (``screens/switching.py``): updates are held only until
the screen has resumed, not for Textual's fixed 50 ms; its styles are kept, and applied again when the
theme changed while it was hidden."""

from __future__ import annotations

from textual.app import App
from textual.css.stylesheet import Stylesheet
from uihelpers import make_app, screen_text
from waiting import wait_for

from yanflow_tui.config import ClusterConfig
from yanflow_tui.screens import switching
from yanflow_tui.screens.queue import JobTable, QueueScreen

HPC = ClusterConfig("hpc", "fake", refresh_seconds=0.5)


async def nodes_shown(pilot, app, what: str = "nodes shown") -> None:
    """Nodes is the screen on show, and no update is held back any more."""
    await wait_for(pilot, lambda: app.current_mode == "nodes" and app._batch_count == 0, what=what)


async def test_a_screen_shown_again_releases_the_held_updates_once_it_has_resumed(home, fake_backend, monkeypatch):
    app = make_app(HPC)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: app.hub.snapshots["hpc"].jobs, what="jobs")
        await pilot.press("2")  # Nodes, for the first time: as Textual does it (held 50 ms)
        await nodes_shown(pilot, app)
        # From here a hold that waits for its timer lasts a minute: Textual's own (50 ms by default), and the
        # bound of a switch back (which only a screen that never resumes would reach).
        monkeypatch.setattr(App.delay_update, "__defaults__", (60.0,))
        monkeypatch.setattr(switching, "SWITCH_BOUND", 60.0)
        await pilot.press("1")  # the Queue again: held until it has resumed, then painted
        await wait_for(
            pilot,
            lambda: isinstance(app.screen, QueueScreen) and app._batch_count == 0,
            what="the Queue shown, its updates released",
            timeout=10,
        )
        assert getattr(app, "_release", None) is None
        assert "hpc" in screen_text(app)


async def test_a_screen_shown_again_keeps_its_styles_unless_the_theme_changed(home, fake_backend, monkeypatch):
    applied: list[object] = []
    apply = Stylesheet.apply

    def counted(self, node, *args, **kwargs):
        applied.append(node)
        return apply(self, node, *args, **kwargs)

    monkeypatch.setattr(Stylesheet, "apply", counted)
    app = make_app(HPC)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: app.hub.snapshots["hpc"].jobs, what="jobs")
        queue = app.screen
        table = queue.query_one(JobTable)
        dark = table.styles.background
        await pilot.press("2")
        await nodes_shown(pilot, app)
        applied.clear()
        await pilot.press("1")
        await wait_for(pilot, lambda: app.screen is queue and app._batch_count == 0, what="the Queue again")
        await pilot.pause()
        assert [n for n in applied if n is table or n is queue] == []  # nothing of it styled again
        assert table.styles.background == dark

        await pilot.press("2")
        await nodes_shown(pilot, app, "nodes again")
        app.theme = "textual-light" if app.theme != "textual-light" else "textual-dark"  # while the Queue is hidden
        await pilot.pause()
        await pilot.press("1")
        await wait_for(pilot, lambda: app.screen is queue and app._batch_count == 0, what="the Queue, new theme")
        await wait_for(pilot, lambda: table.styles.background != dark, what="the table in the new theme's colours")
