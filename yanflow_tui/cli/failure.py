"""``failure JOB``: the first failure across a failed job's ranks (``yanflow_tui.firstfailure``): which
rank and node failed first, when and why, and which ranks failed after it; ``--json`` in the shared
envelope (``jsonout``) under ``failure`` (null when no rank shows a failure)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from yanflow_tui.cli.context import CLUSTER_HELP, CliContext, Command

if TYPE_CHECKING:
    from yanflow_tui.cli.parser import Subparsers


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("failure", parents=[common], help="which rank of a failed job failed first, when and why")
    p.add_argument("job", metavar="JOB")
    p.add_argument("--cluster", metavar="NAME", help=CLUSTER_HELP)
    p.add_argument("--json", action="store_true", help="the answer as JSON (docs/json.md)")


async def failure(ctx: CliContext) -> int:
    from yanflow_tui.cli import jsonout
    from yanflow_tui.failureevidence import find_first_failure

    async with ctx.hub() as hub:
        name = await ctx.job_cluster(hub)
        backend = hub.backend(name)
        job = await hub.call(backend.get_job(ctx.args.job))
        found = await find_first_failure(backend, job, hub.timeout * 2)
    if ctx.args.json:
        data = {"cluster": name, "job": job.id, "state": job.state.value, **(found.to_dict() if found else {})}
        jsonout.dump(jsonout.envelope("failure", data if found else None), ctx.out)
    elif found is None:
        print(f"{name}/{job.id}: no rank shows a failure ({job.state.value})", file=ctx.out)
    else:
        for line in found.lines():
            print(line, file=ctx.out)
    return 0


COMMANDS: dict[str, Command] = {"failure": failure}
