"""Inside a job on the REAL loopback Slurm cluster, over each SSH transport: asyncssh (downloads over
SFTP) and OpenSSH (``transport: openssh``: every command through a master the user started, here on the
login node that asks a one-time code, askpass answering; downloads as ``tail -c +N``). For each: the
job's folder listed; a download cancelled part-way and resumed, byte-identical (sha256) and nothing
under the final name until complete; a port of the job's node (a ``python -m http.server`` the job runs)
forwarded through the same connection (``ssh -O forward`` for OpenSSH); a shell (``srun --overlap
--pty``) in a real terminal that echoes the job's id; and the read-only gate refusing the shell before
any command while listing and downloading still work. On the login node itself (``LocalTransport``):
the shell, a resumed download and a relay."""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import socket
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import pytest
import yaml
from downloadhelpers import check_links_and_empties, check_planted, job_tree, partial_data, partials, plant
from opensshhelpers import control, otp_openssh, start_master
from slurmhelpers import CONF, DIR, local_cluster, ssh_cluster
from terminal import Terminal
from waiting import async_wait_until

from yanflow_tui.backends.slurm import inside
from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.backends.slurm.openssh import OpenSSHTransport
from yanflow_tui.backends.slurm.transport import LocalTransport
from yanflow_tui.config import ClusterConfig
from yanflow_tui.errors import BackendError, ReadOnlyError
from yanflow_tui.sanitize import clean
from yanflow_tui.spec import spec_from_data

SIZE = 24 << 20


def sleeper(tmp_path, command: str = "sleep 300", name: str = "yf-inside"):
    return spec_from_data(
        {
            "name": name,
            "kind": "slurm",
            "command": command,
            "workdir": str(tmp_path),
            "resources": {"cpus": 1, "memory": "200M"},
            "slurm": {"partition": "cpu", "time": "00:05:00", "output": str(tmp_path / "out.log")},
        }
    )


async def running(backend, job_id: str) -> None:
    async def state():
        raw = await backend._raw_job(job_id)
        return raw.state.upper() == "RUNNING" and raw.nodes

    await async_wait_until(state, what=f"job {job_id} running", timeout=60)


def sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def cancelled_at(bytes_done: int, download, total: int | None = None) -> None:
    """Start ``download(progress)`` and cancel it (as a kill would stop it) once ``bytes_done`` arrived."""
    cut = asyncio.Event()

    def progress(done, size):
        assert total is None or size == total
        if done >= bytes_done:
            cut.set()

    task = asyncio.ensure_future(download(progress))
    await asyncio.wait([task, asyncio.ensure_future(cut.wait())], return_when=asyncio.FIRST_COMPLETED)
    assert cut.is_set() and not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


TRANSPORTS = ["asyncssh", "openssh"]


@pytest.fixture
def through(request, slurm_dir) -> Iterator[ClusterConfig]:
    """The cluster over the transport named by the test's parameter: asyncssh with an SFTP subsystem on
    the login node, or OpenSSH through a master started as the user would (the one-time-code login
    node, askpass answering), stopped at the end."""
    if request.param == "asyncssh":
        yield request.getfixturevalue("sftp_cluster")
        return
    with otp_master(request) as cluster:
        yield cluster


@contextmanager
def otp_master(request) -> Iterator[ClusterConfig]:
    """The one-time-code login node over OpenSSH, its master started as the user would (in the test's
    private socket folder, askpass answering the code), and stopped at the end."""
    request.getfixturevalue("sockets")
    request.getfixturevalue("otp_askpass")
    cluster = otp_openssh()
    login = SlurmBackend(cluster).terminal_login()  # no I/O: the master's argv
    assert login is not None
    start_master(login)
    try:
        yield cluster
    finally:
        control(login, "exit")


def resumed_argv(backend: SlurmBackend, kept: int, path) -> tuple[str, ...]:
    """The read a resumed download starts with: SFTP from byte ``kept``, else ``tail`` from the next one."""
    if isinstance(backend.transport, OpenSSHTransport):
        return ("tail", "-c", f"+{kept + 1}", "--", str(path))
    return ("sftp", "get", f"+{kept}", "--", str(path))


def fetcher(address: str):
    def fetch():
        try:
            with urllib.request.urlopen(f"http://{address}/hello.txt", timeout=5) as reply:
                return reply.read().decode()
        except OSError:
            return None

    return fetch


