"""Inside a Slurm job, through the cluster's own transport: its output folder listed (``find -printf``),
files downloaded (``Transport.read_bytes``: SFTP on the asyncssh connection, ``tail -c +N`` through the
OpenSSH master or on the login node) through the one writer (``downloads.Landing``: a private folder
beside the target), resumed from what an interrupted try left there, checked against the cluster's
sizes and ``sha256sum`` (links followed; a folder's links leading out of it skipped) and only then moved;
a shell in the job (``srun --jobid --overlap --pty`` on one of its nodes, ``Transport.shell``); and a
port of one of its nodes forwarded to 127.0.0.1 (``Transport.forward``). Paths reach the cluster as
argv words (``sh -c SCRIPT sh PATH``), never inside a script."""

from __future__ import annotations

import asyncio
import os
import posixpath
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from yanflow_tui.backends.base import Download, FileListing, JobFile
from yanflow_tui.backends.downloads import HASH, INFO, Landing, find_errors, parse_hashes, parse_info
from yanflow_tui.backends.slurm.transport import Transport
from yanflow_tui.errors import BackendError

Progress = Callable[[int, int | None], None]
# a folder's entries, links followed (a link shows its target's kind, size and time; find leaves out a loop)
LIST = 'cd -- "$1" || exit 2; pwd; LC_ALL=C find -L . -mindepth 1 -maxdepth 1 -printf "%Y\\t%s\\t%T@\\t%P\\0"'
HASH_TIMEOUT = 1800.0  # s: weights can be large


def _where(path: str, workdir: str) -> str:
    if not path:
        return workdir or "."
    return posixpath.normpath(path if path.startswith("/") else posixpath.join(workdir or ".", path))


async def list_dir(transport: Transport, workdir: str, path: str = "") -> FileListing:
    where = _where(path, workdir)
    result = await transport.run(["sh", "-c", LIST, "sh", where])
    find_errors(result.returncode, result.stderr, f"listing {where}")
    out = result.data.decode("utf-8", "surrogateescape")  # a name that is not UTF-8 stays downloadable
    head, _, rest = out.partition("\n")
    files = []
    for entry in rest.split("\0"):
        parts = entry.split("\t", 3)
        if len(parts) != 4 or not parts[1].isdigit() or not parts[3]:
            continue
        kind, size, mtime, name = parts
        try:
            stamp: datetime | None = datetime.fromtimestamp(float(mtime), timezone.utc)
        except ValueError:
            stamp = None
        files.append(JobFile(name, posixpath.join(head, name), int(size), stamp, kind == "d"))
    files.sort(key=lambda f: (not f.is_dir, f.name))
    return FileListing(head or where, tuple(files))


async def _hashes(transport: Transport, path: str) -> dict[str, str] | None:
    """name (as INFO names them; "." for a single file) -> sha256; None without ``sha256sum``."""
    result = await transport.run(["sh", "-c", HASH, "sh", path], timeout=HASH_TIMEOUT)
    try:
        find_errors(result.returncode, result.stderr, path)
    except BackendError:
        return None
    return parse_hashes(result.data.decode("utf-8", "surrogateescape"), single=path)


async def download(
    transport: Transport, workdir: str, path: str, target: Path, progress: Progress | None = None
) -> Download:
    """``path`` (a file, or a folder: every file under it, links followed) into ``target`` through a
    ``Landing``: each file resumed from what an interrupted try left, checked, then moved into place."""
    where = _where(path, workdir)
    if await asyncio.to_thread(os.path.lexists, target):
        raise BackendError(f"{target} exists; not replaced")
    result = await transport.run(["sh", "-c", INFO, "sh", where])
    loops = find_errors(result.returncode, result.stderr, f"reading {where}")
    listing = parse_info(result.data, loops)
    hashes = await _hashes(transport, where)
    checked = "size and sha256" if hashes is not None else "size"
    counted = _Counter(sum(listing.sizes.values()), progress)
    landing = await asyncio.to_thread(Landing, target, listing.folder)
    try:
        resumed = 0
        for name, size in sorted(listing.sizes.items()):
            source = where if name == "." else posixpath.join(where, name)
            offset = await asyncio.to_thread(landing.have, name, size, (hashes or {}).get(name))
            resumed += offset
            counted.add(offset)
            if offset == size and size:
                continue  # complete already (an empty file is made again: nothing to fetch)
            part = await asyncio.to_thread(landing.open, name, offset)
            try:
                if offset < size:
                    async for chunk in transport.read_bytes(source, offset):
                        await asyncio.to_thread(part.write, chunk)
                        counted.add(len(chunk))
            finally:
                await asyncio.to_thread(part.close)
        await asyncio.to_thread(landing.finish, listing.sizes, hashes, where, "the cluster")
    finally:
        await asyncio.to_thread(landing.close)
    return Download(target, counted.total, checked, resumed, listing.skipped)


class _Counter:
    def __init__(self, total: int, progress: Progress | None) -> None:
        self.done, self.total, self.progress = 0, total, progress

    def add(self, n: int) -> None:
        self.done += n
        if self.progress is not None:
            self.progress(self.done, self.total)


def srun_shell(job_id: str, node: str) -> str:
    """The login node's script for a shell inside job ``job_id`` on ``node`` (the user's $SHELL there)."""
    import shlex

    argv = ["srun", f"--jobid={job_id}", "--overlap", "--pty", "-N1", "-n1", "-w", node]
    return f'exec {shlex.join(argv)} "${{SHELL:-/bin/sh}}"\n'


def node_addr(show_node: str, node: str) -> str:
    """NodeAddr= of ``scontrol show node`` output (the name when it says none)."""
    for word in show_node.split():
        if word.startswith("NodeAddr="):
            return word.partition("=")[2] or node
    return node
