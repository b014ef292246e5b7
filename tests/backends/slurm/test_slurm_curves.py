"""Training curves of a job on the REAL loopback Slurm cluster: the job writes event files with
TensorBoard's own writer on a compute node; the console reads them back through the cluster's SSH
transport (``find`` for the listing, ``read_from`` for the bytes: the compute nodes share this
machine's files, but nothing here reads them directly except TensorBoard's ``EventFileLoader`` for
the expected values). The detail's plot data and ``metrics --json`` equal what the loader reads, and
what the job appends arrives by a read from where the last one stopped."""

from __future__ import annotations

import asyncio
import json

import pytest
from jobhelpers import run_cli
from slurmhelpers import DIR, ssh_cluster
from tbhelpers import curve_points, curves_appended, loader_points, open_curves, slurm_writer_spec
from uihelpers import make_app
from waiting import async_wait_until

from yanflow_tui import curves
from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.model import JobState
from yanflow_tui.screens.detail import JobDetailScreen

CONFIG = str(DIR / "yanflow.yaml")
FIRST, SECOND = 12, 9


def tail_reads(transport, path: str) -> list[int]:
    """The offsets every ``read_from`` of ``path`` began at, from the transport's history."""
    return [int(argv[2][1:]) - 1 for argv in transport.history if argv[:2] == ("tail", "-c") and argv[-1] == path]


@pytest.mark.parametrize("path", ["python", "server"])
async def test_a_slurm_jobs_curves_come_over_ssh_and_grow_by_appended_reads(
    slurm_dir, slurm_jobs, tmp_path, monkeypatch, path
):
    monkeypatch.setattr(JobDetailScreen, "METRICS_SECONDS", 0.5)
    if path == "server":  # any first read takes TensorBoard's data server, over the mirror of the SFTP reads
        if curves.curves_fast.server_binary() is None:
            pytest.skip("tensorboard_data_server has no binary here")
        monkeypatch.setattr(curves, "FAST_MIN_BYTES", 0)
    spec = slurm_writer_spec(tmp_path, "yf-tb-writer", FIRST, SECOND)
    backend = SlurmBackend(ssh_cluster())
    try:
        job_id = slurm_jobs.add(await backend.submit(spec))

        def first_part():
            points = loader_points(tmp_path / "runs") if (tmp_path / "runs").is_dir() else {}
            return len(points.get("loss", [])) == FIRST

        await async_wait_until(first_part, what="the job's first part flushed on its compute node")
        listing = await backend.event_files(job_id)
        assert listing.logdir == str(tmp_path / "runs")  # read back from the job's batch script
        main = next(f.path for f in listing.files if "/eval/" not in f.path)

        app = make_app(ssh_cluster())
        async with app.run_test(size=(130, 70)) as pilot:
            view = await open_curves(pilot, app, "slurm-test", job_id, tmp_path / "runs", FIRST)
            transport = app.hub.backend("slurm-test").transport  # type: ignore[attr-defined]
            read_to = view.reader.offset(main)
            assert tail_reads(transport, main) == [0]

            (tmp_path / "go").touch()
            await curves_appended(pilot, view, tmp_path / "runs", FIRST + SECOND)
            offsets = tail_reads(transport, main)
            assert offsets[:2] == [0, read_to] and 0 not in offsets[1:]  # on from the last offset, never from 0
            assert (view.reader.path, view.reader.fallback) == (path, "")

        async def ended():
            return (await backend.get_job(job_id)).state is JobState.COMPLETED

        await async_wait_until(ended, what="the writer job to finish")
        result = await asyncio.to_thread(run_cli, "--config", CONFIG, "metrics", job_id, "--json")
        assert result.returncode == 0, result.stderr
        assert curve_points(json.loads(result.stdout)["metrics"]) == loader_points(tmp_path / "runs")
    finally:
        await backend.close()
