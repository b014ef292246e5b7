"""Helpers for pilot tests: build an app over given clusters, read the screen, and ``refreshed``: wait until
a refresh asked for now has happened (waiting in general lives in ``waiting``)."""

from __future__ import annotations

from collections import Counter

from waiting import wait_for

from yanflow_tui.app import YanflowApp
from yanflow_tui.config import ClusterConfig, Config
from yanflow_tui.hub import Hub

FIXED_NOW = 1_795_954_200.0  # the fake jobs (submitted 2026-11-29T12:00Z) are 10 min old; earlier than any real refresh


def make_app(*clusters: ClusterConfig, read_only: bool = False, keymap=None, pinned_clock: bool = False) -> YanflowApp:
    config = Config(clusters=tuple(clusters), read_only=read_only, keymap=keymap or {})
    if read_only:
        config = config.with_read_only()
    app = YanflowApp(config, Hub(config))
    if pinned_clock:
        app.clock = lambda: FIXED_NOW  # type: ignore[method-assign]
    return app


def log_lines(logs, start: int = 0, stop: int | None = None) -> list[str]:
    """Lines [start, stop) of what the Logs screen's pane on show (or the given pane) shows in its active
    view, read from disk where spilled; [] without a pane."""
    from yanflow_tui.screens.logs.pane import LogPane

    pane = logs if isinstance(logs, LogPane) else logs.pane
    return pane.active_view.store.slice(start, stop) if pane is not None else []


def screen_text(app) -> str:
    """Everything on screen as plain text (the SVG export, stripped of tags)."""
    import html
    import re

    svg = app.export_screenshot()
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")


def footer_text(app) -> str:
    """The screen's last line with text on it: the key footer."""
    return next((line for line in reversed(screen_text(app).splitlines()) if line.strip()), "")


class RefreshCount:
    """Counts the hub's refreshes per cluster, started and finished, by wrapping ``hub.refresh`` (installed
    once per app by ``refresh_count``)."""

    def __init__(self, hub: Hub):
        self.started: Counter[str] = Counter()
        self.finished: Counter[str] = Counter()
        real = hub.refresh

        async def counted(name: str, *args, **kwargs):
            self.started[name] += 1
            try:
                return await real(name, *args, **kwargs)
            finally:
                self.finished[name] += 1

        hub.refresh = counted  # type: ignore[method-assign]


def refresh_count(app: YanflowApp) -> RefreshCount:
    count = getattr(app.hub, "_test_refresh_count", None)
    if count is None:
        count = RefreshCount(app.hub)
        app.hub._test_refresh_count = count  # type: ignore[attr-defined]
    return count


async def refreshed(pilot, app: YanflowApp, *names: str) -> None:
    """Ask for a refresh of ``names`` (every cluster by default) and wait until one that started after the
    request has finished for each, and the app is idle again: its screens have drawn the result. A test that
    asserts something did NOT change on a refresh calls this first, so the assertion can fail."""
    count = refresh_count(app)
    marks = {name: count.started[name] for name in names or tuple(app.hub.snapshots)}
    for name in names or (None,):
        app.request_refresh(name)
    await wait_for(
        pilot,
        lambda: all(count.finished[name] > mark for name, mark in marks.items()),
        what=f"a refresh of {', '.join(names)} asked for now",
    )
    await pilot.pause()  # the ClusterUpdated messages handled: the screens redrawn


def prompt_ready(app):
    """The prompt on show once its input is mounted (a pushed screen composes a frame later), else None."""
    screen = app.screen
    if type(screen).__name__ != "PromptScreen" or not screen.query("Input"):
        return None
    return screen
