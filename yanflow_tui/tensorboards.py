"""A real TensorBoard for a job, one key away: the console runs the ``tensorboard`` package's server
(the optional extra, from this interpreter) on 127.0.0.1 and a free port over the job's event files.
A job whose files are on this machine (``capabilities.runs_here``) is served from its log directory
as it is; any other backend with ``capabilities.event_files`` through a private local mirror (the
layout RUN/BASENAME of the log directory) that a refresher task keeps up by reading only what each
file gained. A backend with ``capabilities.tensorboard`` starts one on the cluster instead, behind
the read-only gate: Determined's task (its proxy URL), or the real server where the files are (a Slurm
login node, a Kubernetes pod: ``backends.tbserver``, over the backend's own command runner, with a
local port forwarded through the same connection). Where that cluster has no tensorboard, or is read-only,
a backend that also has ``capabilities.event_files`` falls back to the local mirror, and says so in
``TensorBoard.what``. ``TensorBoards`` keeps one per job and stops what it started: the process and
its refresher, or the cluster's task (a remote server's process group and its forward). No Textual
here; the CLI verb ``tensorboard`` is ``yanflow_tui.cli.tensorboard``.

The server this console runs is private to its user and never outlives the console: it serves under
an unguessable path prefix (``--path_prefix``, handed over on its stdin, so it is in no process's
argv for other users of a shared login node to read; the URL carries it), and ``WRAPPER`` ends it
when its stdin, a pipe from the console, reaches end of file (the console exited, however: SIGKILL
included). Its log and a pid file are in a 0700 folder of the state dir (``boards_dir``), mode
0600; a server whose console died before it could end is swept at the next start (``sweep``)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import posixpath
import secrets
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from yanflow_tui.backends import tbserver
from yanflow_tui.backends.base import BackendError
from yanflow_tui.backends.tbserver import TensorBoardNotThere
from yanflow_tui.curves import EventListing, TensorBoardMissing
from yanflow_tui.locations import open_private, private_file

READ_LIMIT = 4 * 1024 * 1024  # bytes of one file per read
REFRESH_SECONDS = 2.0  # the mirror's refresh while the server runs
RELOAD_SECONDS = 1  # TensorBoard's own re-read of its log directory
START_SECONDS = 60.0  # the server answering over HTTP
STOP_SECONDS = 10.0  # the server exiting after SIGTERM (then SIGKILL)
REMOTE_SECONDS = tbserver.START_SECONDS + 30.0  # a remote start: its server coming up, its forward, an answer


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# TensorBoard's own program in a wrapper that reads the path prefix from its first stdin line and ends
# (its whole process) at the end of its stdin: the console's pipe, closed when the console exits.
WRAPPER = """# yanflow-tensorboard
import os, sys
prefix = sys.stdin.readline().strip()
if not prefix:
    sys.exit(2)
from tensorboard import program
board = program.TensorBoard()
board.configure(argv=[sys.argv[0], *sys.argv[1:], "--path_prefix", "/" + prefix])
board.launch()
print("serving", flush=True)
while sys.stdin.buffer.read(4096):
    pass
