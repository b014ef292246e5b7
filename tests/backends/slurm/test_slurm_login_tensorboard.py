"""A real TensorBoard on the REAL loopback cluster's login node, for a Slurm job: the console starts the
cluster's configured ``tensorboard`` command there over SSH (here this interpreter's ``python -m
tensorboard.main``, as a cluster would name its own), forwards a free local port to it through the same
connection, and the URL it gives answers: TensorBoard's scalars API lists the job's tags with the values
TensorBoard's own loader reads from the job's files. Stopping it kills the server on the login node.
Without a tensorboard there, or read-only, the console falls back to its local mirror and says so."""

from __future__ import annotations

import asyncio
import stat
import sys
from dataclasses import replace
from pathlib import Path

import psutil
import pytest
import yaml
from slurmhelpers import ssh_cluster
from tbhelpers import (
    ctrl_c,
    get,
    loader_points,
    scalars_match,
    secret_prefix,
    servers_over,
    slurm_writer_spec,
    tensorboard_cli,
)
from waiting import async_wait_until

from yanflow_tui import tensorboards
from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.errors import BackendError, ReadOnlyError

FIRST = 12
SERVER = [sys.executable, "-m", "tensorboard.main"]


async def writer_job(backend: SlurmBackend, slurm_jobs, tmp_path) -> str:
    spec = slurm_writer_spec(tmp_path, "yf-tb-login", FIRST, 0)
    job_id = slurm_jobs.add(await backend.submit(spec))
    runs = tmp_path / "runs"

    def written():
        return len((loader_points(runs) if runs.is_dir() else {}).get("loss", [])) == FIRST

    await async_wait_until(written, timeout=90, what="the job's event files written on its compute node")
    return job_id


async def test_the_login_nodes_tensorboard_serves_the_jobs_tags_through_a_forward(slurm_dir, slurm_jobs, tmp_path):
    backend = SlurmBackend(ssh_cluster(tensorboard={"command": SERVER}))
    boards = tensorboards.TensorBoards()
    runs = tmp_path / "runs"
    try:
        job_id = await writer_job(backend, slurm_jobs, tmp_path)
        board = await boards.start("slurm-test/" + job_id, backend, job_id)
        assert board.process is None and board.mirror is None  # nothing runs here but the forward
        assert "login node of slurm-test" in board.what
        (server,) = servers_over(runs)  # the real server, over the job's own log directory
        assert "--port" in server.cmdline() and server.cmdline()[-1] == "0"
        assert board.url.startswith("http://127.0.0.1:")
        assert (await get(board.url))[0] == 200
        await async_wait_until(lambda: scalars_match(board.url, runs), what="the job's scalars")
        status, tags = await get(board.url + "data/plugin/scalars/tags")
        assert status == 200 and all(f'"{tag}"' in tags for tag in ("loss", "accuracy", "lr"))
        family = [server, *server.children(recursive=True)]  # the data server it spawned too
    finally:
        await boards.stop_all()
    gone, alive = psutil.wait_procs(family, timeout=15)
    assert not alive and not servers_over(runs)
    with pytest.raises(OSError):
        await get(board.url)  # the forward is closed
    await backend.close()


async def test_without_tensorboard_on_the_login_node_the_local_mirror_serves_and_says_so(
    slurm_dir, slurm_jobs, tmp_path
):
    backend = SlurmBackend(ssh_cluster(tensorboard={"command": ["yanflow-no-such-tensorboard"]}))
    boards = tensorboards.TensorBoards()
    try:
        job_id = await writer_job(backend, slurm_jobs, tmp_path)
        board = await boards.start("slurm-test/" + job_id, backend, job_id)
        assert board.mirror is not None and board.process is not None
        assert "local mirror" in board.what and "has no yanflow-no-such-tensorboard" in board.what
        await async_wait_until(lambda: scalars_match(board.url, tmp_path / "runs"), what="the job's scalars")
    finally:
        await boards.stop_all()
        await backend.close()


