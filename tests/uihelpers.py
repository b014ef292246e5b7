"""Helpers for pilot tests: build an app over given clusters, and wait for conditions."""

from __future__ import annotations

import time
from collections.abc import Callable

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


async def wait_for(pilot, condition: Callable[[], object], timeout: float = 20.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        await pilot.pause(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


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
