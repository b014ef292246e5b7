"""``files JOB [PATH]`` (a running job's folder as a table) and ``download JOB PATH [DEST]`` (a file or
folder of it, checked and resumable), over any backend with ``Capabilities.files``."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from yanflow_tui.cli.context import CLUSTER_HELP, CliContext, Command
from yanflow_tui.inside import download_target, size_text, skipped_text, time_text
from yanflow_tui.sanitize import clean, raw

if TYPE_CHECKING:
    from yanflow_tui.cli.parser import Subparsers


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("files", parents=[common], help="list a running job's output folder")
    p.add_argument("job", metavar="JOB")
    p.add_argument(
        "path",
        metavar="PATH",
        nargs="?",
        default="",
        help="a folder of the job (default: its outputs folder, else its workdir)",
    )
    p.add_argument("--cluster", metavar="NAME", help=CLUSTER_HELP)
    p = sub.add_parser(
        "download",
        parents=[common],
        help="download a file or folder of a running job",
        description="Copy PATH of the job to DEST (default: here, under its own name), atomically: a temp beside "
        "DEST, renamed when complete and checked (size, and sha256 where the cluster computes one). An "
        "interrupted download resumes when run again (a folder keeps the files it has complete). Links are "
        "followed; in a folder, a link leading out of it (or into a loop) is left out and named.",
    )
    p.add_argument("job", metavar="JOB")
    p.add_argument("path", metavar="PATH")
    p.add_argument("dest", metavar="DEST", nargs="?")
    p.add_argument("--cluster", metavar="NAME", help=CLUSTER_HELP)


async def files(ctx: CliContext) -> int:
    async with ctx.hub() as hub:
        backend = await ctx.job_backend(hub, "files", "list a job's files")
        listing = await hub.call(backend.list_files(ctx.args.job, ctx.args.path))
    print(clean(listing.path), file=ctx.err)
    rows = [
        (clean(f.name) + ("/" if f.is_dir else ""), "-" if f.is_dir else size_text(f.size), time_text(f.mtime))
        for f in listing.files
    ]
    ctx.print_table(("NAME", "SIZE", "MODIFIED"), rows)
    return 0


async def download(ctx: CliContext) -> int:
    args = ctx.args
    shown = [0.0]

    def progress(done: int, total: int | None) -> None:
        if ctx.err.isatty() and time.monotonic() - shown[0] > 0.2:
            shown[0] = time.monotonic()
            raw(ctx.err).write("\r")  # our own: back to the line's start (the stream strips it from text)
            print(f"{size_text(done)} of {size_text(total) if total else '?'}", end="", file=ctx.err, flush=True)

    async with ctx.hub() as hub:
        target = download_target(args.path, args.dest)
        backend = await ctx.job_backend(hub, "files", "download a job's files")
        result = await backend.download(args.job, args.path, target, progress)  # long: bounded by its idle limit
    resumed = f", resumed at {size_text(result.resumed_from)}" if result.resumed_from else ""
    if shown[0]:
        raw(ctx.err).write("\r")
    print(
        f"downloaded {clean(args.path)} to {result.path} ({size_text(result.size)}, checked: {result.checked}"
        f"{resumed}){clean(skipped_text(result))}",
        file=ctx.err,
    )
    return 0


COMMANDS: dict[str, Command] = {"files": files, "download": download}
