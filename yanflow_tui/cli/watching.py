"""``jobs --watch`` / ``nodes --watch``: the answer again every ``--interval`` seconds, printed only
when it changed: the table redrawn (on a terminal, over the last one; else after a blank line), or
with ``--json`` one JSON object a line per change. ``--until-done`` stops once every job shown has
finished (a script's wait); Ctrl-C stops it (exit status 130)."""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from yanflow_tui.sanitize import raw

if TYPE_CHECKING:
    from yanflow_tui.cli.context import CliContext
    from yanflow_tui.cli.jobs import Listing
    from yanflow_tui.hub import ClusterSnapshot, Hub

DEFAULT_INTERVAL = 5.0
_HOME = "\x1b[H\x1b[2J"  # the cursor home, the screen cleared


def add_watch_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--watch", "-w", action="store_true", help="keep listing; print again on every change (JSON: a line each)"
    )
    p.add_argument(
        "--interval", metavar="SECONDS", type=float, default=DEFAULT_INTERVAL, help="--watch: seconds between looks"
    )
    p.add_argument(
        "--until-done",
        action="store_true",
        help="--watch: stop once every job listed has finished (and at least one is listed)",
    )


async def watch(
    ctx: CliContext, hub: Hub, listing: Listing, answer: Callable[[], Awaitable[list[ClusterSnapshot]]]
) -> int:
    """Print ``listing`` of each new answer that differs from the one printed last."""
    import asyncio

    from yanflow_tui.cli.jobs import failed, list_status
    from yanflow_tui.cli.tables import output_format

    fmt = output_format(ctx.args)
    out = ctx.out
    terminal = fmt in ("table", "wide") and out.isatty()
    last, said = None, ""
    while True:
        snaps = await answer()
        errors = "; ".join(f"cluster {s.name!r}: {s.message}" for s in failed(snaps))
        if errors != said and errors:
            ctx.error(errors)
        said = errors
        text = await listing.text(hub, snaps, fmt, compact=True)
        if text != last:
            if terminal:
                raw(out).write(_HOME)
            elif last is not None and fmt != "json":
                out.write("---\n" if fmt == "yaml" else "\n")  # (YAML: a document each)
            out.write(text)
            out.flush()
            last = text
        if ctx.args.until_done and listing.what == "jobs":
            shown = listing.items(hub, snaps)
            if shown and all(job.state.terminal for job in shown):
                return list_status(snaps)
        await asyncio.sleep(max(0.2, ctx.args.interval))
