"""A real TensorBoard for a job on the REAL loopback Slurm cluster: the job writes event files on a
compute node; the console mirrors them over the cluster's SSH transport (appended bytes only) and runs
the ``tensorboard`` server over the mirror on 127.0.0.1. Its scalars API lists the job's tags and
values as TensorBoard's own loader reads the job's files, values appended while it runs show up, and
stopping it leaves no process behind. (The login node has no tensorboard here: with one, the server
runs there, see ``test_slurm_login_tensorboard``.)"""

from __future__ import annotations

import asyncio
import os

import psutil
from slurmhelpers import ssh_cluster
from tbhelpers import api_points, loader_points, slurm_writer_spec
from waiting import async_wait_until

from yanflow_tui import tensorboards
from yanflow_tui.backends.slurm.backend import SlurmBackend

FIRST, SECOND = 12, 9


async def test_a_slurm_jobs_tensorboard_runs_here_over_a_mirror_kept_up_by_appended_reads(
    slurm_dir, slurm_jobs, tmp_path, monkeypatch
):
    monkeypatch.setattr(tensorboards, "REFRESH_SECONDS", 0.3)
    spec = slurm_writer_spec(tmp_path, "yf-tb-server", FIRST, SECOND)
    runs = tmp_path / "runs"
    backend = SlurmBackend(ssh_cluster(tensorboard={"command": ["yanflow-no-such-tensorboard"]}))  # none there
    boards = tensorboards.TensorBoards()
    try:
        job_id = slurm_jobs.add(await backend.submit(spec))

        def first_part():
            return len((loader_points(runs) if runs.is_dir() else {}).get("loss", [])) == FIRST

        await async_wait_until(first_part, what="the job's first part flushed on its compute node")
        board = await boards.start("slurm-test/" + job_id, backend, job_id)
        assert board.mirror is not None and "mirror" in board.what
        await async_wait_until(lambda: api_points(board.url) == loader_points(runs), what="the API's first part")
        assert {"loss", "accuracy", "lr", "eval/accuracy"} <= set(api_points(board.url))
        read_to = dict(board.mirror.offsets)

        (tmp_path / "go").touch()
        await async_wait_until(
            lambda: len(api_points(board.url).get("loss", [])) == FIRST + SECOND, what="the appended values"
        )
        await async_wait_until(lambda: api_points(board.url) == loader_points(runs), what="every appended value")
        for path, offset in read_to.items():  # after the first read, each file is read on from where it stopped
            later = [start for p, start, _ in board.mirror.reads if p == path][1:]
            assert later and later[0] == offset and 0 not in later
        process = psutil.Process(board.pid)
        family = [process, *process.children(recursive=True)]
        mirror_dir = board.directory
    finally:
        await boards.stop_all()
        await backend.close()
    gone, alive = psutil.wait_procs(family, timeout=10)
    assert not alive and not psutil.pid_exists(family[0].pid)
    assert board.refresher is not None and board.refresher.done()

    assert not await asyncio.to_thread(os.path.exists, mirror_dir)
