"""The console's start: the cached Queue painted before Textual loads (``earlypaint``), the terminal
logins, then the app taking over that screen."""

from __future__ import annotations

import logging
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from yanflow_tui.config import Config

log = logging.getLogger(__name__)


def run_console(config: Config) -> int:
    """The console. Before the backends and Textual are imported (most of a second of CPU), the cached
    Queue is painted from the digest the last run kept (``earlypaint``); Textual then takes over that
    screen. A cluster that logs in in the terminal does it first (the paint gives the screen back)."""
    from yanflow_tui import earlypaint, snapcache, speed

    path = snapcache.default_path()
    digested, paint_note = snapcache.read_paint(path)  # never raises: a bad file is set aside, with a note
    if paint_note:
        log.warning("%s (%s)", paint_note, path.with_name(snapcache.PAINT_FILE))
    early = earlypaint.paint(config, digested)
    try:
        from yanflow_tui import escdelay

        escdelay.configure()  # (before Textual is imported: it reads the Escape delay then)
        from yanflow_tui.hub import Hub
        from yanflow_tui.termlogin import log_in_first

        hub = Hub(config)
        # a cluster that logs in in the terminal does it now, before the console (on the normal screen)
        log_in_first(hub, out=early.stream(sys.stderr) if early is not None else None)
        note = "; ".join(filter(None, (paint_note, snapcache.restore(hub, path))))
        speed.freeze_restored()  # the cached jobs live on: the collections while Textual loads need not walk them

        from yanflow_tui.app import YanflowApp, takeover_driver
        from yanflow_tui.earlykeys import HeldKeys

        keys = HeldKeys()  # typed while the cached Queue shows: for the console once it is ready
        # Textual's Linux driver, quicker on Escape, on the paint's screen (if any), holding early keys
        driver = takeover_driver(early, keys) if os.name == "posix" else None
        app = YanflowApp(
            config, hub=hub, snapshot_file=path, cache_note=note, driver_class=driver, when_ready=keys.release
        )
        app.run(mouse=config.mouse)
    finally:
        if early is not None:
            early.leave()  # nothing once Textual took over (it leaves the screen itself)
    return app.return_code or 0
