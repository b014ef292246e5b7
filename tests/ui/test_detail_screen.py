"""The job detail view's placement (nodes and GPUs) and raw spec sections, over the fake backend
and over the real Slurm cluster."""

from __future__ import annotations

from dataclasses import replace

from slurmhelpers import ssh_cluster
from textual.widgets import Static
from uihelpers import make_app
from waiting import wait_for

from yanflow_tui.config import ClusterConfig
from yanflow_tui.screens.detail import JobDetailScreen
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
