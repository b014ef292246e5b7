"""``explain JOB``: why a job waits or is not running, with the values, what to do and when it is
expected to start (``Backend.explain``, a read: allowed in read-only mode); ``--json`` in the
contract's envelope (``jsonout``), carrying beside it a failed job's first failure across ranks
(``failureevidence``) and a running job's live use of what it holds (``cli.health``), both reads."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from yanflow_tui.cli.context import CLUSTER_HELP, CliContext, Command

if TYPE_CHECKING:
    from yanflow_tui.backends.base import Backend
    from yanflow_tui.cli.parser import Subparsers
    from yanflow_tui.hub import Hub


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    text = "why a job waits or is not running: the reason with its values, what to do, the expected start"
    p = sub.add_parser("explain", parents=[common], help=text, description=text)
    p.add_argument("job", metavar="JOB")
    p.add_argument("--cluster", metavar="NAME", help=CLUSTER_HELP)
    p.add_argument(
        "--json",
        action="store_true",
        help="{state, category, reason, action, expected_start (ISO or null), expected_start_why, ..., "
        "first_failure (a failed job's, else null), health (a running job's live use, else null)}",
    )


async def after_start(hub: Hub, backend: Backend, job_id: str) -> dict[str, Any]:
    """``first_failure`` of a failed job and ``health`` of a running one (each null otherwise), read now."""
    from yanflow_tui.cli.health import job_healths
    from yanflow_tui.failureevidence import find_first_failure
    from yanflow_tui.jobhealth import running
    from yanflow_tui.model import JobState

    job = await hub.call(backend.get_job(job_id))
    out: dict[str, Any] = {"first_failure": None, "health": None}
    if job.state is JobState.FAILED:
        found = await find_first_failure(backend, job, hub.timeout * 2)
        out["first_failure"] = found.to_dict() if found else None
    elif running(job):
        healths = await job_healths(hub, [backend.name], job.id)
        out["health"] = healths[0].as_json() if healths else None
    return out


async def explain(ctx: CliContext) -> int:
    from yanflow_tui.cli import jsonout

    async with ctx.hub() as hub:
        backend = await ctx.job_backend(hub, "explain", "explain a job")
        found = await hub.call(backend.explain(ctx.args.job))
        if ctx.args.json:
            extra = await after_start(hub, backend, ctx.args.job)
    if ctx.args.json:
        jsonout.dump(jsonout.envelope("explain", {**found.as_json(), **extra}), ctx.out)
    else:
        for line in found.lines():
            print(line, file=ctx.out)
    return 0


COMMANDS: dict[str, Command] = {"explain": explain}
