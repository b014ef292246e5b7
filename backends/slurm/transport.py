"""How Slurm commands reach the cluster: over one persistent SSH connection (asyncssh) or as local
subprocesses. Every command is an argv list joined with ``shlex.join`` into a small script fed on
stdin to ``/bin/sh -s`` (never the login shell), with a timeout. Every argv run is recorded in
``history`` so tests can prove what did (and did not) run."""

from __future__ import annotations

import abc
import asyncio
import contextlib
import getpass
import logging
import os
import re
import select
import shlex
import stat
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from yanflow_tui.backends.prompting import Asker, within
from yanflow_tui.errors import AuthRequired, BackendError, ConfigError

log = logging.getLogger(__name__)

MAX_CHANNELS = 8  # OpenSSH's MaxSessions defaults to 10
DEFAULT_TIMEOUT = 20.0  # longer than Slurm's MessageTimeout (10 s); one command fits the hub's 30 s call timeout
CONNECT_TIMEOUT = 15.0
KEEPALIVE_SECONDS = 15
MAX_BACKOFF = 30.0
CHUNK = 65536  # bytes read at a time from a binary stream
SFTP_CHUNK = 1 << 18
MAX_HEADER = 100  # bytes: read_from_script's header line is shorter
PTY_POLL = 0.1
SHELL = "exec /bin/sh -s"
# Environment every command sees: epoch times in -o output.
PRELUDE = "SLURM_TIME_FORMAT=%s; export SLURM_TIME_FORMAT\n"


class Result:
    """A command's exit status and output: ``stdout`` its text, ``data`` the bytes it printed as the
    transport got them. A caller that splits a big output into lines reads ``data`` and decodes each
    line, so that the whole is never held as text beside its bytes (one non-ASCII character makes the
    text of a 100,000-line queue 2 bytes a character: 35 MB). The text is decoded (and kept) when read."""

    __slots__ = ("argv", "returncode", "stderr", "_out", "_text")

    def __init__(self, argv: tuple[str, ...], returncode: int, stdout: str | bytes, stderr: str):
        self.argv = argv
        self.returncode = returncode
        self.stderr = stderr
        self._out = stdout
        self._text = stdout if isinstance(stdout, str) else None

    def __repr__(self) -> str:
        return f"Result({self.argv!r}, {self.returncode}, {self._out[:200]!r}, {self.stderr[:200]!r})"

    @property
    def stdout(self) -> str:
        text = self._text
        if text is None:
            out = self._out
            text = self._text = out if isinstance(out, str) else out.decode(errors="replace")
        return text

    @property
    def data(self) -> bytes:
        out = self._out
        return out if isinstance(out, bytes) else out.encode()

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def error(self) -> str:
        text = (self.stderr or self.stdout).strip().splitlines()
        return text[-1] if text else f"exit status {self.returncode}"


class CommandTimeout(BackendError):
    """A command did not finish in time; it may still have had its effect."""


def wire(text: str) -> bytes:
    """A script or path as the remote side gets it: a name that was not UTF-8 (surrogate-escaped when
    read) goes back as its own bytes."""
    return text.encode("utf-8", "surrogateescape")


def script_for(argv: Sequence[str], stdin_data: str | None = None) -> str:
    """The /bin/sh script that runs ``argv`` (with ``stdin_data`` as its stdin, via a quoted heredoc)."""
    line = "exec " + shlex.join(argv)
    if stdin_data is None:
        return PRELUDE + line + " </dev/null\n"
    marker = "YANFLOW_EOF_" + os.urandom(8).hex()
    while marker in stdin_data:  # pragma: no cover - 64 random bits
        marker = "YANFLOW_EOF_" + os.urandom(8).hex()
    body = stdin_data if stdin_data.endswith("\n") else stdin_data + "\n"
    return f"{PRELUDE}{line} <<'{marker}'\n{body}{marker}\n"


def tail_script(path: str, lines: int, follow: bool) -> str:
    """``tail`` the file; when following, a watcher kills tail as soon as our stdin closes."""
    argv = ["tail", "-n", str(lines)] + (["-F"] if follow else []) + ["--", path]
    if not follow:
        return f"exec {shlex.join(argv)} </dev/null\n"
    return f"{shlex.join(argv)} </dev/null & T=$!\ncat >/dev/null; kill $T 2>/dev/null; wait $T\n"


