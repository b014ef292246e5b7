"""The contract of the Slurm backend's SSH transports (``backends/slurm/transport.py``), kept ONCE for
both: asyncssh (one connection, files over SFTP where the login node has it) and OpenSSH (``transport:
openssh``, every command through a ControlMaster, files with ``tail -c``), each against a login node
WITH an SFTP subsystem and one WITHOUT (as some sites run them): a private sshd of ours on loopback in
front of the real Slurm test cluster (``tests/private_sshd.py``), the same but for ``Subsystem sftp``.

On all four: a command run (Slurm's own answer, bytes as printed, stdin, the exit status); a stream
followed; a file read from an offset, byte for byte (over SFTP only where there is one; asked once per
connection where there is none); a folder listed; a download whose connection is killed part-way, then
resumed and checked by sha256; a download cut before its first byte, which leaves no file; a shell in a
real terminal; a port forwarded through the connection."""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from downloadhelpers import check_links_and_empties, check_planted, job_tree, partial_data, partials
from opensshhelpers import control, openssh, start_master
from private_sshd import SFTP_SERVER, PrivateSshd, free_port
from slurmhelpers import slurm
from terminal import Terminal

from yanflow_tui.backends.slurm import inside
from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.backends.slurm.openssh import OpenSSHTransport
from yanflow_tui.backends.slurm.transport import SshTransport, Transport
from yanflow_tui.config import ClusterConfig
from yanflow_tui.errors import BackendError

SIZE = 8 << 20
REFUSED = b"subsystem request for sftp by user root failed"  # sshd's log line for each refused request
COMBOS = [("asyncssh", True), ("asyncssh", False), ("openssh", True), ("openssh", False)]


@dataclass
class Login:
    """A login node (our sshd) and a transport to it, as a console makes one from its config."""

    sshd: PrivateSshd
    cluster: ClusterConfig
    transport: Transport
    sftp: bool
    sockets: Path | None  # OpenSSH's master sockets (XDG_CACHE_HOME); None for asyncssh

    @property
    def openssh(self) -> bool:
        return isinstance(self.transport, OpenSSHTransport)

    def log_in(self) -> None:
        """Start OpenSSH's master as the user would (key login: nothing to answer); asyncssh logs in by itself."""
        if isinstance(self.transport, OpenSSHTransport):
            start_master(self.transport.login())

    def refused(self) -> int:
        """How many SFTP subsystem requests the login node has refused."""
        return self.sshd.log.read_bytes().count(REFUSED)

    def read_argv(self, offset: int, path: Path) -> tuple[str, ...]:
        """The read of ``path`` from ``offset`` the transport records: SFTP where asyncssh has it, else ``tail``."""
        if self.sftp and not self.openssh:
            return ("sftp", "get", f"+{offset}", "--", str(path))
        return ("tail", "-c", f"+{offset + 1}", "--", str(path))


def combo_id(combo: tuple[str, bool]) -> str:
    return f"{combo[0]}-{'sftp' if combo[1] else 'no-sftp'}"


@pytest.fixture(params=COMBOS, ids=combo_id)
async def login(request, slurm_dir) -> AsyncIterator[Login]:
    kind, sftp = request.param
    with PrivateSshd(sftp=SFTP_SERVER if sftp else None) as sshd:
        cluster = sshd.cluster()
        sockets = None
        if kind == "openssh":
            sockets = request.getfixturevalue("sockets")
            cluster = openssh(cluster)
        transport = SlurmBackend(cluster).transport
        assert isinstance(transport, OpenSSHTransport if kind == "openssh" else SshTransport)
        found = Login(sshd, cluster, transport, sftp, sockets)
        found.log_in()
        try:
            yield found
        finally:
            await transport.close()
            if isinstance(transport, OpenSSHTransport):
                control(transport.login(), "exit")


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def read_all(transport: Transport, path: Path, offset: int) -> bytes:
    return b"".join([chunk async for chunk in transport.read_bytes(str(path), offset)])


