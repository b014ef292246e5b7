"""A real TensorBoard where a job's files are (a Slurm login node, a Kubernetes pod), started through the
backend's own connection: ``serve_remote`` runs the cluster's ``tensorboard`` command there detached, in
a session of its own (``setsid``, where the cluster has it) on 127.0.0.1 and a port the OS picks
(``--port 0``, read back from its log), private to its user (a secret path prefix, see ``REMOTE_START``)
and ended by a watchdog when the console's connection ends, forwards a local port to it, and waits
until that answers over HTTP; its stop closes the forward and signals the server's whole process group
(the data server it spawns too). Each script is a constant; what varies (the log directory, the command's words, a pid)
reaches it as its arguments (``sh -c SCRIPT sh ARGS...``). Used by ``yanflow_tui.tensorboards`` through
each backend's ``_tensorboard``; no UI here."""

from __future__ import annotations

import asyncio
import contextlib
import re
import shlex
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from yanflow_tui.backends.base import TensorBoardTask
from yanflow_tui.errors import BackendError

START_SECONDS = 60.0  # the server printing its address, then answering over HTTP
POLL_SECONDS = 0.5  # its log read again while it starts


class TensorBoardNotThere(BackendError):
    """The cluster has no tensorboard where the files are (exit 127, or the module is not installed)."""


