"""The job detail view's placement (nodes and GPUs), raw spec (scontrol and the batch script; ``v``
opens it in the editor) and efficiency sections, over the fake backend and over the real Slurm
clusters."""

from __future__ import annotations

import contextlib
from dataclasses import replace

from sitehelpers import known_to_slurmctld, site_cluster, site_slurm
from slurmhelpers import ssh_cluster
from textual.widgets import Static
from uihelpers import footer_text, make_app
from waiting import async_wait_until, wait_for

from yanflow_tui.config import ClusterConfig
from yanflow_tui.screens.detail import JobDetailScreen
from yanflow_tui.screens.queue import JobTable
from yanflow_tui.spec import parse_spec


def section(screen, widget_id: str) -> str:
    found = screen.query(widget_id).results(Static)  # empty until the screen has composed
    return "".join(str(widget.render()) for widget in found)


async def test_detail_shows_the_gpus_the_job_holds_and_its_raw_spec(fake_backend):
    app = make_app(ClusterConfig("hpc", "fake", refresh_seconds=3600))
    async with app.run_test(size=(140, 50)) as pilot:
        await wait_for(pilot, lambda: app.hub.find_job("hpc", "101"), what="job 101")
        app.push_screen(JobDetailScreen(app.hub.find_job("hpc", "101")))
        detail = await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen, what="detail")
        await wait_for(pilot, lambda: "name: train-resnet" in section(detail, "#raw-spec"), what="raw spec")
        placement = section(detail, "#placement")
        assert "gpu01" in placement and "4 of 8 GPU(s): #0 90%, #1 90%, #2 90%, #3 90%" in placement


async def test_detail_footer_shows_the_detail_keys_not_the_queue_keys(fake_backend):
    """Opened from the Queue (enter), the detail's footer lists its own keys: c is the curves' next tag
    there, not the Queue's Cancel."""
    app = make_app(ClusterConfig("hpc", "fake", refresh_seconds=3600))
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_for(pilot, lambda: "hpc/101" in app.screen.query_one(JobTable).row_keys, what="rows")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen), what="detail")
        await wait_for(pilot, lambda: "esc Close" in footer_text(app), what="the detail's keys")
        footer = footer_text(app)
        assert "l Logs" in footer and "Cancel" not in footer


async def test_detail_placement_follows_the_nodes_data(fake_backend):
    app = make_app(ClusterConfig("hpc", "fake", refresh_seconds=3600))
    async with app.run_test(size=(140, 50)) as pilot:
        await wait_for(pilot, lambda: app.hub.find_job("hpc", "102"), what="job 102")
        app.push_screen(JobDetailScreen(app.hub.find_job("hpc", "102")))  # pending: not placed
        detail = await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen, what="detail")
        await wait_for(pilot, lambda: "not placed yet" in section(detail, "#placement"), what="pending")
        backend = app.hub.backend("hpc")
        backend.jobs[1] = replace(backend.jobs[1], nodes=("gpu02",))  # it started on gpu02
        app.request_refresh("hpc")
        await wait_for(pilot, lambda: "gpu02" in section(detail, "#placement"), timeout=10, what="placed")


async def test_detail_of_a_real_slurm_job_shows_scontrol_and_its_node(slurm_dir, slurm_jobs, home):
    app = make_app(ssh_cluster())
    async with app.run_test(size=(160, 50)) as pilot:
        name = app.hub.names[0]
        backend = app.hub.backend(name)

        text = (
            "name: yf-detail\nkind: slurm\ncommand: sleep 60\nresources: {nodes: 1, gpus: 2}\nslurm: {partition: gpu}\n"
        )
        job_id = slurm_jobs.add(await backend.submit(parse_spec(text, "d.yaml")))
        app.request_refresh()
        job = await wait_for(
            pilot, lambda: (j := app.hub.find_job(name, job_id)) and j.nodes and j, timeout=30, what="job running"
        )
        app.push_screen(JobDetailScreen(job))
        detail = await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen, what="detail")
        await wait_for(pilot, lambda: f"JobId={job_id}" in section(detail, "#raw-spec"), what="scontrol output")
        assert job.nodes[0] in section(detail, "#placement")
        # the job as submitted: the batch script under scontrol's fields
        assert "# batch script" in section(detail, "#raw-spec") and "sleep 60" in section(detail, "#raw-spec")


async def test_v_opens_the_raw_spec_in_the_editor_with_the_console_suspended(fake_backend, tmp_path, monkeypatch):
    copy = tmp_path / "seen.txt"
    editor = tmp_path / "editor.sh"
    editor.write_text(f'#!/bin/sh\ncp "$1" {copy}\n')
    editor.chmod(0o755)
    monkeypatch.setenv("VISUAL", f"{editor}")
    app = make_app(ClusterConfig("hpc", "fake", refresh_seconds=3600))
    suspended = []

    @contextlib.contextmanager
    def suspend():  # the headless driver cannot suspend: record that the console would have
        suspended.append(True)
        yield

    async with app.run_test(size=(140, 50)) as pilot:
        monkeypatch.setattr(app, "suspend", suspend)
        await wait_for(pilot, lambda: app.hub.find_job("hpc", "101"), what="job 101")
        app.push_screen(JobDetailScreen(app.hub.find_job("hpc", "101")))
        detail = await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen, what="detail")
        await wait_for(pilot, lambda: detail.raw_text, what="raw spec")
        await pilot.press("v")
        await wait_for(pilot, lambda: copy.exists(), what="the editor ran")
        assert copy.read_text() == detail.raw_text and suspended == [True]


async def test_detail_of_a_finished_site_job_shows_seffs_efficiency(site_dir, site_jobs, home):
    out = site_slurm("sbatch", "--parsable", "-p", "batch", "-t", "00:02:00", "-o", "/dev/null", "--wrap=true")
    job_id = out.strip().split(";")[0]
    site_jobs.append(job_id)
    app = make_app(site_cluster())
    async with app.run_test(size=(160, 60)) as pilot:
        name = app.hub.names[0]
        await async_wait_until(lambda: not known_to_slurmctld(job_id), 60, "finished and purged")
        job = await app.hub.call(app.hub.backend(name).get_job(job_id))
        app.push_screen(JobDetailScreen(job))
        detail = await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen, what="detail")
        text = await wait_for(
            pilot, lambda: "CPU Efficiency" in (t := section(detail, "#efficiency")) and t, timeout=20, what="seff"
        )
        assert "core-walltime" in text and "of 00:02:00 time limit" in text and "Memory Efficiency" in text