async def test_a_command_runs_on_the_login_node_in_front_of_slurm(login):
    result = await login.transport.run(["sinfo", "-h", "-o", "%P %D"])
    assert result.ok and result.stdout == slurm("sinfo", "-h", "-o", "%P %D")  # Slurm's own answer
    printed = await login.transport.run(["printf", "\\377ok\\n"])
    assert printed.data == b"\xffok\n" and printed.stdout == "\ufffdok\n"  # the bytes as printed
    assert (await login.transport.run(["cat"], stdin_data="fed on stdin")).stdout == "fed on stdin\n"
    failed = await login.transport.run(["sh", "-c", "echo why >&2; exit 3"])
    assert failed.returncode == 3 and failed.error() == "why"
    assert await login.transport.user() == "root"


async def test_a_stream_follows_a_file_and_stops_when_closed(login, tmp_path):
    log = tmp_path / "train.log"
    log.write_text("one\ntwo\nthree\n")
    stream = await login.transport.tail(str(log), 2, True)
    try:
        assert [await stream.__anext__(), await stream.__anext__()] == ["two", "three"]
        with log.open("a") as handle:
            handle.write("four\n")
        assert await asyncio.wait_for(stream.__anext__(), 30) == "four"
    finally:
        await stream.aclose()
    assert stream.closed


async def test_a_file_is_read_from_an_offset_byte_for_byte(login, tmp_path):
    data = os.urandom(3 << 20) + b"\r\n\0\xff"  # binary, not text
    path = tmp_path / "w.bin"
    path.write_bytes(data)
    assert await read_all(login.transport, path, 0) == data
    assert await read_all(login.transport, path, 12345) == data[12345:]
    assert await read_all(login.transport, path, len(data)) == b""
    assert login.read_argv(12345, path) in login.transport.history
    with pytest.raises(BackendError, match="gone.bin"):
        await read_all(login.transport, tmp_path / "gone.bin", 0)
    # where SFTP is missing, asyncssh asked for it once for its connection, never again
    assert login.refused() == (0 if login.sftp or login.openssh else 1)


async def test_a_folder_is_listed(login, tmp_path):
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "w.bin").write_bytes(b"x" * 1234)
    (tmp_path / "a b.txt").write_text("spaced")
    listing = await inside.list_dir(login.transport, str(tmp_path))
    assert listing.path == str(tmp_path)
    assert [(f.name, f.is_dir) for f in listing.files] == [("ckpt", True), ("a b.txt", False)]
    assert [(f.name, f.size) for f in listing.files if not f.is_dir] == [("a b.txt", 6)]
    inner = await inside.list_dir(login.transport, str(tmp_path), "ckpt")
    assert [(f.name, f.size) for f in inner.files] == [("w.bin", 1234)] and inner.files[0].mtime is not None


async def test_a_download_whose_connection_is_killed_part_way_resumes_checked_by_sha256(login, tmp_path):
    source = tmp_path / "work" / "model.bin"
    source.parent.mkdir()
    source.write_bytes(os.urandom(SIZE))
    target = tmp_path / "got" / "model.bin"
    target.parent.mkdir()
    killed = []

    def progress(done: int, total: int | None) -> None:
        if done >= 2 << 20 and not killed:
            killed.append(done)
            login.sshd.kill_sessions()  # the login node drops every connection mid-stream

    with pytest.raises(BackendError):
        await inside.download(login.transport, str(source.parent), "model.bin", target, progress)
    part = partial_data(target)  # the private landing the cut try left beside the target
    kept = part.stat().st_size if part.exists() else 0
    assert killed and 0 < kept < SIZE and not target.exists()  # what arrived is kept, nothing under the name

    login.log_in()  # OpenSSH's master died with its connection; asyncssh reconnects by itself
    got = await inside.download(login.transport, str(source.parent), "model.bin", target)
    assert got.resumed_from == kept and got.size == SIZE and got.checked == "size and sha256"
    assert sha(target) == sha(source) and partials(target) == []
    assert login.read_argv(kept, source) in login.transport.history
    if not login.openssh:  # asked once on each of its two connections, where there is none
        assert login.transport.connects == 2 and login.refused() == (0 if login.sftp else 2)