os._exit(0)
"""
WRAPPER_MARK = b"# yanflow-tensorboard"
BOARDS_DIR = "tensorboards"


def boards_dir() -> str:
    """The folder of this user's TensorBoards' logs and pid files (mode 0700, in the state dir)."""
    from yanflow_tui.locations import state_dir

    folder = os.path.join(state_dir(), BOARDS_DIR)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    os.chmod(folder, 0o700)
    return folder


def sweep(folder: str | None = None) -> list[int]:
    """End the servers whose console died without ending them (each pid file names the server and its
    console; a live console's are left alone, and so is a pid that is now another program), and drop
    the logs and pid files of every server that is gone. Returns the pids ended."""
    folder = folder or boards_dir()
    ended = []
    for name in os.listdir(folder):
        if not name.endswith(".pid"):
            continue
        path = os.path.join(folder, name)
        try:
            with open(path) as fh:
                server, console = (int(word) for word in fh.read().split())
        except (OSError, ValueError):
            continue  # being written (a start under way), or not ours
        if _alive(console):
            continue
        try:
            with open(f"/proc/{server}/cmdline", "rb") as fh:
                ours = WRAPPER_MARK in fh.read()
        except OSError:
            ours = False
        if ours:
            with contextlib.suppress(OSError):
                os.killpg(server, signal.SIGKILL)  # its own session: the group is its own
                ended.append(server)
        for leftover in (path, path[: -len(".pid")] + ".log"):
            with contextlib.suppress(OSError):
                os.unlink(leftover)
    return ended


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def server_argv(logdir: str, port: int) -> list[str]:
    """TensorBoard's program from this interpreter in ``WRAPPER`` (an argv list: no shell); the path
    prefix goes to its stdin."""
    return [
        sys.executable,
        "-c",
        WRAPPER,
        "--logdir",
        logdir,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--load_fast=false",  # the Python loader: it re-reads what the mirror gained every reload
        "--reload_interval",
        str(RELOAD_SECONDS),
    ]


class EventMirror:
    """Appended bytes of a job's event files, written to ``root`` as RUN/BASENAME. ``reads`` records
    every (path, offset, length) read."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.offsets: dict[str, int] = {}
        self.identities: dict[str, str] = {}
        self.reads: list[tuple[str, int, int]] = []

    def target(self, logdir: str, path: str) -> str:
        relative = posixpath.relpath(posixpath.dirname(path), logdir) if logdir else "."
        parts = [p for p in relative.split("/") if p not in ("", ".", "..")]
        return os.path.join(self.root, *parts, posixpath.basename(path))

    async def refresh(self, source: Any, job_id: str, call: Callable[[Awaitable[Any]], Awaitable[Any]]) -> int:
        """Read what each listed file gained; returns the number of bytes written."""
        listing: EventListing = await call(source.event_files(job_id))
        written = 0
        for entry in sorted(listing.files, key=lambda f: f.path):
            target = self.target(listing.logdir, entry.path)
            offset = self.offsets.get(entry.path, 0)
            known = self.identities.get(entry.path, "")
            if entry.size < offset or (entry.identity and known and entry.identity != known):
                offset = 0  # replaced or truncated: read again from the start
                with contextlib.suppress(OSError):
                    os.unlink(target)
            self.identities[entry.path] = entry.identity
            while offset < entry.size:
                start, data = await call(
                    source.read_event_bytes(job_id, entry.path, offset, min(READ_LIMIT, entry.size - offset))
                )
                self.reads.append((entry.path, start, len(data)))
                if not data or start != offset:
                    break
                await asyncio.to_thread(_append, target, offset, data)
                offset += len(data)
                written += len(data)
            self.offsets[entry.path] = offset
        return written


def _append(target: str, offset: int, data: bytes) -> None:
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "r+b" if offset else "wb") as out:
        out.seek(offset)
        out.write(data)
        out.truncate()


@dataclass
class TensorBoard:
    """One job's TensorBoard: where it answers and what to stop."""

    key: str
    url: str
    what: str  # where it runs, for the user ("this console over a mirror of …", "the cluster's task …")
    process: asyncio.subprocess.Process | None = None
    mirror: EventMirror | None = None
    refresher: asyncio.Task | None = None
    stop_remote: Callable[[], Awaitable[None]] | None = None
    directory: str = ""  # the mirror's private directory, removed at stop
    files: tuple[str, ...] = ()  # the server's log and pid file (``boards_dir``), removed at stop
    failure: str = field(default="")  # the refresher's last failure

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    async def stop(self) -> None:
        if self.refresher is not None:
            self.refresher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.refresher
        if self.process is not None and self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.terminate()
            try:
                await asyncio.wait_for(self.process.wait(), STOP_SECONDS)
            except (TimeoutError, asyncio.TimeoutError):
                with contextlib.suppress(ProcessLookupError):
                    self.process.kill()
                await asyncio.wait_for(self.process.wait(), STOP_SECONDS)
        if self.stop_remote is not None:
            await self.stop_remote()
        if self.directory:
            await asyncio.to_thread(shutil.rmtree, self.directory, True)
        for path in self.files:
            with contextlib.suppress(OSError):
                os.unlink(path)


def _require_tensorboard() -> None:
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        raise TensorBoardMissing() from None


async def _answering(url: str, process: asyncio.subprocess.Process, timeout: float) -> None:
    """Wait until ``url`` answers over HTTP (or the process exits: an error)."""

    def ended() -> str:
        return f"tensorboard exited ({process.returncode})" if process.returncode is not None else ""

    await tbserver.answering(url, timeout, ended)


async def _direct(awaitable: Awaitable[Any], timeout: float | None = None) -> Any:
    return await awaitable


