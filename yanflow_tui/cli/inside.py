"""Inside a running job: ``shell JOB`` (a shell in it, the terminal its own until it exits) and
``forward JOB PORT`` (one of its ports on 127.0.0.1 until Ctrl-C), over any backend with
``Capabilities.shell`` / ``forward``."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

from yanflow_tui.cli.context import CLUSTER_HELP, CliContext, Command
from yanflow_tui.sanitize import clean

if TYPE_CHECKING:
    from yanflow_tui.cli.parser import Subparsers


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("shell", parents=[common], help="open a shell inside a running job")
    p.add_argument("job", metavar="JOB")
    p.add_argument("--rank", default="", help="the rank (or pod/node) to open it in (default: the first)")
    p.add_argument("--cluster", metavar="NAME", help=CLUSTER_HELP)
    p = sub.add_parser("forward", parents=[common], help="forward a port of a running job to 127.0.0.1")
    p.add_argument("job", metavar="JOB")
    p.add_argument("port", metavar="PORT", type=int)
    p.add_argument("--local", metavar="PORT", type=int, default=0, help="the local port (default: a free one)")
    p.add_argument("--rank", default="", help="the rank (or pod/node) to forward to (default: the first)")
    p.add_argument("--cluster", metavar="NAME", help=CLUSTER_HELP)


async def shell(ctx: CliContext) -> int:
    async with ctx.hub() as hub:
        backend = await ctx.job_backend(hub, "shell", "open a shell in a job")
        opened = await hub.call(backend.shell(ctx.args.job, ctx.args.rank))
        ctx.note(f"shell in {clean(opened.what)}; exit it to come back")
        code = opened.run()  # the terminal is the shell's until it exits; nothing else runs meanwhile
    return code


async def forward(ctx: CliContext) -> int:
    args = ctx.args
    async with ctx.hub() as hub:
        backend = await ctx.job_backend(hub, "forward", "forward a job's ports")
        opened = await hub.call(backend.forward(args.job, args.port, args.rank, args.local))
        print(
            f"{opened.address} -> {clean(opened.what)} port {opened.remote_port} (Ctrl-C stops it)",
            file=ctx.out,
            flush=True,
        )
        try:
            await asyncio.Event().wait()
        finally:
            await opened.close()
    return 0


COMMANDS: dict[str, Command] = {"shell": shell, "forward": forward}