def read_from_script(path: str, start: int, follow: bool, window: int, lines: int) -> str:
    """Print a header ``SIZE START PARTIAL``, then the file's bytes from offset START (``tail -c``,
    with ``-F`` when following; a watcher kills tail as soon as our stdin closes).

    ``start`` < 0 asks for the last ``lines`` lines of at most ``window`` bytes: START is where they
    begin, and PARTIAL is 1 when that is mid-line (a window too small for them). A file now shorter
    than ``start`` (truncated or replaced) is read from 0. Every value is an argv word of ``set --``."""
    setup = shlex.join(["set", "--", path, str(start), str(window), str(lines)])
    read = "tail -c +$((st + 1)) " + ("-F " if follow else "") + '-- "$1" </dev/null'
    body = (
        'if s=$(wc -c 2>/dev/null <"$1"); then s=$((s)); else s=-1; fi\n'
        "p=0\n"
        'if [ "$s" -lt 0 ]; then st=0\n'
        'elif [ "$2" -lt 0 ]; then\n'
        '  w=$3; [ "$s" -lt "$w" ] && w=$s\n'
        '  b=$(tail -c +$((s - w + 1)) -- "$1" | head -c "$w" | tail -n "$4" | wc -c); b=$((b))\n'
        "  st=$((s - b))\n"
        '  [ "$b" -ge "$w" ] && [ "$st" -gt 0 ] && [ -n "$(tail -c +$st -- "$1" | head -c 1)" ] && p=1\n'
        'elif [ "$s" -lt "$2" ]; then st=0\n'
        "else st=$2; fi\n"
        'printf "%s %s %s\\n" "$s" "$st" "$p"\n'
    )
    if not follow:
        return f"{setup}\n{body}exec {read}\n"
    return f"{setup}\n{body}{read} & T=$!\ncat >/dev/null; kill $T 2>/dev/null; wait $T\n"


class LineStream:
    """Lines (or, from a binary stream, byte chunks) from a long-running remote or local command;
    ``aclose`` stops the command."""

    def __init__(self, lines: AsyncIterator[str], closer):
        self._lines = lines
        self._closer = closer
        self.closed = False

    def __aiter__(self):
        return self

    async def __anext__(self) -> str:
        if self.closed:
            raise StopAsyncIteration
        return await self._lines.__anext__()

    async def aclose(self) -> None:
        if not self.closed:
            self.closed = True
            await self._closer()