async def answering(url: str, timeout: float, ended: Callable[[], str] | None = None) -> None:
    """Wait until ``url`` answers over HTTP 200 (or ``ended`` says why it never will: an error)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout

    def probe() -> bool:
        import urllib.request  # with http.client and email: not loaded before the first paint

        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                return answer.status == 200
        except OSError:
            return False

    while True:
        why = ended() if ended is not None else ""
        if why:
            raise BackendError(f"{why} before answering at {url}")
        if await asyncio.to_thread(probe):
            return
        if loop.time() > deadline:
            raise BackendError(f"tensorboard did not answer at {url} within {timeout:.0f} s")
        await asyncio.sleep(0.2)


# The server is private to its user: it serves under a secret path prefix made there and written to a
# flag file (``--flagfile``: the prefix is in no argv that ``ps`` shows to the login node's other users)
# in a folder of its own, mode 0700, with its log (0600). It never outlives the console's connection: a
# watchdog ends it (and removes the folder) once the process that holds the connection is gone, the
# first ancestor that is not a shell (sshd's session, or the console itself where commands run here).
# Where no such process can be seen (a Kubernetes exec: the command's parent is outside the pod's PID
# namespace, so its parent pid is 0 or 1), the watchdog holds a lease instead: the console touches
# ``DIR/alive`` every ``LEASE_SECONDS / 3`` (``serve_remote``), the watchdog takes the mark away as it
# looks, and ends the server once no mark came for ``LEASE_SECONDS``: a console killed with SIGKILL, or
# one whose connection went, leaves a server that ends by itself. The last word printed says which
# watchdog runs ("conn" or "lease"). Arguments: LEASE_SECONDS LOGDIR COMMAND...
LEASE_SECONDS = 90
REMOTE_START = (
    'lease=$1; logdir=$2; shift 2; command -v "$1" >/dev/null 2>&1 || { echo "$1: not found" >&2; exit 127; }; '
    "umask 077; "
    'dir=$(mktemp -d "${TMPDIR:-/tmp}/yanflow-tensorboard.XXXXXX") || exit 3; '
    "prefix=$(od -An -N18 -tx1 /dev/urandom | tr -d ' \\n'); "
    '[ "${#prefix}" -ge 32 ] || exit 3; '
    'printf -- \'--path_prefix=/%s\\n\' "$prefix" >"$dir/flags" || exit 3; '
    "conn=$PPID; "
    'while [ "$conn" -gt 1 ] && [ -r "/proc/$conn/stat" ]; do '
    'case $(cat "/proc/$conn/comm" 2>/dev/null) in '
    'sh|bash|dash|zsh|ksh|mksh|ash|busybox) conn=$(cut -d" " -f4 "/proc/$conn/stat");; *) break;; esac; done; '
    'if command -v setsid >/dev/null 2>&1; then set -- setsid "$@"; fi; '
    '"$@" --flagfile "$dir/flags" --logdir "$logdir" --host 127.0.0.1 --port 0 </dev/null >"$dir/log" 2>&1 & '
    "pid=$!; "
    'if [ "$conn" -gt 1 ] && [ -d "/proc/$conn" ]; then watch=conn; else watch=lease; : >"$dir/alive"; fi; '
    '( if [ "$watch" = conn ]; then while [ -d "/proc/$conn" ] && kill -0 "$pid" 2>/dev/null; do sleep 1; done; '
    'else quiet=0; while kill -0 "$pid" 2>/dev/null && [ "$quiet" -lt "$lease" ]; do sleep 1; '
    'if [ -e "$dir/alive" ]; then rm -f -- "$dir/alive"; quiet=0; else quiet=$((quiet + 1)); fi; done; fi; '
    'kill -TERM "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null; sleep 3; '
    'kill -KILL "-$pid" 2>/dev/null; kill -KILL "$pid" 2>/dev/null; rm -rf -- "$dir" ) '
    "</dev/null >/dev/null 2>&1 & "
    'echo "$pid $dir $prefix $watch"'
)
REMOTE_ALIVE = ': >"$1/alive"'  # the console's mark for a lease watchdog (its folder as $1)
REMOTE_LOG = 'cat -- "$2/log" 2>/dev/null; kill -0 "$1" 2>/dev/null || echo "@yanflow: exited"'
REMOTE_STOP = (
    'kill -TERM "-$1" 2>/dev/null || kill -TERM "$1" 2>/dev/null; i=0; '
    'while kill -0 "$1" 2>/dev/null && [ "$i" -lt 50 ]; do sleep 0.2; i=$((i + 1)); done; '
    'kill -KILL "-$1" 2>/dev/null; kill -KILL "$1" 2>/dev/null; rm -rf -- "$2"; exit 0'
)
STARTED = re.compile(r"([0-9]+) (/\S*/yanflow-tensorboard\.[A-Za-z0-9]+) ([0-9a-f]{32,}) (conn|lease)")
EXITED = "@yanflow: exited"
SERVING = re.compile(r"TensorBoard \S* ?at http://127\.0\.0\.1:([0-9]+)/")
MISSING = ("No module named tensorboard", "No module named 'tensorboard", "command not found", ": not found")

# argv -> (exit code, stdout, stderr) of one command where the files are
RemoteRun = Callable[[list[str]], Awaitable[tuple[int, str, str]]]
# a port there -> (the local port forwarded to it, its close)
RemoteForward = Callable[[int], Awaitable[tuple[int, Callable[[], Awaitable[None]]]]]


def remote_command(value: Any, cluster: str) -> tuple[str, ...]:
    """The cluster config's ``tensorboard: {command: [...]}`` (a list of words; a string is split as a
    shell would, into words: it never reaches a shell); ``tensorboard`` without one."""
    if value in (None, ""):
        return ("tensorboard",)
    command = value.get("command") if isinstance(value, dict) else None
    if isinstance(command, str):
        command = shlex.split(command)
    if not isinstance(command, list) or not command or not all(isinstance(w, str) and w for w in command):
        raise BackendError(f"cluster {cluster!r}: tensorboard: expected {{command: [WORD, ...]}}, got {value!r}")
    return tuple(command)


def _log_tail(text: str, lines: int = 3) -> str:
    kept = [line for line in text.replace(EXITED, "").splitlines() if line.strip()]
    return " / ".join(kept[-lines:]) or "no output"


async def serve_remote(
    run: RemoteRun,
    forward: RemoteForward,
    command: Sequence[str],
    logdir: str,
    where: str,
    lease: int = LEASE_SECONDS,
) -> TensorBoardTask:
    """Start ``command --logdir LOGDIR --host 127.0.0.1 --port 0`` detached where ``run`` runs, wait for
    the port it prints, forward a local port to it and wait until that answers over HTTP. Where its
    watchdog holds a lease (see ``REMOTE_START``), a task renews it until the stop. Raises
    ``TensorBoardNotThere`` where the command is not found (or is a Python without the package)."""
    code, out, err = await run(["sh", "-c", REMOTE_START, "sh", str(lease), logdir, *command])
    if code == 127:
        raise TensorBoardNotThere(f"{where} has no {command[0]}")
    started = STARTED.fullmatch(out.strip())
    if code or started is None:
        raise BackendError(f"starting tensorboard on {where}: {_log_tail(err or out) if code else repr(out)}")
    pid, log, prefix, watch = started.groups()  # (``log``: its folder)
    renewing = asyncio.create_task(_renew(run, log, lease)) if watch == "lease" else None

    async def kill() -> None:
        if renewing is not None:
            renewing.cancel()
        await run(["sh", "-c", REMOTE_STOP, "sh", pid, log])

    close: Callable[[], Awaitable[None]] | None = None
    try:
        port = await _remote_port(run, pid, log, where, command)
        local_port, close = await forward(port)
        url = f"http://127.0.0.1:{local_port}/{prefix}/"
        await answering(url, START_SECONDS)
    except BaseException:
        with contextlib.suppress(Exception):
            if close is not None:
                await asyncio.shield(close())
            await asyncio.shield(kill())
        raise

    async def stop() -> None:
        try:
            assert close is not None
            await close()
        finally:
            await kill()

    return TensorBoardTask(url, f"tensorboard (pid {pid}) on {where}, port {port} forwarded here", stop)


async def _renew(run: RemoteRun, folder: str, lease: int) -> None:
    """Mark the server's folder alive every third of its lease, until cancelled (a failed mark is tried
    again at the next: the lease outlasts two misses)."""
    while True:
        await asyncio.sleep(lease / 3)
        with contextlib.suppress(Exception):
            await run(["sh", "-c", REMOTE_ALIVE, "sh", folder])


async def _remote_port(run: RemoteRun, pid: str, log: str, where: str, command: Sequence[str]) -> int:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + START_SECONDS
    while True:
        _, text, _ = await run(["sh", "-c", REMOTE_LOG, "sh", pid, log])
        found = SERVING.search(text)
        if found:
            return int(found.group(1))
        if text.rstrip().endswith(EXITED):
            if any(sign in text for sign in MISSING):
                raise TensorBoardNotThere(f"{where} has no tensorboard ({' '.join(command)}: {_log_tail(text, 1)})")
            raise BackendError(f"tensorboard exited on {where}: {_log_tail(text)}")
        if loop.time() > deadline:
            raise BackendError(f"tensorboard on {where} printed no address within {START_SECONDS:.0f} s")
        await asyncio.sleep(POLL_SECONDS)