async def start(key: str, backend: Any, job_id: str, call: Callable[..., Awaitable[Any]] | None = None) -> TensorBoard:
    """Start a TensorBoard for the job (see the module's docstring); it answers when this returns."""
    call = call or _direct
    caps = backend.capabilities
    note = ""
    if getattr(caps, "tensorboard", False):
        if caps.event_files and getattr(backend, "read_only", False):
            note = "read-only: nothing started on the cluster"
        else:
            try:  # the gate answers first: this creates a task, or a process on the cluster
                task = await call(backend.tensorboard(job_id), timeout=REMOTE_SECONDS)
            except TensorBoardNotThere as exc:
                if not caps.event_files:
                    raise
                note = str(exc)
            else:
                return TensorBoard(key, task.url, task.what, stop_remote=task.stop)
    if not caps.event_files:
        raise BackendError(f"cluster {backend.name!r} has no TensorBoard event files for its jobs")
    _require_tensorboard()
    listing: EventListing = await call(backend.event_files(job_id))
    mirror: EventMirror | None = None
    directory = ""
    if caps.runs_here and await asyncio.to_thread(os.path.isdir, listing.logdir):
        logdir, what = listing.logdir, f"this console over {listing.logdir}"
    else:
        directory = tempfile.mkdtemp(prefix="yanflow-tensorboard-")
        logdir = os.path.join(directory, "logdir")
        os.mkdir(logdir)
        mirror = EventMirror(logdir)
        what = f"this console over a local mirror of {listing.logdir}"
    if note:
        what = f"{what} ({note})"
    board = TensorBoard(key, "", what, mirror=mirror, directory=directory)
    try:
        if mirror is not None:
            await mirror.refresh(backend, job_id, call)
        port = free_port()
        prefix = secrets.token_urlsafe(24)
        board.url = f"http://127.0.0.1:{port}/{prefix}/"
        folder = await asyncio.to_thread(boards_dir)
        stem = os.path.join(folder, f"tensorboard-{port}-{secrets.token_hex(4)}")
        log_fd = open_private(Path(stem + ".log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        board.files = (stem + ".log", stem + ".pid")
        try:
            board.process = await asyncio.create_subprocess_exec(
                *server_argv(logdir, port),
                stdin=asyncio.subprocess.PIPE,  # its lifetime: it ends at this pipe's end, i.e. with the console
                stdout=log_fd,
                stderr=log_fd,
                start_new_session=True,  # Ctrl-C in the terminal reaches the console, which stops it
            )
        finally:
            os.close(log_fd)
        private_file(Path(stem + ".pid"), f"{board.process.pid} {os.getpid()}\n")
        assert board.process.stdin is not None
        board.process.stdin.write(prefix.encode() + b"\n")
        await board.process.stdin.drain()
        await _answering(board.url, board.process, START_SECONDS)
    except BaseException:
        await board.stop()
        raise
    if mirror is not None:
        board.refresher = asyncio.create_task(_keep_up(board, backend, job_id, call))
    return board


async def _keep_up(board: TensorBoard, backend: Any, job_id: str, call: Callable[..., Awaitable[Any]]) -> None:
    assert board.mirror is not None
    while True:
        await asyncio.sleep(REFRESH_SECONDS)
        try:
            await board.mirror.refresh(backend, job_id, call)
            board.failure = ""
        except Exception as exc:  # a lost connection: tried again at the next round
            board.failure = str(exc)


class TensorBoards:
    """The console's TensorBoards, one per job key at most; stopped with a key or all at exit."""

    def __init__(self) -> None:
        self.open: dict[str, TensorBoard] = {}
        self._starting: dict[str, asyncio.Task[TensorBoard]] = {}
        self._swept = False

    def of(self, key: str) -> TensorBoard | None:
        return self.open.get(key)

    async def start(
        self, key: str, backend: Any, job_id: str, call: Callable[..., Awaitable[Any]] | None = None
    ) -> TensorBoard:
        """The job's TensorBoard: the one already open, or a new one (a second start while one is
        starting waits for it; one whose server exited is replaced)."""
        board = self.open.get(key)
        if board is not None and board.process is not None and board.process.returncode is not None:
            await self.stop(key)
        elif board is not None:
            return board
        if not self._swept:  # what a console that died left running (its pipe should have ended it)
            self._swept = True
            with contextlib.suppress(OSError):
                await asyncio.to_thread(sweep)
        task = self._starting.get(key)
        if task is None:
            task = self._starting[key] = asyncio.ensure_future(start(key, backend, job_id, call))
            task.add_done_callback(lambda done: self._started(key, done))
        return await asyncio.shield(task)  # a caller cancelled meanwhile: the board is kept all the same

    def _started(self, key: str, task: asyncio.Future[TensorBoard]) -> None:
        self._starting.pop(key, None)
        if not task.cancelled() and task.exception() is None:
            self.open[key] = task.result()

    async def stop(self, key: str) -> bool:
        board = self.open.pop(key, None)
        if board is None:
            return False
        await board.stop()
        return True

    async def stop_all(self) -> None:
        """Every TensorBoard, and any still starting (its start stops what it had started)."""
        for task in list(self._starting.values()):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for key in list(self.open):
            await self.stop(key)