class Transport(abc.ABC):
    """Runs Slurm commands. ``history`` holds every argv run, oldest first."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT):
        self.timeout = timeout
        self.history: list[tuple[str, ...]] = []
        self._user: str | None = None

    async def run(self, argv: Sequence[str], stdin_data: str | None = None, timeout: float | None = None) -> Result:
        argv = tuple(str(a) for a in argv)
        self.history.append(argv)
        script = script_for(argv, stdin_data)
        try:  # the time the user spends answering a login prompt is not the command's
            rc, out, err = await within(self._exec(script), timeout or self.timeout, self.waited)
        except (TimeoutError, asyncio.TimeoutError):
            raise CommandTimeout(f"{argv[0]} did not answer within {timeout or self.timeout:.0f} s") from None
        return Result(argv, rc, out, err)

    async def check(self, argv: Sequence[str], stdin_data: str | None = None, timeout: float | None = None) -> str:
        result = await self.run(argv, stdin_data, timeout)
        if not result.ok:
            raise BackendError(f"{argv[0]} failed: {result.error()}")
        return result.stdout

    @property
    def known_user(self) -> str:
        """``user()`` once it has been asked; "" before."""
        return self._user or ""

    async def user(self) -> str:
        """The user the cluster sees us as (``id -un`` over the transport, never ``$USER``)."""
        if self._user is None:
            self._user = (await self.check(["id", "-un"])).strip()
        return self._user

    async def tail(self, path: str, lines: int, follow: bool) -> LineStream:
        self.history.append(("tail", "-n", str(lines), *(["-F"] if follow else []), "--", path))
        return await self._stream(tail_script(path, lines, follow))

    async def read_from(self, path: str, start: int, follow: bool, window: int, lines: int) -> LineStream:
        """Raw byte chunks of ``read_from_script``: the header line, then the file from ``start``."""
        self.history.append(
            ("tail", "-c", f"+{start + 1}" if start >= 0 else f"-{lines}l", *(["-F"] if follow else []), "--", path)
        )
        return await self._stream(read_from_script(path, start, follow, window, lines), binary=True)

    def waited(self) -> float:
        """Seconds spent so far waiting on the user (a login prompt); deadlines leave them out."""
        return 0.0

    # -- inside a job (``backends/slurm/inside.py``) ------------------------------------------------
    async def read_bytes(self, path: str, offset: int) -> AsyncIterator[bytes]:
        """The bytes of ``path`` from ``offset`` on, in chunks, as they arrive: ``read_from`` (the file's
        size, then ``tail -c +N``), so that a stream cut short (a dropped connection, a killed ssh)
        raises, never ending as if the file ended there (a download keeps what arrived, to resume)."""
        stream = await self.read_from(path, offset, False, 0, 0)
        head, size, got = b"", -1, 0
        try:
            async for chunk in stream:
                if size < 0:
                    head += chunk
                    line, found, chunk = head.partition(b"\n")
                    if not found:
                        if len(head) > MAX_HEADER:
                            raise BackendError(f"{self.description}: cannot read {path}: {head[:40]!r}")
                        continue
                    size = self._read_header(path, offset, line)
                got += len(chunk)
                if chunk:
                    yield chunk
        finally:
            await stream.aclose()
        if size < 0:
            raise BackendError(f"{self.description}: cannot read {path}: no answer")
        if got < size - offset:
            raise BackendError(f"{self.description}: reading {path} stopped after {got} of {size - offset} bytes")

    def _read_header(self, path: str, offset: int, line: bytes) -> int:
        """The file's size from ``read_from_script``'s header line; a file gone, or now shorter than
        ``offset`` (it changed since), raises."""
        try:
            size, start = (int(word) for word in line.split()[:2])
        except ValueError:
            raise BackendError(f"{self.description}: cannot read {path}: {line[:40]!r}") from None
        if size < 0:
            raise BackendError(f"{self.description}: cannot read {path}: no such file (or not readable)")
        if start != offset:
            raise BackendError(f"{self.description}: {path} is {size} bytes now, shorter than {offset}: changed")
        return size

    def interactive(self, script: str) -> Callable[[], int]:
        """A blocking call that runs the /bin/sh ``script`` on the login node in the real terminal
        (a TTY) and returns its exit status."""
        raise BackendError(f"{self.description}: no interactive session")

    async def forward(self, host: str, port: int, local_port: int = 0) -> tuple[int, Callable[[], Awaitable[None]]]:
        """127.0.0.1:``local_port`` (0: a free one) reaching ``host:port`` as the login node sees it:
        (the local port, a coroutine function that stops the forward)."""
        raise BackendError(f"{self.description}: cannot forward ports")

    @abc.abstractmethod
    async def _exec(self, script: str) -> tuple[int, str | bytes, str]:
        """Run ``script`` in a shell: (exit status, stdout as text or as the bytes printed, stderr)."""

    @abc.abstractmethod
    async def _stream(self, script: str, binary: bool = False) -> LineStream: ...

    async def retry_login(self) -> None:
        """Log in again after a login that asked the user failed or was cancelled (the user's ``l``)."""
        raise BackendError(f"{self.description}: no login to retry")

    async def close(self) -> None:  # noqa: B027 - optional: a transport with no connection has nothing to release
        """Release the connection."""

    @property
    def description(self) -> str:
        return "local commands"


class LocalTransport(Transport):
    """Runs the scripts with ``/bin/sh -s`` on this machine."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT, env: dict[str, str] | None = None):
        super().__init__(timeout)
        self.env = env

    async def _spawn(self):
        try:
            return await asyncio.create_subprocess_exec(
                "/bin/sh",
                "-s",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self.env,
                start_new_session=True,
            )
        except OSError as exc:
            raise BackendError(f"cannot run /bin/sh: {exc}") from None

    async def _exec(self, script: str) -> tuple[int, str | bytes, str]:
        proc = await self._spawn()
        try:
            out, err = await proc.communicate(wire(script))
        except asyncio.CancelledError:
            _kill(proc)
            await proc.wait()
            raise
        return proc.returncode or 0, out, err.decode(errors="replace")  # (stdout decoded when read)

    async def _stream(self, script: str, binary: bool = False) -> LineStream:
        proc = await self._spawn()
        proc.stdin.write(wire(script))
        await proc.stdin.drain()

        async def lines():
            while True:
                raw = await (proc.stdout.read(CHUNK) if binary else proc.stdout.readline())
                if not raw:
                    return
                yield raw if binary else raw.decode(errors="replace").rstrip("\n")

        async def closer():
            try:
                proc.stdin.close()
            except Exception:
                pass
            try:
                await asyncio.wait_for(proc.wait(), 3)
            except (TimeoutError, asyncio.TimeoutError):
                _kill(proc)
                await proc.wait()

        return LineStream(lines(), closer)

    def interactive(self, script: str) -> Callable[[], int]:
        env = self.env

        def run() -> int:
            return subprocess.call(["/bin/sh", "-c", PRELUDE + script], env=env)

        return run

    async def forward(self, host: str, port: int, local_port: int = 0) -> tuple[int, Callable[[], Awaitable[None]]]:
        """The console runs on the login node: a relay on 127.0.0.1 that connects to ``host:port``."""
        return await relay(host, port, local_port, self.timeout)


async def relay(host: str, port: int, local_port: int, timeout: float) -> tuple[int, Callable[[], Awaitable[None]]]:
    """A listener on 127.0.0.1 whose every connection is copied both ways to a new one to ``host:port``."""
    tasks: set[asyncio.Future] = set()

    async def copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(CHUNK):
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        finally:
            writer.close()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            far_reader, far_writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        except (OSError, asyncio.TimeoutError):
            writer.close()
            return
        both = asyncio.gather(copy(reader, far_writer), copy(far_reader, writer))
        task = asyncio.ensure_future(both)
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    try:
        server = await asyncio.start_server(serve, "127.0.0.1", local_port)
    except OSError as exc:
        raise BackendError(f"cannot listen on 127.0.0.1:{local_port}: {exc.strerror or exc}") from None

    async def close() -> None:
        server.close()
        for task in list(tasks):
            task.cancel()
        await server.wait_closed()

    return server.sockets[0].getsockname()[1], close


def _kill(proc) -> None:
    try:
        os.killpg(proc.pid, 9)
    except (ProcessLookupError, PermissionError):
        pass


# -- SSH ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SshTarget:
    host: str
    port: int | None = None
    user: str | None = None
    identity_file: str | None = None
    known_hosts: str | None = None
    proxy_jump: str | None = None
    transport: str = "asyncssh"  # or "openssh": the system ssh client through one ControlMaster

    @property
    def label(self) -> str:
        where = f"{self.host}:{self.port}" if self.port else self.host
        return f"{self.user}@{where}" if self.user else where


_SSH_KEYS = ("host", "port", "user", "identity_file", "known_hosts", "proxy_jump", "transport")
SSH_TRANSPORTS = ("asyncssh", "openssh")


def parse_ssh_option(value: Any, cluster: str = "") -> SshTarget:
    """``user@host[:port]`` or a mapping with host, port, user, identity_file, known_hosts, proxy_jump,
    transport (``asyncssh``, the default, or ``openssh``)."""
    where = f"clusters[{cluster}].ssh" if cluster else "ssh"
    if isinstance(value, str):
        match = re.fullmatch(r"(?:([^@\s:]+)@)?(\[[^\]]+\]|[^@\s:\[\]]+)(?::(\d+))?", value.strip())
        if not match:
            raise ConfigError(f"{where}: expected user@host[:port], got {value!r}")
        user, host, port = match.groups()
        return SshTarget(host.strip("[]"), int(port) if port else None, user)
    if isinstance(value, dict):
        unknown = sorted(set(value) - set(_SSH_KEYS))
        if unknown:
            raise ConfigError(f"{where}.{unknown[0]}: unknown key; expected one of {', '.join(_SSH_KEYS)}")
        if not value.get("host") or not isinstance(value.get("host"), str):
            raise ConfigError(f"{where}.host: required text")
        port = value.get("port")
        if port is not None and (not isinstance(port, int) or not 0 < port < 65536):
            raise ConfigError(f"{where}.port: expected a port number, got {port!r}")
        transport = value.get("transport", SSH_TRANSPORTS[0])
        if transport not in SSH_TRANSPORTS:
            raise ConfigError(f"{where}.transport: expected {' or '.join(SSH_TRANSPORTS)}, got {transport!r}")
        text = {
            k: (os.path.expanduser(str(value[k])) if value.get(k) is not None else None)
            for k in ("user", "identity_file", "known_hosts", "proxy_jump")
        }
        if text["user"]:
            text["user"] = str(value["user"])
        if text["proxy_jump"]:
            text["proxy_jump"] = str(value["proxy_jump"])
        return SshTarget(value["host"], port, **text, transport=transport)
    raise ConfigError(f"{where}: expected user@host[:port] or a mapping")


DEFAULT_KEY_FILES = ("id_ed25519_sk", "id_ecdsa_sk", "id_ed448", "id_ed25519", "id_ecdsa", "id_rsa", "id_dsa")


def check_key_permissions(path: Path) -> None:
    """Refuse a private key that group or others may access, as OpenSSH does ("UNPROTECTED
    PRIVATE KEY FILE"). A missing file is left to asyncssh, which names it."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if mode & 0o077:
        raise BackendError(
            f"ssh: private key {path} is accessible by others (mode {stat.S_IMODE(mode):04o}); "
            f"refusing to use it. Fix: chmod 600 {shlex.quote(str(path))}"
        )


def _local_user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return str(os.getuid())


class SshTransport(Transport):
    """One persistent asyncssh connection; at most ``MAX_CHANNELS`` channels at once; keepalive on;
    reconnects with backoff after a drop. Host keys are checked against known_hosts.

    The login is OpenSSH's (``sshauth``): ssh-agent's keys, then the identity files (a passphrase is
    asked through ``asker``), then keyboard-interactive prompts such as a one-time code. A connect runs
    as its own task, which every caller awaits: a caller's timeout never cancels a login that waits on
    the user, and the connect's own deadline leaves out the time a prompt is open. A login that asked
    the user and then failed (or was cancelled) is not retried by itself: the next calls raise
    ``AuthRequired`` with ``asks`` until ``retry_login`` (the user's ``l``)."""

    def __init__(self, target: SshTarget, timeout: float = DEFAULT_TIMEOUT, asker: Asker | None = None):
        super().__init__(timeout)
        self.target = target
        self.asker = asker or Asker()
        self._conn = None
        self._connecting: asyncio.Task | None = None
        self._channels = asyncio.Semaphore(MAX_CHANNELS)
        self._failures = 0
        self._retry_at = 0.0
        self._last_error = ""
        self._asks_first = ""  # why the next connect waits for retry_login (a login that asked, then failed)
        self._config: Any = None
        self._jump: SshTransport | None = None  # the ProxyJump host's connection, logged in as this one is
        self.connects = 0  # how many connections were made (tests watch reconnects)
        self._sftp: tuple[Any, Any] | None = None  # (connection, its SFTP client or None: none there)
        self._sftp_lock = asyncio.Lock()

    @property
    def description(self) -> str:
        return f"ssh {self.target.label}"

    def waited(self) -> float:
        return self.asker.waited()

    def _ssh_config(self) -> Any:
        """~/.ssh/config as it applies to this host (asyncssh's reading of it); None when unreadable."""
        if self._config is None:
            t = self.target
            try:
                from asyncssh.config import SSHClientConfig

                config = Path("~", ".ssh", "config").expanduser()
                paths = [config] if os.access(config, os.R_OK) else []
                self._config = SSHClientConfig.load(
                    None, paths, False, False, False, _local_user(), t.user or (), t.host, t.port or ()
                )
            except Exception:
                self._config = False
        return self._config or None

    def login_user(self) -> str:
        """The user we log in as: ours, else ~/.ssh/config's User, else the local user (as OpenSSH)."""
        config = self._ssh_config()
        user = config.get("User", None) if config is not None else None
        return self.target.user or (str(user) if user else "") or _local_user()

    @property
    def login_label(self) -> str:
        """``user@host:port`` with the user we log in as, for auth errors."""
        t = self.target
        return f"{self.login_user()}@{t.host}:{t.port or 22}"

    def _agent(self) -> str:
        """The ssh-agent socket: ~/.ssh/config's IdentityAgent (``none``: no agent), else $SSH_AUTH_SOCK."""
        from yanflow_tui.backends.slurm.sshauth import agent_path

        config = self._ssh_config()
        named = config.get("IdentityAgent", None) if config is not None else None
        if named:
            return "" if str(named).lower() == "none" else os.path.expanduser(str(named))
        return agent_path()

    def _options(self) -> dict:
        t = self.target
        opts: dict[str, Any] = dict(
            keepalive_interval=KEEPALIVE_SECONDS,
            keepalive_count_max=3,
            login_timeout=0,  # our own deadline bounds the connect, leaving out time spent on prompts
            # keys are offered by sshauth.LoginClient (agent first, then files); None here keeps asyncssh
            # from loading them (and from asking no one for a passphrase)
            client_keys=None,
            agent_path=None,
        )
        if t.port:
            opts["port"] = t.port
        if t.user:
            opts["username"] = t.user
        if t.identity_file and not Path(t.identity_file).exists():
            raise BackendError(f"ssh {self.login_label}: identity file not found: {t.identity_file}")
        for key in self._key_files():
            check_key_permissions(key)
        if t.known_hosts:
            if not Path(t.known_hosts).is_file():
                raise BackendError(f"known_hosts file not found: {t.known_hosts}")
            opts["known_hosts"] = t.known_hosts
        return opts

    async def _tunnel(self) -> Any:
        """The ProxyJump host: one ``user@host[:port]`` is connected as this host is (its agent keys,
        files and prompts, through the same asker), its key checked against our known_hosts where that
        names it (else the default files); a chain goes to asyncssh as it is."""
        t = self.target
        if self._jump is None:
            try:
                jump = parse_ssh_option(t.proxy_jump or "")
            except ConfigError:
                return t.proxy_jump
            known = t.known_hosts if t.known_hosts and _names_host(t.known_hosts, jump) else None
            self._jump = SshTransport(replace(jump, known_hosts=known), self.timeout, self.asker)
        return await self._jump._connection()

    def _key_files(self) -> list[Path]:
        """The private key files the login offers (after ssh-agent's keys): our ``identity_file``, else
        the IdentityFile lines of ~/.ssh/config for this host, else the default ~/.ssh/id_* that exist."""
        t = self.target
        if t.identity_file:
            return [Path(t.identity_file)]
        config = self._ssh_config()
        files = config.get("IdentityFile", ()) if config is not None else ()  # a list (asyncssh types it object)
        identity = [Path(str(p)).expanduser() for p in files] if isinstance(files, (list, tuple)) else []
        if identity:
            return identity
        return [path for name in DEFAULT_KEY_FILES if (path := Path("~", ".ssh", name).expanduser()).exists()]

    async def _connection(self):
        conn = self._conn
        if conn is not None and not conn.is_closed():
            return conn
        if self._connecting is None:
            if self._asks_first:
                raise AuthRequired(self.login_label, self.login_user(), self._asks_first, asks=True)
            wait = self._retry_at - time.monotonic()
            if wait > 0:
                raise BackendError(f"{self._last_error} (retrying in {wait:.0f} s)")
            self._connecting = asyncio.create_task(self._connect_once(), name=f"ssh connect {self.target.label}")
            self._connecting.add_done_callback(_retrieve)
        return await asyncio.shield(self._connecting)  # a caller that gives up leaves the login running

    async def _connect_once(self):
        asked = self.asker.asked
        try:
            conn = await self._connect()
        except BaseException as exc:
            self._last_error = str(exc) or type(exc).__name__
            self._failures += 1
            self._retry_at = time.monotonic() + min(MAX_BACKOFF, 2 ** (self._failures - 1))
            if isinstance(exc, BackendError) and self.asker.asked > asked:  # the user was asked: not again by itself
                self._asks_first = self._last_error
                raise AuthRequired(self.login_label, self.login_user(), self._last_error, asks=True) from None
            raise
        finally:
            self._connecting = None
        self._failures = 0
        self._retry_at = 0.0
        self._asks_first = ""
        self._conn = conn
        self.connects += 1
        return conn

    async def retry_login(self) -> None:
        """Log in again now (the user asked): the prompts open again (the jump host's too)."""
        for transport in (self, self._jump):
            if transport is not None:
                transport._asks_first = ""
                transport._retry_at = 0.0
        await self._connection()

    async def _connect(self):
        import asyncssh

        from yanflow_tui.backends.slurm import sshauth

        self._config = None  # ~/.ssh/config read afresh for each connect
        opts = self._options()
        if self.target.proxy_jump:
            opts["tunnel"] = await self._tunnel()
        files = self._key_files()
        label = self.login_label
        config = self._ssh_config()
        only = bool(config.get("IdentitiesOnly", False)) if config is not None else False
        client = sshauth.LoginClient(label, files, self.asker.ask, self._agent(), identities_only=only)
        log.debug("ssh %s: connecting", self.target.label)
        try:
            conn = await within(
                asyncssh.connect(self.target.host, client_factory=lambda: client, **opts),
                CONNECT_TIMEOUT + 5,
                self.waited,
            )
            log.info("ssh %s: connected", self.target.label)
            return conn
        except asyncssh.HostKeyNotVerifiable:
            raise BackendError(await self._host_key_message(opts)) from None
        except asyncssh.Error as exc:  # a refusal, or the server giving up ("Too many authentication failures")
            if client.cancelled:
                raise BackendError(f"ssh {label}: login cancelled; {client.summary(files)}") from None
            if client.error is not None:
                raise BackendError(f"ssh {label}: {client.error}; {client.summary(files)}") from None
            if isinstance(exc, asyncssh.PermissionDenied) or client.tried:
                raise sshauth.login_failed(label, client, files, exc.reason) from None
            raise BackendError(f"ssh {self.target.label}: {exc.reason}") from None
        except (OSError, asyncio.TimeoutError) as exc:
            reason = "timed out" if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) else exc.strerror or exc
            raise BackendError(f"ssh {self.target.label}: cannot connect: {reason}") from None
        finally:
            client.close_agent()

    async def _host_key_message(self, opts: dict) -> str:
        """Refusal text naming the key's SHA256 fingerprint (fetched without trusting it) and the
        exact known_hosts line that would trust it, once the user has checked the fingerprint."""
        import asyncssh

        fingerprint, line = "unknown fingerprint", ""
        port = opts.get("port", 22)
        try:
            key = await asyncio.wait_for(
                asyncssh.get_server_host_key(self.target.host, port, tunnel=opts.get("tunnel", ())), CONNECT_TIMEOUT
            )
            if key is not None:
                fingerprint = f"{key.get_algorithm()} {key.get_fingerprint('sha256')}"
                host = self.target.host if port == 22 else f"[{self.target.host}]:{port}"
                line = f"{host} {' '.join(key.export_public_key('openssh').decode().split()[:2])}"
        except Exception:
            pass
        source = opts.get("known_hosts") or "~/.ssh/known_hosts"
        fix = (
            f"If it is the login node's key, add this line to {source}:\n{line}"
            if line
            else "Check the fingerprint and add it to known_hosts."
        )
        return (
            f"ssh {self.target.label}: host key not trusted: {fingerprint} is not in {source} "
            f"(unknown or changed key); refusing to connect.\n{fix}"
        )

    def _drop(self, conn) -> None:
        if self._conn is conn:
            self._conn = None
        try:
            conn.abort()
        except Exception:
            pass

    async def _exec(self, script: str) -> tuple[int, str | bytes, str]:
        import asyncssh

        conn = await self._connection()
        async with self._channels:
            try:  # (bytes: stdout decoded when read, with any bad byte replaced)
                result = await conn.run(SHELL, input=wire(script), check=False, encoding=None)
            except (asyncssh.ConnectionLost, asyncssh.DisconnectError, asyncssh.ChannelOpenError, OSError) as exc:
                self._drop(conn)
                log.warning("ssh %s: connection lost (%s)", self.target.label, _reason(exc))
                raise BackendError(f"ssh {self.target.label}: connection lost ({_reason(exc)})") from None
        return (
            result.exit_status if result.exit_status is not None else 255,
            result.stdout if isinstance(result.stdout, bytes) else _text(result.stdout),
            _text(result.stderr),
        )

    async def _stream(self, script: str, binary: bool = False) -> LineStream:
        import asyncssh

        conn = await self._connection()
        try:
            await asyncio.wait_for(self._channels.acquire(), self.timeout)
        except (TimeoutError, asyncio.TimeoutError):
            raise BackendError(
                f"ssh {self.target.label}: all {MAX_CHANNELS} channels stayed busy for "
                f"{self.timeout:.0f} s (too many logs followed at once?)"
            ) from None
        try:
            proc = await asyncio.wait_for(
                conn.create_process(SHELL, **({"encoding": None} if binary else {})), self.timeout
            )
        except (asyncssh.Error, OSError) as exc:  # OSError includes the timeout
            self._channels.release()
            if isinstance(exc, (asyncssh.ConnectionLost, asyncssh.DisconnectError, OSError)):
                self._drop(conn)
            raise BackendError(f"ssh {self.target.label}: cannot start a command ({_reason(exc)})") from None
        except BaseException:  # cancelled (e.g. a caller's own timeout): the channel is free again
            self._channels.release()
            raise
        proc.stdin.write(wire(script) if binary else script)
        released = False

        async def lines():
            try:
                if binary:
                    while chunk := await proc.stdout.read(CHUNK):
                        yield chunk
                    return
                async for line in proc.stdout:
                    if line:  # asyncssh can hand over an empty read at EOF; an empty line is "\n"
                        yield line.rstrip("\n")
            except (asyncssh.ConnectionLost, asyncssh.DisconnectError, OSError) as exc:
                self._drop(conn)
                raise BackendError(f"ssh {self.target.label}: connection lost ({_reason(exc)})") from None

        async def closer():
            nonlocal released
            try:
                proc.stdin.write_eof()  # the remote watcher kills tail
                await asyncio.wait_for(proc.wait_closed(), 3)
            except Exception:
                pass
            try:
                proc.close()
            except Exception:
                pass
            if not released:
                released = True
                self._channels.release()

        return LineStream(lines(), closer)

    async def read_bytes(self, path: str, offset: int) -> AsyncIterator[bytes]:
        """Over SFTP on the same connection (one client per connection), reads from ``offset``; where the
        login node has no SFTP, as every transport reads (``Transport.read_bytes``: ``tail -c``)."""
        import asyncssh

        conn = await self._connection()
        try:
            sftp = await self._sftp_client(conn)
            if sftp is not None:
                self.history.append(("sftp", "get", f"+{offset}", "--", path))
                handle = await asyncio.wait_for(sftp.open(wire(path), "rb"), self.timeout)
                try:
                    while True:
                        chunk = await asyncio.wait_for(handle.read(SFTP_CHUNK, offset), self.timeout)
                        if not chunk:
                            return
                        offset += len(chunk)
                        yield chunk
                finally:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(handle.close(), 3)
        except asyncssh.SFTPError as exc:
            raise BackendError(f"ssh {self.target.label}: sftp {path}: {exc.reason}") from None
        except asyncssh.ChannelOpenError as exc:  # no channel at all (e.g. MaxSessions reached)
            raise BackendError(f"ssh {self.target.label}: no SFTP session ({_reason(exc)})") from None
        except (asyncssh.ConnectionLost, asyncssh.DisconnectError, OSError) as exc:
            self._drop(conn)
            raise BackendError(f"ssh {self.target.label}: connection lost ({_reason(exc)})") from None
        async for chunk in super().read_bytes(path, offset):
            yield chunk

    async def _sftp_client(self, conn) -> Any:
        """``conn``'s SFTP client, started on its first use; None where the login node has none: its
        subsystem request refused (no ``Subsystem sftp``), or granted to a program that ends at once
        (a ``ForceCommand`` that runs instead). Asked once per connection, and said only in the log."""
        import asyncssh

        async with self._sftp_lock:
            if self._sftp is None or self._sftp[0] is not conn:
                try:
                    client = await asyncio.wait_for(conn.start_sftp_client(), self.timeout)
                except (asyncssh.ChannelOpenError, asyncssh.SFTPError) as exc:
                    refused = (asyncssh.OPEN_REQUEST_SESSION_FAILED, asyncssh.FX_CONNECTION_LOST)  # ended at once
                    if exc.code not in refused:
                        raise
                    log.info("ssh %s: no SFTP (%s); files are read with tail -c", self.target.label, _reason(exc))
                    client = None
                self._sftp = (conn, client)
            return self._sftp[1]

    def interactive(self, script: str) -> Callable[[], int]:
        """A pty session bridged to the real terminal. The console's own connection lives on its event
        loop, which waits while the terminal is handed over, so the session logs in afresh (keys and
        agent; no prompts) on a loop of its own in a thread; the terminal is bridged here."""
        target, timeout = self.target, self.timeout

        def run() -> int:
            return _pty_session(target, timeout, "exec /bin/sh -c " + shlex.quote(PRELUDE + script))

        return run

    async def forward(self, host: str, port: int, local_port: int = 0) -> tuple[int, Callable[[], Awaitable[None]]]:
        import asyncssh

        conn = await self._connection()
        try:
            listener = await asyncio.wait_for(
                conn.forward_local_port("127.0.0.1", local_port, host, port), self.timeout
            )
        except (asyncssh.Error, OSError) as exc:
            raise BackendError(f"ssh {self.target.label}: cannot forward to {host}:{port} ({_reason(exc)})") from None

        async def close() -> None:
            listener.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(listener.wait_closed(), 3)

        return listener.get_port(), close

    async def close(self) -> None:
        if self._connecting is not None:
            self._connecting.cancel()
        if self._jump is not None:
            await self._jump.close()
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
            try:
                await asyncio.wait_for(conn.wait_closed(), 3)
            except Exception:
                pass


def _text(value) -> str:
    if value is None:
        return ""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _names_host(known_hosts: str, target: SshTarget) -> bool:
    """Whether the known_hosts file holds a key (or a CA) for ``target``."""
    from asyncssh import match_known_hosts

    try:
        keys, cas, *_ = match_known_hosts(known_hosts, target.host, target.host, target.port)
    except Exception:
        return False
    return bool(keys or cas)


def _retrieve(task: asyncio.Task) -> None:
    """A connect task's failure is its callers' to say; none may be left waiting for it."""
    if not task.cancelled():
        task.exception()


def _reason(exc: BaseException) -> str:
    return str(getattr(exc, "reason", "") or exc or type(exc).__name__)


def _pty_session(target: SshTarget, timeout: float, command: str) -> int:
    """Run ``command`` in a pty on a fresh connection to ``target`` (its own loop, in a thread), this
    thread bridging the terminal to it: raw keys in, output out, the window size at the start and on
    each resize. Its exit status."""
    from yanflow_tui.backends.rawterm import raw_terminal, window_size

    fd_in, fd_out = sys.stdin.fileno(), sys.stdout.fileno()
    loop = asyncio.new_event_loop()
    started = threading.Event()
    done = threading.Event()
    state: dict[str, Any] = {}

    async def session() -> int:
        transport = SshTransport(target, timeout)
        try:
            conn = await transport._connection()
            cols, rows = window_size(fd_out)
            proc = await conn.create_process(
                command, term_type=os.environ.get("TERM", "xterm"), term_size=(cols, rows), encoding=None
            )
            state["proc"] = proc
            started.set()
            while chunk := await proc.stdout.read(CHUNK):
                os.write(fd_out, chunk)
            await proc.wait(check=False)
            return proc.exit_status if proc.exit_status is not None else 255
        finally:
            await transport.close()

    def worker() -> None:
        try:
            state["code"] = loop.run_until_complete(session())
        except BaseException as exc:
            state["error"] = exc
        finally:
            started.set()
            done.set()
            loop.close()

    thread = threading.Thread(target=worker, name=f"ssh-pty-{target.label}", daemon=True)
    with raw_terminal(fd_in) as resized:
        thread.start()
        started.wait()
        proc = state.get("proc")
        while proc is not None and not done.is_set():
            if resized.is_set():
                resized.clear()
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(proc.change_terminal_size, *window_size(fd_out))
            ready, _, _ = select.select([fd_in], [], [], PTY_POLL)
            if fd_in in ready and not done.is_set():
                data = os.read(fd_in, 4096)
                with contextlib.suppress(RuntimeError):  # the loop closed: the session ended meanwhile
                    if data:
                        loop.call_soon_threadsafe(proc.stdin.write, data)
                    else:
                        loop.call_soon_threadsafe(proc.stdin.write_eof)
                if not data:
                    break
        thread.join()
    if "error" in state:
        exc = state["error"]
        raise exc if isinstance(exc, BackendError) else BackendError(f"ssh {target.label}: {_reason(exc)}")
    return int(state.get("code", 255))
