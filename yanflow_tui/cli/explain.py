"""``explain JOB``: why a job waits or is not running, with the values, what to do and when it is
expected to start (``Backend.explain``, a read: allowed in read-only mode); ``--json`` in the
contract's envelope (``jsonout``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from yanflow_tui.cli.context import CLUSTER_HELP, CliContext, Command

if TYPE_CHECKING:
    from yanflow_tui.cli.parser import Subparsers


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    text = "why a job waits or is not running: the reason with its values, what to do, the expected start"
    p = sub.add_parser("explain", parents=[common], help=text, description=text)
    p.add_argument("job", metavar="JOB")
    p.add_argument("--cluster", metavar="NAME", help=CLUSTER_HELP)
    p.add_argument(
        "--json",
        action="store_true",
        help="{state, category, reason, action, expected_start (ISO or null), expected_start_why, ...}",
    )


async def explain(ctx: CliContext) -> int:
    from yanflow_tui.cli import jsonout

    async with ctx.hub() as hub:
        backend = await ctx.job_backend(hub, "explain", "explain a job")
        found = await hub.call(backend.explain(ctx.args.job))
    if ctx.args.json:
        jsonout.dump(jsonout.envelope("explain", found.as_json()), ctx.out)
    else:
        for line in found.lines():
            print(line, file=ctx.out)
    return 0


COMMANDS: dict[str, Command] = {"explain": explain}
