"""Pilot test of the Nodes grid and the job detail fed by a REAL Prometheus (scraping a fake DCGM
exporter) on the REAL loopback Slurm cluster: a job holding GPUs at under 5% shows the
idle-but-allocated marker, its detail shows the GPUs' use; a Prometheus that goes away leaves a note
on the Clusters screen and the nodes still shown. The same on the Kubernetes API emulator's nodes."""

from __future__ import annotations

from dataclasses import replace

import k8shelpers
from fakes.k8s_api import make_job, make_pod
from slurmhelpers import JOBS, slurm, squeue_job, ssh_cluster
from uihelpers import make_app, screen_text
from waiting import async_wait_until, wait_for

from yanflow_tui.idlegpus import IdleRule
from yanflow_tui.model import Gpu, GpuState
from yanflow_tui.screens.detail import JobDetailScreen
from yanflow_tui.screens.nodes import NodesScreen
from yanflow_tui.screens.render.gpu_cells import Cell, cell_kind
from yanflow_tui.screens.widgets.gpugrid import GpuGrid


async def test_an_allocated_gpu_at_two_percent_is_marked_idle_on_the_nodes_grid(
    home, slurm_dir, slurm_jobs, prometheus, dcgm
):
    # Hostnames as a site's exporter may write them (one fully qualified, one in upper case).
    hosts = {"gpu01": "gpu01.hpc.example", "gpu02": "GPU02", "gpu03": "gpu03", "gpu04": "gpu04.hpc.example"}

    def publish(util: float, nodes=hosts) -> None:
        for node in nodes:
            for index in range(8):
                dcgm.set(hosts[node], index, util, 1500, 80420)
        prometheus.wait_for_values({(hosts[n], 7): util for n in nodes})

    publish(2)  # every GPU of the cluster at 2%
    job_id = slurm_jobs.add(
        slurm(
            "sbatch", "--parsable", "-J", "yf-prom-idle", "-p", "gpu", "-N", "1",
            "--gres=gpu:a100:2", "-c", "1", "--mem=100M", "-t", "00:05:00", "-o", str(JOBS / "%x-%j.out"),
            "--wrap", "sleep 120",
        ).strip().split(";")[0]
    )  # fmt: skip
    record = await async_wait_until(lambda: (j := squeue_job(job_id)) and j["job_state"] == "RUNNING" and j, 30)
    node = record["nodes"]  # one node
    c = replace(ssh_cluster(nodes_refresh_seconds=0.5, metrics={"prometheus": prometheus.url}), refresh_seconds=0.5)
    app = make_app(c)
    app.idle.rule = IdleRule(seconds=0)  # marked from the first reading under 5 % (the duration: test_nodes_idle_rule)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("2")
        key = f"{c.name}/{node}"

        def mine(grid: GpuGrid) -> list[Gpu]:
            return [g for g in grid.gpus_of(key) if g.job_id == job_id]

        grid = await wait_for(
            pilot,
            lambda: (
                isinstance(app.screen, NodesScreen)
                and (g := app.screen.query_one("#nodes", GpuGrid))
                and [cell_kind(gpu, g.is_idle(key, gpu.index)) for gpu in mine(g)] == [Cell.IDLE, Cell.IDLE]
                and g
            ),
            timeout=30,
            what=f"the job's two GPUs idle-allocated on {node}",
        )
        assert all(g.utilization == 2 and g.memory_used_mb == 1500 for g in mine(grid))
        # A free GPU at 2% is free, not idle.
        free = [g for n in hosts for g in grid.gpus_of(f"{c.name}/{n}") if g.state is GpuState.FREE]
        assert free and all(cell_kind(g) is Cell.FREE and g.utilization == 2 for g in free)
        await wait_for(pilot, lambda: grid.group(c.name).summary.idle >= 2, what="the cluster's idle count")
        await wait_for(pilot, lambda: " idle-allocated" in screen_text(app), what="the header says it")
        assert "allocated, idle (<5%)" in screen_text(app)  # the legend
        # The job's detail shows the use of the GPUs it holds.
        # The job's detail shows the use of the GPUs it holds.
        job = app.hub.find_job(c.name, job_id)
        assert job is not None
        app.push_screen(JobDetailScreen(job))
        detail = await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen, what="detail")
        placement = await wait_for(
            pilot,
            lambda: detail.query("#placement") and "idle" in (t := str(detail.query_one("#placement").render())) and t,
            what="placement",
        )
        assert "2 of 8 GPU(s): " in placement and "2%" in placement and "2 idle" in placement
        await pilot.press("escape")
        # Busy now: the marker goes.
        publish(80, nodes=[node])
        await wait_for(
            pilot,
            lambda: [cell_kind(g, grid.is_idle(key, g.index)) for g in mine(grid)] == [Cell.BUSY, Cell.BUSY],
            timeout=30,
            what="busy",
        )
        # Prometheus away: the note, and the nodes are still there (without the utilisation).
        app.hub.metrics[c.name].config = replace(app.hub.metrics[c.name].config, url="http://127.0.0.1:9")
        await wait_for(
            pilot,
            lambda: (
                "metrics: prometheus unreachable" in app.hub.snapshots[c.name].message
                and all(g.utilization is None for g in mine(grid))
            ),
            timeout=30,
            what="the unreachable note",
        )
        assert len(grid.gpus_of(key)) == 8
        assert len(mine(grid)) == 2 and all(g.state is GpuState.ALLOCATED for g in mine(grid))
        await pilot.press("5")  # the Clusters screen shows the note
        await wait_for(pilot, lambda: "metrics: prometheus unreachable" in screen_text(app), what="note on screen")


async def test_kubernetes_nodes_show_the_marker_from_the_same_series(home, emulator, kubeconfig, prometheus, dcgm):
    emulator.add_node("gpu-a", 8)
    emulator.put("jobs", make_job("train", "ml", gpus=2))
    emulator.put("pods", make_pod("train-0-x7k2p", "ml", node="gpu-a", gpus=2, job="train"))
    for device, util in ((3, 1), (6, 4)):  # the pod's devices, at 1% and 4%
        dcgm.set("dcgm-exporter-x7k2p", device, util, 100, 80000, kubernetes_node="gpu-a", pod="train-0-x7k2p",
                 namespace="ml", container="main")  # fmt: skip
    prometheus.wait_for_values({("dcgm-exporter-x7k2p", 3): 1, ("dcgm-exporter-x7k2p", 6): 4})
    c = k8shelpers.cluster(kubeconfig, metrics={"prometheus": prometheus.url})
    app = make_app(c)
    app.idle.rule = IdleRule(seconds=0)
    key = f"{c.name}/gpu-a"
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("2")
        grid = await wait_for(
            pilot,
            lambda: (
                isinstance(app.screen, NodesScreen)
                and (g := app.screen.query_one("#nodes", GpuGrid))
                and [
                    (cell_kind(x, g.is_idle(key, x.index)), x.utilization)
                    for x in g.gpus_of(key)
                    if x.job_id == "ml/train"
                ]
                == [(Cell.IDLE, 1), (Cell.IDLE, 4)]
                and g
            ),
            timeout=30,
            what="the pod's GPUs idle-allocated on gpu-a",
        )
        assert grid.group(c.name).summary.idle == 2