@pytest.mark.parametrize("through", TRANSPORTS, indirect=True)
async def test_a_download_cancelled_part_way_resumes_byte_identical(through, slurm_jobs, tmp_path):
    work = tmp_path / "work"
    (work / "ckpt" / "sub").mkdir(parents=True)
    weights = work / "ckpt" / "model.bin"
    weights.write_bytes(os.urandom(SIZE))
    (work / "ckpt" / "sub" / "meta.json").write_text('{"step": 7}')
    backend = SlurmBackend(through)
    try:
        job_id = slurm_jobs.add(await backend.submit(sleeper(work)))
        listing = await backend.list_files(job_id)
        assert listing.path == str(work)
        assert [(f.name, f.is_dir) for f in listing.files][:1] == [("ckpt", True)]
        inner = await backend.list_files(job_id, "ckpt")
        entry = next(f for f in inner.files if f.name == "model.bin")
        assert entry.size == SIZE and entry.mtime is not None

        target = tmp_path / "got" / "model.bin"
        await cancelled_at(3 << 20, lambda progress: backend.download(job_id, "ckpt/model.bin", target, progress), SIZE)
        part = partial_data(target)
        kept = part.stat().st_size
        assert 0 < kept < SIZE and not target.exists()  # nothing under the final name
        assert any(argv[:2] == resumed_argv(backend, 0, weights)[:2] for argv in backend.transport.history)

        result = await backend.download(job_id, "ckpt/model.bin", target)
        assert result.resumed_from == kept and result.size == SIZE and result.checked == "size and sha256"
        assert sha(target) == sha(weights) and not partials(target)
        assert resumed_argv(backend, kept, weights) in backend.transport.history

        folder = await backend.download(job_id, "ckpt", tmp_path / "got" / "ckpt")
        assert folder.size == SIZE + len('{"step": 7}')
        assert sha(tmp_path / "got" / "ckpt" / "model.bin") == sha(weights)
        assert (tmp_path / "got" / "ckpt" / "sub" / "meta.json").read_text() == '{"step": 7}'
    finally:
        await backend.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("through", TRANSPORTS, indirect=True)
async def test_a_port_of_the_jobs_node_is_forwarded_through_the_ssh_connection(through, slurm_jobs, tmp_path):
    (tmp_path / "hello.txt").write_text("served from the job")
    port = free_port()
    command = f"exec {sys.executable} -m http.server {port} --bind 127.0.0.1"
    backend = SlurmBackend(through)
    try:
        job_id = slurm_jobs.add(await backend.submit(sleeper(tmp_path, command, "yf-http")))
        await running(backend, job_id)
        forward = await backend.forward(job_id, port)
        assert forward.local_port != port and forward.remote_port == port
        fetch = fetcher(forward.address)
        await async_wait_until(
            lambda: asyncio.to_thread(fetch), what="the job's server answers through the forward", timeout=60
        )
        assert await asyncio.to_thread(fetch) == "served from the job"
        if isinstance(backend.transport, OpenSSHTransport):  # asked of the master, -O cancel stops it
            assert any("-O" in argv and "forward" in argv for argv in backend.transport.commands)
        else:
            assert backend.transport.connects == 1  # the same connection as every command
        await forward.close()
        assert await asyncio.to_thread(fetch) is None
    finally:
        await backend.close()


@pytest.mark.parametrize("through", TRANSPORTS, indirect=True)
async def test_read_only_refuses_the_shell_before_any_io_but_lists_and_downloads(through, slurm_jobs, tmp_path):
    (tmp_path / "result.txt").write_text("done")
    writer = SlurmBackend(ssh_cluster())
    backend = SlurmBackend(replace(through, read_only=True))
    try:
        job_id = slurm_jobs.add(await writer.submit(sleeper(tmp_path)))
        with pytest.raises(ReadOnlyError):
            await backend.shell(job_id)
        assert backend.transport.history == []
        if isinstance(backend.transport, OpenSSHTransport):
            assert backend.transport.commands == []  # no ssh run at all
        else:
            assert backend.transport.connects == 0
        listing = await backend.list_files(job_id)
        assert "result.txt" in [f.name for f in listing.files]
        got = await backend.download(job_id, "result.txt", tmp_path / "copy.txt")
        assert got.path.read_text() == "done"
    finally:
        await writer.close()
        await backend.close()


