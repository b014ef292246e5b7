"""Training curves of a real local job: the job writes event files with TensorBoard's own writer; the
detail view's plot data and ``metrics --json`` give the steps and values TensorBoard's own
``EventFileLoader`` reads, and what the job appends while it runs arrives by a read from where the
last one stopped (the file is never read again from its start)."""

from __future__ import annotations

import asyncio
import re

import pytest
from jobhelpers import run_cli
from jsoncontract import validated
from tbhelpers import curve_points, curves_appended, loader_points, open_curves, write_script, writer_command
from uihelpers import make_app, screen_text
from waiting import async_wait_until, wait_for

from yanflow_tui import curves
from yanflow_tui.backends.local.backend import LocalBackend
from yanflow_tui.config import ClusterConfig
from yanflow_tui.model import JobState
from yanflow_tui.screens.detail import JobDetailScreen
from yanflow_tui.spec import spec_from_data

FIRST, SECOND = 20, 15


@pytest.fixture(autouse=True)
def nvml(fake_nvml):
    return fake_nvml


async def start_writer(tmp_path) -> tuple[LocalBackend, str]:
    backend = LocalBackend(ClusterConfig("local", "local"))
    command = writer_command(write_script(tmp_path), "runs", FIRST, tmp_path / "go", SECOND)
    spec = spec_from_data(
        {"name": "tb-writer", "command": command, "workdir": str(tmp_path), "tensorboard": {"logdir": "runs"}}
    )
    job_id = await backend.submit(spec)

    def first_part():
        points = loader_points(tmp_path / "runs") if (tmp_path / "runs").is_dir() else {}
        return len(points.get("loss", [])) == FIRST

    await async_wait_until(first_part, what="the job's first part flushed to its event files")
    return backend, job_id


@pytest.mark.parametrize("path", ["python", "server"])
async def test_detail_plots_what_tensorboards_loader_reads_and_reads_only_appended_bytes(
    home, tmp_path, monkeypatch, path
):
    monkeypatch.setattr(JobDetailScreen, "METRICS_SECONDS", 0.3)
    if path == "server":  # any first read takes TensorBoard's data server
        if curves.curves_fast.server_binary() is None:
            pytest.skip("tensorboard_data_server has no binary here")
        monkeypatch.setattr(curves, "FAST_MIN_BYTES", 0)
    backend, job_id = await start_writer(tmp_path)
    try:
        listing = await backend.event_files(job_id)
        assert listing.logdir == str(tmp_path / "runs")
        app = make_app(ClusterConfig("local", "local"))
        async with app.run_test(size=(130, 70)) as pilot:
            view = await open_curves(pilot, app, "local", job_id, tmp_path / "runs", FIRST)
            assert set(view.curves.tags) == {"loss", "accuracy", "lr", "eval/accuracy"}
            main = next(f.path for f in listing.files if "/eval/" not in f.path)
            read_to = view.reader.offset(main)
            assert [o for p, o, _ in view.reader.reads if p == main] == [0]

            (tmp_path / "go").touch()  # the job writes its second part, appended to the same files
            await curves_appended(pilot, view, tmp_path / "runs", FIRST + SECOND)
            offsets = [o for p, o, _ in view.reader.reads if p == main]
            assert offsets[0] == 0 and offsets[1] == read_to  # the next read began where the first stopped
            assert 0 not in offsets[1:]  # never from the start again

            assert "Curves, from the TensorBoard event files" in screen_text(app)
            await pilot.press("c")
            await wait_for(pilot, lambda: view.options.tag == 0)
            await pilot.press("w", "m")
            await wait_for(pilot, lambda: view.options.wall_time and view.options.smoothing == 0.9)
            await wait_for(pilot, lambda: "smoothing: 0.9" in screen_text(app) and "x: wall time" in screen_text(app))
            assert (view.reader.path, view.reader.fallback) == (path, "")
    finally:
        await backend.close()


async def test_metrics_json_gives_what_tensorboards_loader_reads(home, tmp_path):
    backend, job_id = await start_writer(tmp_path)
    try:
        (tmp_path / "go").touch()

        async def ended():
            return (await backend.get_job(job_id)).state is JobState.COMPLETED

        await async_wait_until(ended, what="the writer job to finish")
        result = await asyncio.to_thread(run_cli, "metrics", job_id, "--json")
        assert result.returncode == 0, result.stderr
        got = validated(result.stdout, "metrics")["metrics"]  # the shipped schema
        assert curve_points(got) == loader_points(tmp_path / "runs")
        assert len(got["loss"]) == FIRST + SECOND and {"step", "wall_time", "value"} == set(got["loss"][0])
        text = await asyncio.to_thread(run_cli, "metrics", job_id)
        assert text.returncode == 0, text.stderr
        assert re.search(rf"^loss +{FIRST + SECOND} points +min [0-9.]+ +max 2 +last ", text.stdout, re.M)
    finally:
        await backend.close()
