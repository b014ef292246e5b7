"""The OpenSSH transport (``ssh: {transport: openssh}``): Slurm commands through the system ``ssh``
client and one ControlMaster per cluster, so whatever the user's own ssh does works: ~/.ssh/config
aliases, ProxyJump/ProxyCommand, ``Match``, Kerberos, hardware keys, one-time codes.

The master is started in the real terminal (``login()``: ``ssh -M -N -f -o ControlPersist=...``, run
before the console starts or with it suspended), where the user answers its prompts; a command line
run with no terminal starts it in BatchMode (``login().batch``: it never prompts). Every command,
stream and file sent is then a client of that master (``-o ControlMaster=no -o BatchMode=yes``): it
never prompts and never opens a connection of its own (``ProxyCommand=false`` bars ssh's fallback to a
direct connection when the master is gone), so one TCP connection serves the whole session. A gone
master raises ``LoginInTerminal`` (the cluster goes stale until the user logs in again).

The ControlPath is the user's own when their ssh config sets one (``ssh -G``), so a master they run
is used as is; else ours, in a private 0700 folder. The console never stops a master: the user's is
theirs, and ours ends by itself ``CONTROL_PERSIST`` after its last client, so a console restarted
soon after needs no new code."""

from __future__ import annotations

import asyncio
import hashlib
import os
import shlex
import socket
import stat
import subprocess
import tempfile
import weakref
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from yanflow_tui.backends.base import TerminalLogin
from yanflow_tui.backends.slurm.transport import (
    CONNECT_TIMEOUT,
    DEFAULT_TIMEOUT,
    KEEPALIVE_SECONDS,
    MAX_CHANNELS,
    PRELUDE,
    SHELL,
    LineStream,
    LocalTransport,
    SshTarget,
    _kill,
    wire,
)
from yanflow_tui.errors import BackendError, LoginInTerminal

CONTROL_PERSIST = "10m"  # how long our master outlives its last client
SUN_PATH = 104  # the smallest limit on a socket's path (macOS; Linux allows 108), terminating NUL included
SOCKET_SUFFIX = 17  # ssh binds "PATH.XXXXXXXXXXXXXXXX" first, then renames it to PATH
NAME_LENGTH = 16
CHECK_TIMEOUT = 10.0  # ``ssh -G`` and ``ssh -O check`` are local: no network
NO_MASTER = "master not running (not logged in)"  # how to log in is the UI's to say
STOP_SECONDS = 5.0  # a stream's close: the remote tail stops, else its ssh is killed (after 3 s)


def control_dir(base: Path | None = None) -> Path:
    """The private (0700, ours) folder of our masters' sockets: ``base``, else
    ``~/.cache/yanflow-tui/ssh``; a per-user folder in the temp dir when that path is too long for a
    socket's."""
    if base is None:
        cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        base = Path(cache) / "yanflow-tui" / "ssh"
    if len(os.fsencode(base)) + 1 + NAME_LENGTH + SOCKET_SUFFIX >= SUN_PATH:
        base = Path(tempfile.gettempdir()) / f"yanflow-tui-{os.getuid()}"
    try:
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(base)
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) & 0o077:
            os.chmod(base, 0o700)
            info = os.lstat(base)
    except OSError as exc:
        raise BackendError(f"ssh: cannot make the folder of the master sockets {base}: {exc.strerror}") from None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
        raise BackendError(
            f"ssh: {base} is not a private folder of this user (mode 0700); refusing to put sockets in it"
        )
    return base


def _literal(value: str) -> str:
    """``value`` as one word of an ssh option, taken as it is: ``%`` would start a token, and a space
    or a quote would split it."""
    value = value.replace("%", "%%")
    if any(c.isspace() or c in "\"'\\" for c in value):
        value = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return value


