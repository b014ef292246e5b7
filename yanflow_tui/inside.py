"""Inside a running job, from the command line and the console alike: where a download goes, how
sizes and times read, and the CLI verbs ``files``, ``download``, ``shell`` and ``forward`` over any
backend that has the capability (``Capabilities.files`` / ``shell`` / ``forward``)."""

from __future__ import annotations

import argparse
import asyncio
import posixpath
import sys
import time
from datetime import datetime
from pathlib import Path

from yanflow_tui.backends.base import Download, Forward
from yanflow_tui.errors import YanflowError
from yanflow_tui.locations import safe_filename
from yanflow_tui.sanitize import clean, raw


def download_target(path: str, dest: str | None = None) -> Path:
    """Where ``download PATH [DEST]`` writes: DEST, or inside it when it is a folder; else the current
    folder, under the source's own (safe) name."""
    name = safe_filename(posixpath.basename(path.rstrip("/")) or "download")
    if not dest:
        return Path.cwd() / name
    target = Path(dest).expanduser()
    return target / name if target.is_dir() else target


def skipped_text(result: Download) -> str:
    """What a folder's download left out, as the end of its message ("" when nothing)."""
    if not result.skipped:
        return ""
    more = f" and {len(result.skipped) - 3} more" if len(result.skipped) > 3 else ""
    return f"; left out: {', '.join(result.skipped[:3])}{more}"


def size_text(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def time_text(when: datetime | None) -> str:
    return when.astimezone().strftime("%Y-%m-%d %H:%M") if when else "-"


def add_parsers(sub, common: argparse.ArgumentParser) -> None:
    where = "the job's cluster (needed when its id is on several clusters)"
    p = sub.add_parser("files", parents=[common], help="list a running job's output folder")
    p.add_argument("job", metavar="JOB")
    p.add_argument(
        "path",
        metavar="PATH",
        nargs="?",
        default="",
        help="a folder of the job (default: its outputs folder, else its workdir)",
    )
    p.add_argument("--cluster", metavar="NAME", help=where)
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
    p.add_argument("--cluster", metavar="NAME", help=where)
    p = sub.add_parser("shell", parents=[common], help="open a shell inside a running job")
    p.add_argument("job", metavar="JOB")
    p.add_argument("--rank", default="", help="the rank (or pod/node) to open it in (default: the first)")
    p.add_argument("--cluster", metavar="NAME", help=where)
    p = sub.add_parser("forward", parents=[common], help="forward a port of a running job to 127.0.0.1")
    p.add_argument("job", metavar="JOB")
    p.add_argument("port", metavar="PORT", type=int)
    p.add_argument("--local", metavar="PORT", type=int, default=0, help="the local port (default: a free one)")
    p.add_argument("--rank", default="", help="the rank (or pod/node) to forward to (default: the first)")
    p.add_argument("--cluster", metavar="NAME", help=where)


async def _backend(hub, args, flag: str, what: str):
    from yanflow_tui.cli import _job_cluster

    name = await _job_cluster(hub, args.cluster, args.job)
    backend = hub.backend(name)
    if not getattr(backend.capabilities, flag):
        why = backend.capabilities.why_off(flag)
        raise YanflowError(f"cluster {name!r} cannot {what}" + (f": it is {why}" if why else ""))
    return backend


async def files(config, args) -> int:
    from yanflow_tui.cli import _hub, _print_table

    hub = await _hub(config, getattr(args, "cluster", None))
    try:
        backend = await _backend(hub, args, "files", "list a job's files")
        listing = await hub.call(backend.list_files(args.job, args.path))
    finally:
        await hub.close()
    print(clean(listing.path), file=sys.stderr)
    rows = [
        (clean(f.name) + ("/" if f.is_dir else ""), "-" if f.is_dir else size_text(f.size), time_text(f.mtime))
        for f in listing.files
    ]
    _print_table(("NAME", "SIZE", "MODIFIED"), rows)
    return 0


async def download(config, args) -> int:
    from yanflow_tui.cli import _hub

    hub = await _hub(config, getattr(args, "cluster", None))
    target = download_target(args.path, args.dest)
    shown = [0.0]

    def progress(done: int, total: int | None) -> None:
        if sys.stderr.isatty() and time.monotonic() - shown[0] > 0.2:
            shown[0] = time.monotonic()
            raw(sys.stderr).write("\r")  # our own: back to the line's start (the stream strips it from text)
            print(f"{size_text(done)} of {size_text(total) if total else '?'}", end="", file=sys.stderr, flush=True)

    try:
        backend = await _backend(hub, args, "files", "download a job's files")
        result = await backend.download(args.job, args.path, target, progress)  # long: bounded by its idle limit
    finally:
        await hub.close()
    resumed = f", resumed at {size_text(result.resumed_from)}" if result.resumed_from else ""
    if shown[0]:
        raw(sys.stderr).write("\r")
    print(
        f"downloaded {clean(args.path)} to {result.path} ({size_text(result.size)}, checked: {result.checked}"
        f"{resumed}){clean(skipped_text(result))}",
        file=sys.stderr,
    )
    return 0


async def shell(config, args) -> int:
    from yanflow_tui.cli import _hub

    hub = await _hub(config, getattr(args, "cluster", None))
    try:
        backend = await _backend(hub, args, "shell", "open a shell in a job")
        opened = await hub.call(backend.shell(args.job, args.rank))
        print(f"yanflow-tui: shell in {clean(opened.what)}; exit it to come back", file=sys.stderr)
        code = opened.run()  # the terminal is the shell's until it exits; nothing else runs meanwhile
    finally:
        await hub.close()
    return code


async def forward(config, args) -> int:
    from yanflow_tui.cli import _hub

    hub = await _hub(config, getattr(args, "cluster", None))
    try:
        backend = await _backend(hub, args, "forward", "forward a job's ports")
        opened = await hub.call(backend.forward(args.job, args.port, args.rank, args.local))
        print(f"{opened.address} -> {clean(opened.what)} port {opened.remote_port} (Ctrl-C stops it)", flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            await opened.close()
    finally:
        await hub.close()
    return 0


COMMANDS = {"files": files, "download": download, "shell": shell, "forward": forward}


class Forwards:
    """The console's open port-forwards, by job key; closed with a key or all at exit."""

    def __init__(self) -> None:
        self.open: dict[str, list[Forward]] = {}  # job key -> its forwards

    def add(self, key: str, forward: Forward) -> None:
        self.open.setdefault(key, []).append(forward)

    def of(self, key: str) -> list[Forward]:
        return list(self.open.get(key, ()))

    async def close(self, key: str) -> int:
        closing = self.open.pop(key, [])
        for forward in closing:
            await forward.close()
        return len(closing)

    async def close_all(self) -> None:
        for key in list(self.open):
            await self.close(key)