async def test_planted_partials_links_and_empty_files_on_every_login(login, tmp_path):
    """The download writer's cases (``downloadhelpers``) on each transport, with and without SFTP: partials
    planted by another user are never written through, empty files and folders of them, a linked
    checkpoint and a folder with links arrive with the right sha256."""
    work = tmp_path / "work"
    job_tree(work)

    async def fetch(path, target):
        return await inside.download(login.transport, str(work), path, target)

    await check_planted(fetch, work, tmp_path / "dl")
    await check_links_and_empties(fetch, work, tmp_path / "got")


async def test_a_download_cut_before_its_first_byte_leaves_no_file(login, tmp_path):
    (tmp_path / "w.bin").write_bytes(os.urandom(1 << 20))
    target = tmp_path / "got" / "w.bin"
    target.parent.mkdir()
    calls = []

    def progress(done: int, total: int | None) -> None:
        calls.append(done)
        if len(calls) == 1:  # told 0 bytes, before the read starts: the login node goes away
            assert done == 0
            login.sshd.kill_sessions()
            login.sshd.stop()

    with pytest.raises(BackendError):
        await inside.download(login.transport, str(tmp_path), "w.bin", target, progress)
    assert calls == [0]
    assert sorted(p.name for p in target.parent.iterdir()) == []  # no empty .w.bin.part left behind


def shell_config(login: Login, tmp_path: Path) -> Path:
    config = tmp_path / "config.yaml"
    entry = {"name": login.cluster.name, "kind": "slurm", **login.cluster.options}
    config.write_text(yaml.safe_dump({"clusters": [entry]}))
    return config


SHELL_CHILD = """import sys
from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.config import load_config
sys.exit(SlurmBackend(load_config(sys.argv[1]).clusters[0]).transport.interactive(sys.argv[2])())
"""


def test_a_shell_runs_in_a_real_terminal_on_the_login_node(login, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    script = 'printf "%s=%s\\n" shell "$(stty size)"; read answer; exit "$answer"'
    argv = [sys.executable, "-c", SHELL_CHILD, str(shell_config(login, tmp_path)), script]
    env = {"XDG_CACHE_HOME": str(login.sockets)} if login.sockets else None
    term = Terminal(argv, home, 100, 30, env=env)
    try:
        term.wait_text("shell=30 100", timeout=40)  # a pty of the terminal's size
        term.press("7", "enter")
        assert term.exit_code(timeout=30) == 7
    finally:
        term.close()


async def test_a_port_is_forwarded_through_the_connection(login):
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"echo:" + await reader.readline())
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", free_port())
    port = server.sockets[0].getsockname()[1]
    try:
        local, close = await login.transport.forward("127.0.0.1", port)
        assert local != port

        async def ask() -> bytes | None:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", local)
            except OSError:
                return None
            writer.write(b"hello\n")
            answer = await reader.read()
            writer.close()
            return answer

        assert await ask() == b"echo:hello\n"
        await close()
        assert await ask() is None
    finally:
        server.close()


@pytest.fixture
def no_sftp_asyncssh(slurm_dir) -> Iterator[PrivateSshd]:
    """A login node whose ``ForceCommand`` takes over its SFTP subsystem: granted, then ended at once."""
    with PrivateSshd(sftp="internal-sftp") as sshd:
        yield sshd


async def test_an_sftp_subsystem_taken_over_by_a_forced_command_is_read_with_tail(no_sftp_asyncssh, tmp_path):
    data = os.urandom(1 << 20)
    (tmp_path / "w.bin").write_bytes(data)
    transport = SlurmBackend(no_sftp_asyncssh.cluster()).transport
    try:
        got = await inside.download(transport, str(tmp_path), "w.bin", tmp_path / "copy.bin")
        assert got.checked == "size and sha256" and (tmp_path / "copy.bin").read_bytes() == data
        assert await read_all(transport, tmp_path / "w.bin", 100) == data[100:]
        assert ("tail", "-c", "+101", "--", str(tmp_path / "w.bin")) in transport.history
        assert not any(argv[0] == "sftp" for argv in transport.history)
    finally:
        await transport.close()
