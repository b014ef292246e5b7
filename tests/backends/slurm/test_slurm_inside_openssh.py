"""Inside a job on the REAL Slurm cluster through the OpenSSH transport: the login node that asks a
one-time code (the master started with askpass, as the user would in the terminal), then everything
through that master: a download (``tail -c +N`` over the master) cancelled part-way and resumed,
byte-identical; a port of the job's node forwarded with ``ssh -O forward`` (``-O cancel`` stops it); the
read-only gate refusing the shell before any ssh runs; and the shell (``ssh -t`` through the master,
``srun --overlap --pty``) in a real terminal echoing the job's id."""

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
import yaml
from opensshhelpers import control, otp_openssh, start_master
from terminal import Terminal
from waiting import async_wait_until

from yanflow_tui.backends.slurm import inside
from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.errors import ReadOnlyError
from yanflow_tui.spec import spec_from_data

SIZE = 16 << 20


def job_spec(tmp_path, command: str):
    return spec_from_data(
        {
            "name": "yf-inside-openssh",
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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def test_download_resume_forward_and_the_gate_through_the_master(sockets, otp_askpass, slurm_jobs, tmp_path):
    data = os.urandom(SIZE)
    (tmp_path / "model.bin").write_bytes(data)
    (tmp_path / "hello.txt").write_text("through the master")
    port = free_port()
    backend = SlurmBackend(otp_openssh())
    login = backend.terminal_login()
    assert login is not None
    await asyncio.to_thread(start_master, login)
    gated = SlurmBackend(replace(otp_openssh(), read_only=True))
    try:
        command = f"exec {sys.executable} -m http.server {port} --bind 127.0.0.1"
        job_id = slurm_jobs.add(await backend.submit(job_spec(tmp_path, command)))
        await running(backend, job_id)

        target = tmp_path / "got" / "model.bin"
        cut = asyncio.Event()
        task = asyncio.ensure_future(
            backend.download(job_id, "model.bin", target, lambda done, total: done >= 2 << 20 and cut.set())
        )
        await asyncio.wait([task, asyncio.ensure_future(cut.wait())], return_when=asyncio.FIRST_COMPLETED)
        assert cut.is_set() and not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        kept = inside.partial_path(target).stat().st_size
        assert 0 < kept < SIZE and not target.exists()
        result = await backend.download(job_id, "model.bin", target)
        assert result.resumed_from == kept and result.checked == "size and sha256"
        assert hashlib.sha256(target.read_bytes()).digest() == hashlib.sha256(data).digest()
        assert ("tail", "-c", f"+{kept + 1}", "--", str(tmp_path / "model.bin")) in backend.transport.history

        forward = await backend.forward(job_id, port)

        def fetch():
            try:
                with urllib.request.urlopen(f"http://{forward.address}/hello.txt", timeout=5) as reply:
                    return reply.read().decode()
            except OSError:
                return None

        await async_wait_until(lambda: asyncio.to_thread(fetch), what="the server through the master", timeout=60)
        assert await asyncio.to_thread(fetch) == "through the master"
        assert any("-O" in argv and "forward" in argv for argv in backend.transport.commands)
        await forward.close()
        assert await asyncio.to_thread(fetch) is None

        with pytest.raises(ReadOnlyError):
            await gated.shell(job_id)
        assert gated.transport.commands == [] and gated.transport.history == []
        assert "model.bin" in [f.name for f in (await gated.list_files(job_id)).files]
    finally:
        await backend.close()
        await gated.close()
        control(login, "exit")


def test_the_shell_through_the_master_in_a_real_terminal(sockets, otp_askpass, slurm_jobs, tmp_path):
    cluster = otp_openssh()
    login = SlurmBackend(cluster).terminal_login()  # no I/O: the master's argv
    assert login is not None
    start_master(login)

    async def start():
        backend = SlurmBackend(cluster)  # made on the loop that runs it
        try:
            job_id = await backend.submit(job_spec(tmp_path, "sleep 300"))
            await running(backend, job_id)
            return job_id
        finally:
            await backend.close()

    job_id = slurm_jobs.add(asyncio.run(start()))
    config = tmp_path / "config.yaml"
    entry = {"name": cluster.name, "kind": "slurm", **cluster.options}
    config.write_text(yaml.safe_dump({"clusters": [entry]}))
    home = tmp_path / "home"
    home.mkdir()
    argv = [sys.executable, "-m", "yanflow_tui", "--config", str(config), "shell", job_id]
    term = Terminal(argv, home, 100, 30, env={"XDG_CACHE_HOME": str(sockets)})
    try:
        term.wait_text(rf"shell in job {job_id} on", timeout=40)
        term.press('echo "j""ob=$SLURM_JOB_ID:$(stty size)"', "enter")
        found = term.wait(lambda text: re.search(r"job=(\d+):(\d+) (\d+)", text), "the job's id echoed", timeout=40)
        assert found.groups() == (job_id, "30", "100")
        term.press("exit", "enter")
        assert term.exit_code(timeout=30) == 0
    finally:
        term.close()
        control(login, "exit")