class OpenSSHTransport(LocalTransport):
    """Scripts run by ``ssh HOST exec /bin/sh -s`` through the cluster's ControlMaster (the process
    handling of streams is ``LocalTransport``'s; what is spawned differs). A command that times out
    has its ssh killed (its process group) at once. ``ssh`` is the client's argv prefix (tests add
    ``-F FILE``); ``commands`` holds every ssh argv run."""

    def __init__(
        self,
        target: SshTarget,
        timeout: float = DEFAULT_TIMEOUT,
        cluster: str = "",
        ssh: Sequence[str] = ("ssh",),
        sockets: Path | None = None,
    ):
        super().__init__(timeout)
        self.target = target
        self.cluster = cluster or target.label
        self.ssh = tuple(ssh)
        self.sockets = sockets  # the folder of our ControlPaths (``control_dir()`` when None)
        self.commands: list[tuple[str, ...]] = []
        self._control: tuple[str, bool] | None = None
        self._procs: weakref.WeakSet[asyncio.subprocess.Process] = weakref.WeakSet()
        self._channels = asyncio.Semaphore(MAX_CHANNELS)  # sessions at once on the master (sshd's MaxSessions)

    @property
    def description(self) -> str:
        return f"ssh {self.target.label} (OpenSSH)"

    def _target(self) -> list[str]:
        """What our config sets; everything else comes from the user's ssh config."""
        t = self.target
        opts = []
        if t.port:
            opts += ["-p", str(t.port)]
        if t.user:
            opts += ["-l", t.user]
        if t.identity_file:
            opts += ["-i", t.identity_file.replace("%", "%%"), "-o", "IdentitiesOnly=yes"]
        if t.known_hosts:
            if not Path(t.known_hosts).is_file():
                raise BackendError(f"known_hosts file not found: {t.known_hosts}")
            opts += ["-o", f"UserKnownHostsFile={_literal(t.known_hosts)}", "-o", "StrictHostKeyChecking=yes"]
        return opts

    def control_path(self) -> tuple[str, bool]:
        """(the master's ControlPath, whether the user's ssh config set it), learned once from ``ssh -G``."""
        if self._control is None:
            argv = [*self.ssh, "-G", *self._target(), "--", self.target.host]
            try:
                result = subprocess.run(
                    argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=CHECK_TIMEOUT
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise BackendError(f"ssh {self.target.label}: cannot read the ssh config ({exc})") from None
            if result.returncode != 0:
                why = (result.stderr.strip().splitlines() or [f"exit status {result.returncode}"])[-1]
                raise BackendError(f"ssh {self.target.label}: ssh -G failed: {why}")
            words = [line.split(None, 1) for line in result.stdout.splitlines()]
            configured = next((w[1].strip() for w in words if len(w) == 2 and w[0].lower() == "controlpath"), "")
            if configured and configured.lower() != "none":
                self._control = (configured, True)
            else:
                folder = control_dir(self.sockets)
                t = self.target
                key = "\0".join([self.cluster, t.host, str(t.port or ""), t.user or "", str(folder)])
                self._control = (str(folder / hashlib.sha256(key.encode()).hexdigest()[:NAME_LENGTH]), False)
        return self._control

    def _control_options(self) -> list[str]:
        return ["-o", f"ControlPath={_literal(self.control_path()[0])}"]

    def login(self) -> TerminalLogin:
        """Start the master in the terminal (it asks what the login node asks), or check it runs."""
        jump = ["-J", self.target.proxy_jump] if self.target.proxy_jump else []
        base = [*self.ssh, *self._control_options(), *self._target()]
        alive = ["-o", f"ConnectTimeout={CONNECT_TIMEOUT:.0f}", "-o", f"ServerAliveInterval={KEEPALIVE_SECONDS}"]
        alive += ["-o", "ServerAliveCountMax=3"]
        start = [*jump, *alive, "-M", "-N", "-f", "-o", f"ControlPersist={CONTROL_PERSIST}", "--", self.target.host]
        batch = [*self.ssh, "-o", "BatchMode=yes", *base[len(self.ssh) :]]  # first -o wins over any config
        return TerminalLogin(
            self.cluster,
            f"ssh master for {self.target.label}",
            (*base, *start),
            (*base, "-O", "check", "--", self.target.host),
            (*batch, *start),
        )

    def _no_master(self) -> LoginInTerminal:
        return LoginInTerminal(f"ssh {self.target.label}: {NO_MASTER}")

    async def _ready(self) -> None:
        """The ControlPath is known (``ssh -G`` runs once, off the event loop) and its socket exists."""
        if self._control is None:
            await asyncio.to_thread(self.control_path)
        if not self._socket_exists():
            raise self._no_master()

    def _socket_exists(self) -> bool:
        """One stat of a local file (no network): the master's socket is there."""
        return os.path.exists(self.control_path()[0])

    async def master_alive(self) -> bool:
        """``ssh -O check``: the master answers on its socket."""
        proc = await asyncio.create_subprocess_exec(
            *self.login().check,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            return await asyncio.wait_for(proc.wait(), CHECK_TIMEOUT) == 0
        except (TimeoutError, asyncio.TimeoutError):
            return False
        finally:
            if proc.returncode is None:  # timed out or cancelled
                _kill(proc)
                await proc.wait()

    async def _spawn(self):
        argv = (*self.ssh, "-o", "ControlMaster=no", *self._control_options(), "-o", "BatchMode=yes")
        argv += ("-o", "ProxyCommand=false", *self._target(), "-T", "--", self.target.host, SHELL)
        self.commands.append(argv)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,  # no terminal to prompt on; killed as a group on timeout
            )
        except OSError as exc:
            raise BackendError(f"cannot run {self.ssh[0]}: {exc.strerror or exc}") from None
        self._procs.add(proc)
        return proc

    async def _exec(self, script: str) -> tuple[int, str | bytes, str]:
        await self._ready()
        async with self._channels:
            proc = await self._spawn()
            try:
                out, err = await proc.communicate(wire(script))
            except asyncio.CancelledError:
                # Timed out or cancelled: kill our ssh, and do not wait for its pipes to close: the
                # master holds them (ssh hands them over) until the remote command ends by itself.
                _kill(proc)
                raise
        rc, err = proc.returncode or 0, err.decode(errors="replace")  # (stdout decoded when read)
        if rc == 255 and not await self.master_alive():  # 255: ssh's own failure (or the command's status)
            raise self._no_master()
        return rc, out, err

    async def _stream(self, script: str, binary: bool = False) -> LineStream:
        await self._ready()
        try:
            await asyncio.wait_for(self._channels.acquire(), self.timeout)
        except (TimeoutError, asyncio.TimeoutError):
            raise BackendError(
                f"ssh {self.target.label}: all {MAX_CHANNELS} sessions stayed busy for "
                f"{self.timeout:.0f} s (too many logs followed at once?)"
            ) from None
        try:
            stream = await super()._stream(script, binary)
        except BaseException:
            self._channels.release()
            raise
        released = False

        async def closer() -> None:
            nonlocal released
            try:  # stdin closed, the remote watcher stops tail; killed after 3 s (never waits on the pipes)
                await asyncio.wait_for(stream.aclose(), STOP_SECONDS)
            except (TimeoutError, asyncio.TimeoutError):
                pass
            finally:
                if not released:
                    released = True
                    self._channels.release()

        return LineStream(stream, closer)

    def interactive(self, script: str) -> Callable[[], int]:
        """``ssh -t`` through the master, in the real terminal."""
        argv = [*self.ssh, "-o", "ControlMaster=no", *self._control_options(), "-o", "BatchMode=yes"]
        argv += [*self._target(), "-t", "--", self.target.host, "exec /bin/sh -c " + shlex.quote(PRELUDE + script)]

        def run() -> int:
            if not self._socket_exists():
                raise self._no_master()
            self.commands.append(tuple(argv))
            return subprocess.call(argv)

        return run

    async def forward(self, host: str, port: int, local_port: int = 0) -> tuple[int, Callable[[], Awaitable[None]]]:
        """``ssh -O forward -L`` on the master (``-O cancel`` stops it); a free port is picked here."""
        await self._ready()
        if not local_port:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                local_port = probe.getsockname()[1]
        spec = f"127.0.0.1:{local_port}:{host}:{port}"
        base = [*self.ssh, *self._control_options(), *self._target()]

        async def control(op: str) -> None:
            argv = (*base, "-O", op, "-L", spec, "--", self.target.host)
            self.commands.append(argv)
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
            try:
                _, err = await asyncio.wait_for(proc.communicate(), CHECK_TIMEOUT)
            except (TimeoutError, asyncio.TimeoutError):
                _kill(proc)
                raise BackendError(f"ssh {self.target.label}: -O {op} timed out") from None
            if proc.returncode:
                why = err.decode(errors="replace").strip() or f"exit status {proc.returncode}"
                raise BackendError(f"ssh {self.target.label}: cannot {op} {spec}: {why}")

        await control("forward")

        async def close() -> None:
            await control("cancel")

        return local_port, close

    async def close(self) -> None:
        """Stop the commands still running; the master stays (see the module's docstring)."""
        for proc in list(self._procs):
            if proc.returncode is None:
                _kill(proc)
