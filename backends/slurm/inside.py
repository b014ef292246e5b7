"""Inside a Slurm job, through the cluster's own transport: its output folder listed (``find -printf``),
files downloaded (``Transport.read_bytes``: SFTP on the asyncssh connection, ``tail -c +N`` through the
OpenSSH master or on the login node) into ``.NAME.part`` beside the target, resumed from what an
interrupted try left there, checked against the cluster's sizes and ``sha256sum`` and only then renamed;
a shell in the job (``srun --jobid --overlap --pty`` on one of its nodes, ``Transport.shell``); and a
port of one of its nodes forwarded to 127.0.0.1 (``Transport.forward``). Paths reach the cluster as
argv words (``sh -c SCRIPT sh PATH``), never inside a script."""

from __future__ import annotations

import asyncio
import os
import posixpath
import shutil
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO

from yanflow_tui.backends.base import Download, FileListing, JobFile
from yanflow_tui.backends.downloads import HASH, finish, is_complete, member, parse_hashes, partial_path
from yanflow_tui.backends.slurm.transport import Transport
from yanflow_tui.errors import BackendError

Progress = Callable[[int, int | None], None]
LIST = 'cd -- "$1" || exit 2; pwd; find . -mindepth 1 -maxdepth 1 -printf "%y\\t%s\\t%T@\\t%P\\0"'
INFO = (
    'if [ -d "$1" ]; then cd -- "$1" || exit 2; echo dir; find . -type f -printf "%s\\t%P\\0"; '
    'elif [ -f "$1" ]; then echo file; find "$1" -maxdepth 0 -printf "%s\\t.\\0"; '
    'else echo "no such file or folder: $1" >&2; exit 2; fi'
)
HASH_TIMEOUT = 1800.0  # s: weights can be large


def _where(path: str, workdir: str) -> str:
    if not path:
        return workdir or "."
    return posixpath.normpath(path if path.startswith("/") else posixpath.join(workdir or ".", path))


async def _checked(transport: Transport, script: str, path: str, what: str, timeout: float | None = None) -> str:
    result = await transport.run(["sh", "-c", script, "sh", path], timeout=timeout)
    if not result.ok:
        raise BackendError(f"{what}: {result.error()}")
    return result.stdout


async def list_dir(transport: Transport, workdir: str, path: str = "") -> FileListing:
    where = _where(path, workdir)
    out = await _checked(transport, LIST, where, f"listing {where}")
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


def _sizes(text: str) -> dict[str, int]:
    sizes = {}
    for entry in text.split("\0"):
        size, _, name = entry.partition("\t")
        if size.isdigit() and name:
            sizes[name] = int(size)
    return sizes


async def _hashes(transport: Transport, path: str) -> dict[str, str] | None:
    """name (as ``_sizes`` names them; "." for a single file) -> sha256; None without ``sha256sum``."""
    result = await transport.run(["sh", "-c", HASH, "sh", path], timeout=HASH_TIMEOUT)
    if not result.ok:
        return None
    return parse_hashes(result.stdout, single=path)


async def download(
    transport: Transport, workdir: str, path: str, target: Path, progress: Progress | None = None
) -> Download:
    where = _where(path, workdir)
    if await asyncio.to_thread(target.exists):
        raise BackendError(f"{target} exists; not replaced")
    info = await _checked(transport, INFO, where, f"reading {where}")
    kind, _, rest = info.partition("\n")
    sizes = _sizes(rest)
    hashes = await _hashes(transport, where)
    checked = "size and sha256" if hashes is not None else "size"
    part = partial_path(target)
    counted = _Counter(sum(sizes.values()), progress)
    if kind.strip() == "file":
        size = sizes.get(".", 0)
        resumed = await _file(transport, where, part, size, counted)
        await asyncio.to_thread(finish, part, target, where, size, hashes.get(".") if hashes else None, "the cluster")
        return Download(target, size, checked, resumed)
    # a folder: each file into .NAME.part/ (each resumed as a single file is), then the folder renamed
    done = await asyncio.to_thread(_folder_part, part, sizes, hashes)
    resumed = sum(sizes[name] for name in done)
    counted.add(resumed)
    for name in sorted(set(sizes) - done):
        local = part / name
        resumed += await _file(transport, posixpath.join(where, name), partial_path(local), sizes[name], counted)
        await asyncio.to_thread(
            finish, partial_path(local), local, name, sizes[name], (hashes or {}).get(name), "the cluster"
        )
    await asyncio.to_thread(_finish_folder, part, target, where, sizes)
    return Download(target, counted.total, checked, resumed)


def _folder_part(part: Path, sizes: dict[str, int], hashes: dict[str, str] | None) -> set[str]:
    """The temp folder made ready; the names complete in it already (from an interrupted try): the
    cluster's size, and its sha256 where it has one (a file changed there since is fetched again)."""
    if part.exists() and not part.is_dir():
        part.unlink()
    part.mkdir(parents=True, exist_ok=True)
    root = part.resolve()
    done = set()
    for name, size in sizes.items():
        local = member(part, root, name)
        local.parent.mkdir(parents=True, exist_ok=True)
        if is_complete(local, size, (hashes or {}).get(name)):
            done.add(name)
    return done


def _finish_folder(part: Path, target: Path, where: str, sizes: dict[str, int]) -> None:
    got = {str(p.relative_to(part)) for p in part.rglob("*") if p.is_file()}
    if got != set(sizes):
        shutil.rmtree(part, ignore_errors=True)
        raise BackendError(f"{where}: the files arrived do not match the cluster's; the partial folder is removed")
    os.replace(part, target)


class _Counter:
    def __init__(self, total: int, progress: Progress | None) -> None:
        self.done, self.total, self.progress = 0, total, progress

    def add(self, n: int) -> None:
        self.done += n
        if self.progress is not None:
            self.progress(self.done, self.total)


def _offset(part: Path, size: int) -> int:
    offset = part.stat().st_size if part.exists() else 0
    if offset > size:  # the source changed since: start again
        part.unlink()
        return 0
    part.parent.mkdir(parents=True, exist_ok=True)
    return offset


async def _file(transport: Transport, path: str, part: Path, size: int, counted: _Counter) -> int:
    """Fetch ``path`` into ``part`` from what is there already; the bytes an earlier try had fetched."""
    offset = await asyncio.to_thread(_offset, part, size)
    counted.add(offset)
    if offset < size:
        handle: BinaryIO | None = None  # opened with the first byte: a read failing before it leaves no file
        try:
            async for chunk in transport.read_bytes(path, offset):
                if handle is None:
                    handle = await asyncio.to_thread(part.open, "ab")
                await asyncio.to_thread(handle.write, chunk)
                counted.add(len(chunk))
        finally:
            if handle is not None:
                await asyncio.to_thread(_close, handle)
    return offset


def _close(handle) -> None:
    handle.flush()
    os.fsync(handle.fileno())
    handle.close()


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
