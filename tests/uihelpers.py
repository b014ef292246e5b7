"""Helpers for pilot tests: build an app over given clusters, read the screen (waiting lives in ``waiting``)."""

from __future__ import annotations

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


def screen_text(app) -> str:
    """Everything on screen as plain text (the SVG export, stripped of tags)."""
    import html
    import re

    svg = app.export_screenshot()
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")
