"""A Slurm job's TensorBoard event files, read through the cluster's own transport (the same SSH
connection as every other command; SFTP would need a change to ``transport.py``): the job's log
directory (an ``export YANFLOW_TB_LOGDIR=...`` line of its batch script, else WORKDIR/tb), the
event files under it (``find -printf``), and a byte range of one (``Transport.read_from``, which
reads from an offset and says where it started: 0 for a file now shorter than the offset); and, for
a TensorBoard on the login node (``tbserver.serve_remote``), the transport as its command runner
and its port forward."""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Awaitable, Callable

from yanflow_tui.backends.slurm.transport import Transport
from yanflow_tui.curves import EVENT_PREFIX, LOGDIR_ENV, EventFile, is_event_file, logdir_for
from yanflow_tui.errors import BackendError

MAX_HEADER = 100


def logdir_from_script(script: str, workdir: str) -> str:
    """The log directory a batch script exports (relative to the job's workdir), else WORKDIR/tb."""
    marker = f"export {LOGDIR_ENV}="
    for line in script.splitlines():
        if line.startswith(marker):
            try:
                words = shlex.split(line[len("export ") :])
            except ValueError:
                break
            if len(words) == 1:
                return logdir_for({"logdir": words[0].partition("=")[2]}, workdir)
    return logdir_for(None, workdir)


async def job_logdir(transport: Transport, job_id: str, workdir: str) -> str:
    result = await transport.run(["scontrol", "write", "batch_script", job_id, "-"])
    return logdir_from_script(result.stdout if result.ok else "", workdir)


def parse_find(output: str) -> list[EventFile]:
    """``find -printf '%s %i %p\\0'`` output: size, inode, path per entry."""
    found = []
    for entry in output.split("\0"):
        size, _, rest = entry.lstrip("\n").partition(" ")
        inode, _, path = rest.partition(" ")
        if size.isdigit() and inode.isdigit() and path and is_event_file(posixpath.basename(path)):
            found.append(EventFile(path, int(size), inode))
    return sorted(found, key=lambda f: f.path)


async def list_event_files(transport: Transport, logdir: str) -> list[EventFile]:
    where = logdir if logdir.startswith("/") else "./" + logdir  # never an option of find
    result = await transport.run(["find", where, "-type", "f", "-name", EVENT_PREFIX + "*", "-printf", "%s %i %p\\0"])
    if not result.ok and "No such file" in result.stderr and not result.stdout:
        return []  # the job has written nothing yet
    if not result.ok and not result.stdout:
        raise BackendError(f"cannot list {logdir}: {result.error()}")
    return parse_find(result.stdout)


def _inside(path: str, logdir: str) -> bool:
    path, logdir = posixpath.normpath(path), posixpath.normpath(logdir)
    return path.startswith(logdir.rstrip("/") + "/") and is_event_file(posixpath.basename(path))


async def read_range(transport: Transport, logdir: str, path: str, offset: int, limit: int) -> tuple[int, bytes]:
    """(start, bytes): at most ``limit`` bytes of ``path`` from ``offset`` (from 0 where the file is
    now shorter); ``path`` must be an event file under ``logdir``."""
    if not _inside(path, logdir):
        raise BackendError(f"not an event file under the job's log directory {logdir}: {path}")
    stream = await transport.read_from(path, max(0, offset), False, 0, 0)
    buf = bytearray()
    header: tuple[int, int] | None = None
    try:
        async for chunk in stream:
            buf += chunk
            if header is None:
                end = buf.find(b"\n")
                if end < 0:
                    if len(buf) > MAX_HEADER:
                        raise BackendError(f"cannot read {path}: no header from read_from")
                    continue
                head = bytes(buf[:end])
                del buf[: end + 1]
                try:
                    header = (int(head.split()[0]), int(head.split()[1]))
                except (IndexError, ValueError):
                    raise BackendError(f"cannot read {path}: bad header {head!r}") from None
            if len(buf) >= limit:
                break
    finally:
        await stream.aclose()
    if header is None or header[0] < 0:
        return 0, b""  # gone since listed
    return header[1], bytes(buf[: max(0, limit)])


def runner(transport: Transport) -> Callable[[list[str]], Awaitable[tuple[int, str, str]]]:
    """``transport.run`` as ``serve_remote`` calls it: argv -> (exit code, stdout, stderr)."""

    async def run(argv: list[str]) -> tuple[int, str, str]:
        result = await transport.run(argv)
        return result.returncode, result.stdout, result.stderr

    return run


def forwarder(transport: Transport) -> Callable[[int], Awaitable[tuple[int, Callable[[], Awaitable[None]]]]]:
    """A free local port forwarded to ``port`` of the login node's loopback, through the same connection."""

    async def forward(port: int) -> tuple[int, Callable[[], Awaitable[None]]]:
        return await transport.forward("127.0.0.1", port)

    return forward