@pytest.fixture
def shell_config(request, tmp_path) -> Iterator[tuple[ClusterConfig, str, dict[str, str] | None]]:
    """(cluster, config file, the terminal's extra env) for the test's ``where``: the SSH config
    (asyncssh), the login node's (local commands), or OpenSSH through a master started for it."""
    if request.param == "ssh":
        yield ssh_cluster(), str(DIR / "yanflow.yaml"), None
    elif request.param == "login-node":
        yield local_cluster(), str(DIR / "yanflow-local.yaml"), {"SLURM_CONF": str(CONF)}
    else:
        with otp_master(request) as cluster:
            config = tmp_path / "config.yaml"
            entry = {"name": cluster.name, "kind": "slurm", **cluster.options}
            config.write_text(yaml.safe_dump({"clusters": [entry]}))
            yield cluster, str(config), {"XDG_CACHE_HOME": str(request.getfixturevalue("sockets"))}


@pytest.mark.parametrize("shell_config", ["ssh", "login-node", "openssh"], indirect=True)
def test_the_shell_cli_opens_srun_in_the_job_in_a_real_terminal(slurm_dir, slurm_jobs, tmp_path, shell_config):
    cluster, config, env = shell_config

    async def start():
        backend = SlurmBackend(cluster if "ssh" in cluster.options else ssh_cluster())
        try:
            job_id = await backend.submit(sleeper(tmp_path))
            await running(backend, job_id)
            return job_id
        finally:
            await backend.close()

    job_id = slurm_jobs.add(asyncio.run(start()))
    home = tmp_path / "home"
    home.mkdir()
    argv = [sys.executable, "-m", "yanflow_tui", "--config", config, "shell", job_id]
    term = Terminal(argv, home, 100, 30, env=env)
    try:
        term.wait_text(rf"shell in job {job_id} on", timeout=40)
        term.press('echo "j""ob=$SLURM_JOB_ID:$(stty size)"', "enter")  # the typed line holds no "job="
        found = term.wait(lambda text: re.search(r"job=(\d+):(\d+) (\d+)", text), "the job's id echoed", timeout=40)
        assert found.group(1) == job_id
        assert (found.group(2), found.group(3)) == ("30", "100")  # the window size reached the pty
        term.press("exit", "enter")
        assert term.exit_code(timeout=30) == 0
    finally:
        term.close()


async def test_on_the_login_node_downloads_resume_and_a_relay_forwards(slurm_dir, slurm_jobs, tmp_path, monkeypatch):
    """The console on the login node (``LocalTransport``): ``tail -c +N`` here, and a relay to the node."""
    monkeypatch.setenv("SLURM_CONF", str(CONF))
    data = os.urandom(2 << 20)
    (tmp_path / "w.bin").write_bytes(data)
    (tmp_path / "hello.txt").write_text("relayed")
    port = free_port()
    command = f"exec {sys.executable} -m http.server {port} --bind 127.0.0.1"
    backend = SlurmBackend(local_cluster())
    try:
        job_id = slurm_jobs.add(await backend.submit(sleeper(tmp_path, command, "yf-local-inside")))
        await running(backend, job_id)
        target = tmp_path / "got" / "w.bin"
        target.parent.mkdir()
        plant(target, data[:12345])  # an interrupted try's bytes
        got = await backend.download(job_id, "w.bin", target)
        assert got.resumed_from == 12345 and sha(target) == sha(tmp_path / "w.bin")
        assert ("tail", "-c", "+12346", "--", str(tmp_path / "w.bin")) in backend.transport.history
        forward = await backend.forward(job_id, port)
        fetch = fetcher(forward.address)
        await async_wait_until(lambda: asyncio.to_thread(fetch), what="the relay answers", timeout=60)
        assert await asyncio.to_thread(fetch) == "relayed" and forward.local_port != port
        await forward.close()
        assert await asyncio.to_thread(fetch) is None
    finally:
        await backend.close()


