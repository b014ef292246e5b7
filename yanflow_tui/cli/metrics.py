"""``metrics JOB``: a job's training curves (its TensorBoard scalars, ``yanflow_tui.curves``), a summary
line per tag, or every point as JSON."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from yanflow_tui.cli.context import CLUSTER_HELP, CliContext, Command

if TYPE_CHECKING:
    from yanflow_tui.cli.parser import Subparsers


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("metrics", parents=[common], help="print a job's training curves (TensorBoard scalars)")
    p.add_argument("job", metavar="JOB")
    p.add_argument("--cluster", metavar="NAME", help=CLUSTER_HELP)
    p.add_argument(
        "--json",
        action="store_true",
        help='every point: {"schema_version", "metrics": {tag: [{step, wall_time, value}, ...]}, "errors"}',
    )


async def metrics(ctx: CliContext) -> int:
    from yanflow_tui import curves

    async with ctx.hub() as hub:
        name = await ctx.job_cluster(hub)
        found = await curves.job_curves(hub.backend(name), ctx.args.job, hub.timeout)
    if ctx.args.json:
        from yanflow_tui.cli import jsonout

        jsonout.dump(jsonout.envelope("metrics", found.to_json()), ctx.out)
    else:
        for line in curves.summary_lines(found):
            print(line, file=ctx.out)
    return 0


COMMANDS: dict[str, Command] = {"metrics": metrics}
