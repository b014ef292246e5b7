"""Inside a job on the REAL loopback Slurm cluster, over the SSH transport (asyncssh): the job's folder
listed; a download over SFTP cancelled part-way and resumed, byte-identical (sha256) and nothing under
the final name until complete; a port of the job's node (a ``python -m http.server`` the job runs)
forwarded through the same connection; a shell (``srun --overlap --pty``) in a real terminal (pty) that
echoes the job's id; and the read-only gate refusing the shell before any command while listing and
downloading still work."""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import socket
import sys
import urllib.request
from dataclasses import replace

import pytest
from slurmhelpers import CONF, DIR, local_cluster, ssh_cluster
from terminal import Terminal
from waiting import async_wait_until

from yanflow_tui.backends.slurm import inside
from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.errors import ReadOnlyError
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


async def test_an_sftp_download_cancelled_part_way_resumes_byte_identical(sftp_cluster, slurm_jobs, tmp_path):
    work = tmp_path / "work"
    (work / "ckpt" / "sub").mkdir(parents=True)
    weights = work / "ckpt" / "model.bin"
    weights.write_bytes(os.urandom(SIZE))
    (work / "ckpt" / "sub" / "meta.json").write_text('{"step": 7}')
    backend = SlurmBackend(sftp_cluster)
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
        part = inside.partial_path(target)
        kept = part.stat().st_size
        assert 0 < kept < SIZE and not target.exists()  # nothing under the final name
        assert any(argv[:2] == ("sftp", "get") for argv in backend.transport.history)

        result = await backend.download(job_id, "ckpt/model.bin", target)
        assert result.resumed_from == kept and result.size == SIZE and result.checked == "size and sha256"
        assert sha(target) == sha(weights) and not part.exists()
        assert ("sftp", "get", f"+{kept}", "--", str(weights)) in backend.transport.history

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


async def test_a_port_of_the_jobs_node_is_forwarded_through_the_ssh_connection(slurm_dir, slurm_jobs, tmp_path):
    (tmp_path / "hello.txt").write_text("served from the job")
    port = free_port()
    command = f"exec {sys.executable} -m http.server {port} --bind 127.0.0.1"
    backend = SlurmBackend(ssh_cluster())
    try:
        job_id = slurm_jobs.add(await backend.submit(sleeper(tmp_path, command, "yf-http")))
        await running(backend, job_id)
        forward = await backend.forward(job_id, port)
        assert forward.local_port != port and forward.remote_port == port

        def fetch():
            try:
                with urllib.request.urlopen(f"http://{forward.address}/hello.txt", timeout=5) as reply:
                    return reply.read().decode()
            except OSError:
                return None

        await async_wait_until(
            lambda: asyncio.to_thread(fetch), what="the job's server answers through the forward", timeout=60
        )
        assert await asyncio.to_thread(fetch) == "served from the job"
        assert backend.transport.connects == 1  # the same connection as every command
        await forward.close()
        assert await asyncio.to_thread(fetch) is None
    finally:
        await backend.close()


async def test_read_only_refuses_the_shell_before_any_io_but_lists_and_downloads(sftp_cluster, slurm_jobs, tmp_path):
    (tmp_path / "result.txt").write_text("done")
    writer = SlurmBackend(ssh_cluster())
    backend = SlurmBackend(replace(sftp_cluster, read_only=True))
    try:
        job_id = slurm_jobs.add(await writer.submit(sleeper(tmp_path)))
        with pytest.raises(ReadOnlyError):
            await backend.shell(job_id)
        assert backend.transport.history == [] and backend.transport.connects == 0
        listing = await backend.list_files(job_id)
        assert "result.txt" in [f.name for f in listing.files]
        got = await backend.download(job_id, "result.txt", tmp_path / "copy.txt")
        assert got.path.read_text() == "done"
    finally:
        await writer.close()
        await backend.close()


@pytest.mark.parametrize("where", ["ssh", "login-node"])
def test_the_shell_cli_opens_srun_in_the_job_in_a_real_terminal(slurm_dir, slurm_jobs, tmp_path, where):
    async def start():
        backend = SlurmBackend(ssh_cluster())
        try:
            job_id = await backend.submit(sleeper(tmp_path))
            await running(backend, job_id)
            return job_id
        finally:
            await backend.close()

    job_id = slurm_jobs.add(asyncio.run(start()))
    home = tmp_path / "home"
    home.mkdir()
    config = DIR / ("yanflow.yaml" if where == "ssh" else "yanflow-local.yaml")
    argv = [sys.executable, "-m", "yanflow_tui", "--config", str(config), "shell", job_id]
    term = Terminal(argv, home, 100, 30, env={"SLURM_CONF": str(CONF)} if where != "ssh" else None)
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
        inside.partial_path(target).write_bytes(data[:12345])  # an interrupted try's bytes
        got = await backend.download(job_id, "w.bin", target)
        assert got.resumed_from == 12345 and sha(target) == sha(tmp_path / "w.bin")
        assert ("tail", "-c", "+12346", "--", str(tmp_path / "w.bin")) in backend.transport.history
        forward = await backend.forward(job_id, port)

        def fetch():
            try:
                with urllib.request.urlopen(f"http://{forward.address}/hello.txt", timeout=5) as reply:
                    return reply.read().decode()
            except OSError:
                return None

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
    part = inside.partial_path(target)
    assert not target.exists() and (part / "a.bin").stat().st_size == 8 << 20
    kept = inside.partial_path(part / "b.bin").stat().st_size
    assert 0 < kept < 8 << 20 and not (part / "b.bin").exists()  # nothing half-written under a final name
    (work / "ckpt" / "a.bin").write_bytes(os.urandom(8 << 20))  # changed on the cluster since: same size

    again = SlurmBackend(sftp_cluster)  # a console started afresh knows the outputs folder from the job
    try:
        result = await again.download(job_id, ".", target)
    finally:
        await again.close()
    assert result.checked == "size and sha256" and result.size == 3 * (8 << 20) and result.resumed_from == kept
    assert [sha(target / n) for n in names] == [sha(work / "ckpt" / n) for n in names] and not part.exists()
    assert ("sftp", "get", f"+{kept}", "--", str(work / "ckpt" / "b.bin")) in again.transport.history
