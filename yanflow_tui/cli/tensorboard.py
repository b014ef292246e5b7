"""``tensorboard JOB``: a real TensorBoard for a job (``yanflow_tui.tensorboards``: started on the
cluster where it can, else here over the job's event files), its URL printed, until Ctrl-C."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

from yanflow_tui.cli.context import CLUSTER_HELP, CliContext, Command
from yanflow_tui.sanitize import clean

if TYPE_CHECKING:
    from yanflow_tui.cli.parser import Subparsers


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "tensorboard",
        parents=[common],
        help="open a real TensorBoard for a job and print its local URL (Ctrl-C stops it)",
        description="Where the cluster starts one (a Determined task; the real server on a Slurm login node or in "
        "a Kubernetes pod, with a local port forwarded through the same connection), start it there (refused "
        "read-only); else, or where the cluster has no tensorboard or is read-only, run TensorBoard here over the "
        "job's event files (a local mirror, refreshed while it runs) on 127.0.0.1 and a free port. Prints the "
        "URL; Ctrl-C stops what was started.",
    )
    p.add_argument("job", metavar="JOB")
    p.add_argument("--cluster", metavar="NAME", help=CLUSTER_HELP)


async def tensorboard(ctx: CliContext) -> int:
    from yanflow_tui.tensorboards import TensorBoards

    job = ctx.args.job
    async with ctx.hub() as hub:
        boards = TensorBoards()
        try:
            name = await ctx.job_cluster(hub)
            board = await boards.start(f"{name}/{job}", hub.backend(name), job, hub.call)
            print(board.url, file=ctx.out, flush=True)
            ctx.note(f"TensorBoard of {clean(job)}: {clean(board.what)} (Ctrl-C stops it)")
            await asyncio.Event().wait()
        finally:
            await boards.stop_all()
    return 0


COMMANDS: dict[str, Command] = {"tensorboard": tensorboard}