async def test_a_folder_download_cut_part_way_resumes_skipping_what_is_complete(sftp_cluster, slurm_jobs, tmp_path):
    """Over SFTP: a folder cut inside its second file, resumed by a console started afresh, with the
    job's ``outputs:`` as the folder its files start in; a file complete in the partial folder is kept
    only while its sha256 matches the cluster's (one changed there since is fetched again)."""
    work = tmp_path / "work"
    (work / "ckpt" / "deep").mkdir(parents=True)
    names = ["a.bin", "b.bin", "deep/c.bin"]
    for name in names:
        (work / "ckpt" / name).write_bytes(os.urandom(8 << 20))
    spec = replace(sleeper(work), outputs="ckpt")
    backend = SlurmBackend(sftp_cluster)
    target = tmp_path / "got" / "ckpt"
    try:
        job_id = slurm_jobs.add(await backend.submit(spec))
        listing = await backend.list_files(job_id)
        assert listing.path == str(work / "ckpt") and [f.name for f in listing.files] == ["deep", "a.bin", "b.bin"]
        await cancelled_at(12 << 20, lambda progress: backend.download(job_id, ".", target, progress))  # in b.bin
    finally:
        await backend.close()
    part = partial_data(target)
    assert not target.exists() and (part / "a.bin").stat().st_size == 8 << 20  # nothing under the final name
    kept = (part / "b.bin").stat().st_size
    assert 0 < kept < 8 << 20 and oct(part.parent.stat().st_mode & 0o777) == "0o700"  # private while partial
    (work / "ckpt" / "a.bin").write_bytes(os.urandom(8 << 20))  # changed on the cluster since: same size

    again = SlurmBackend(sftp_cluster)  # a console started afresh knows the outputs folder from the job
    try:
        result = await again.download(job_id, ".", target)
    finally:
        await again.close()
    assert result.checked == "size and sha256" and result.size == 3 * (8 << 20) and result.resumed_from == kept
    assert [sha(target / n) for n in names] == [sha(work / "ckpt" / n) for n in names] and not partials(target)
    assert ("sftp", "get", f"+{kept}", "--", str(work / "ckpt" / "b.bin")) in again.transport.history


@pytest.mark.parametrize("through", TRANSPORTS, indirect=True)
async def test_planted_partials_links_empty_files_and_odd_names(through, slurm_jobs, tmp_path):
    """The cases every backend passes (``downloadhelpers``: planted partials never written through,
    empty files, a linked checkpoint, a folder with links), and a name that is not UTF-8: listed (shown
    escaped), downloaded alone and in its folder (under its escaped name there)."""
    work = tmp_path / "work"
    job_tree(work)
    odd = os.fsdecode(b"caf\xe9.bin")
    (work / "odd").mkdir()
    (work / "odd" / odd).write_bytes(b"not UTF-8")
    backend = SlurmBackend(through)
    try:
        job_id = slurm_jobs.add(await backend.submit(sleeper(work)))

        async def fetch(path, target):
            return await backend.download(job_id, path, target)

        await check_planted(fetch, work, tmp_path / "dl")
        await check_links_and_empties(fetch, work, tmp_path / "got")
        sizes = {f.name: (f.size, f.is_dir) for f in (await backend.list_files(job_id, "linked")).files}
        assert sizes["alias.bin"] == (2_000, False) and sizes["inner"][1] and "loop" not in sizes  # links followed
        (entry,) = (await backend.list_files(job_id, "odd")).files
        assert entry.name == odd and clean(entry.name) == "caf\\xe9.bin"
        await fetch(entry.path, tmp_path / "odd.bin")
        assert (tmp_path / "odd.bin").read_bytes() == b"not UTF-8"
        got = await fetch("odd", tmp_path / "oddfolder")
        assert (tmp_path / "oddfolder" / "caf\\xe9.bin").read_bytes() == b"not UTF-8"
        assert got.checked == "size and sha256"
    finally:
        await backend.close()


async def test_a_download_failing_before_its_first_byte_leaves_nothing(tmp_path):
    """The read fails at once (a login node that drops the read): no partial, no private folder."""

    class Dropping(LocalTransport):
        async def read_bytes(self, path, offset):
            raise BackendError("connection lost")
            yield b""

    (tmp_path / "w.bin").write_bytes(b"x" * 1000)
    (tmp_path / "dl").mkdir()
    with pytest.raises(BackendError, match="connection lost"):
        await inside.download(Dropping(), str(tmp_path), "w.bin", tmp_path / "dl" / "w.bin")
    assert os.listdir(tmp_path / "dl") == []