async def test_read_only_starts_nothing_on_the_login_node_and_the_command_option_is_checked(slurm_dir):
    backend = SlurmBackend(replace(ssh_cluster(tensorboard={"command": SERVER}), read_only=True))
    try:
        with pytest.raises(ReadOnlyError):
            await backend.tensorboard("1")  # refused before any I/O
        assert not backend.transport.history  # type: ignore[attr-defined]
    finally:
        await backend.close()
    with pytest.raises(BackendError, match="tensorboard: expected"):
        SlurmBackend(ssh_cluster(tensorboard={"command": []}))


async def cli_config(slurm_dir, slurm_jobs, tmp_path) -> tuple[str, str]:
    """A config whose cluster starts the login node's TensorBoard, and a job that wrote event files."""
    entry = yaml.safe_load((slurm_dir / "yanflow.yaml").read_text())["clusters"][0]
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"clusters": [{**entry, "tensorboard": {"command": SERVER}}]}))
    backend = SlurmBackend(ssh_cluster())
    try:
        job_id = await writer_job(backend, slurm_jobs, tmp_path)
    finally:
        await backend.close()
    return str(config), job_id


async def test_the_cli_prints_a_url_that_answers_and_ctrl_c_kills_the_login_nodes_server(
    slurm_dir, slurm_jobs, tmp_path, home
):
    config, job_id = await cli_config(slurm_dir, slurm_jobs, tmp_path)
    runs = tmp_path / "runs"
    async with tensorboard_cli(job_id, "--config", config) as (cli, line):
        assert line.startswith("http://127.0.0.1:") and line.endswith("/"), line
        (server,) = servers_over(runs)  # on the login node, not a child of the console
        assert server.pid not in {p.pid for p in psutil.Process(cli.pid).children(recursive=True)}
        await async_wait_until(lambda: scalars_match(line, runs), what="the job's scalars through the CLI's forward")
        family = [server, *server.children(recursive=True)]
        assert await ctrl_c(cli, 60) in (0, 130)
    gone, alive = psutil.wait_procs(family, timeout=15)
    assert not alive and not servers_over(runs)


def remote_folder(server: psutil.Process) -> tuple[Path, int, dict[str, int]]:
    """The server's folder on the login node (from its ``--flagfile``), its mode and its files' modes."""
    cmdline = server.cmdline()
    folder = Path(cmdline[cmdline.index("--flagfile") + 1]).parent
    return (
        folder,
        stat.S_IMODE(folder.stat().st_mode),
        {f.name: stat.S_IMODE(f.stat().st_mode) for f in folder.iterdir()},
    )


async def test_the_login_nodes_tensorboard_is_private_and_ends_with_a_console_killed_with_sigkill(
    slurm_dir, slurm_jobs, tmp_path, home
):
    """The console (``yanflow-tui tensorboard``, a real process) is SIGKILLed: the login node's server
    ends within a bounded wait (its watchdog sees the SSH connection gone) and leaves no folder. While it
    ran, a request without its secret path prefix got no curves, the prefix was in no argv, and its log
    was 0600 in a 0700 folder."""
    config, job_id = await cli_config(slurm_dir, slurm_jobs, tmp_path)
    runs = tmp_path / "runs"
    async with tensorboard_cli(job_id, "--config", config) as (cli, url):
        await async_wait_until(lambda: scalars_match(url, runs), what="the job's scalars through the forward")
        await asyncio.to_thread(secret_prefix, url)
        (server,) = servers_over(runs)
        folder, folder_mode, modes = remote_folder(server)
        assert folder_mode == 0o700 and modes == {"flags": 0o600, "log": 0o600}
        family = [server, *server.children(recursive=True)]
        cli.kill()  # SIGKILL: the console cleans nothing up
        await cli.wait()
    gone, alive = psutil.wait_procs(family, timeout=20)
    assert not alive and not servers_over(runs)
    await async_wait_until(lambda: not folder.exists(), timeout=10, what="its folder removed")
