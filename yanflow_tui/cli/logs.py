"""``logs JOB``: a job's log on stdout (``-f`` until the job ends; ``--stream`` another of its logs),
each line of a multi-node job prefixed with its rank; the stream's own state on stderr."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from yanflow_tui.cli.context import CLUSTER_HELP, CliContext, Command
from yanflow_tui.errors import YanflowError
from yanflow_tui.sanitize import clean

if TYPE_CHECKING:
    from yanflow_tui.cli.parser import Subparsers


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("logs", parents=[common], help="print a job's log")
    p.add_argument("job", metavar="JOB")
    p.add_argument("--cluster", metavar="NAME", help=CLUSTER_HELP)
    p.add_argument("-f", "--follow", action="store_true", help="keep printing until the job ends")
    p.add_argument(
        "--stream",
        metavar="NAME",
        default="",
        help="another of the job's logs, e.g. stderr for a Slurm job whose StdErr has its own file, "
        "or a Kubernetes pod's other container (a sidecar)",
    )


async def logs(ctx: CliContext) -> int:
    args = ctx.args
    async with ctx.hub() as hub:
        name = await ctx.job_cluster(hub)
        backend = hub.backend(name)
        if not backend.capabilities.logs:
            raise YanflowError(f"cluster {name!r} cannot show logs")
        await hub.call(backend.get_job(args.job))  # a clear error for an unknown job
        out = ctx.out
        last_flush = time.monotonic()
        if args.stream and args.stream not in (streams := await hub.call(backend.log_streams(args.job))):
            raise YanflowError(
                f"job {args.job} has no separate {args.stream!r} log; its logs: "
                + ", ".join(s or "main" for s in streams)
            )
        async for line in backend.stream_logs(args.job, follow=args.follow, stream=args.stream):
            if line.status:  # the stream's own state (reconnecting...): stderr, so stdout stays the log
                out.flush()
                ctx.note(line.text, flush=True)
                continue
            prefix = f"[{clean(line.source)}] " if line.source else ""  # the rank of a multi-node job
            out.write(prefix + clean(line.text) + "\n")
            if args.follow and time.monotonic() - last_flush > 0.1:
                out.flush()
                last_flush = time.monotonic()
        out.flush()
    return 0


COMMANDS: dict[str, Command] = {"logs": logs}
