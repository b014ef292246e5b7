"""Pilot tests of the console against the REAL loopback Slurm cluster over the REAL sshd: submit
from the Submit screen, Queue, Logs and Nodes screens, cancel from the queue, and a controller
outage (``scripts/slurm-cluster up`` first; these fail, not skip, without it)."""

from __future__ import annotations

import asyncio
import os
import subprocess
from dataclasses import replace

from slurmhelpers import DIR, ROOT, live_state, short_spec_text, sinfo_gpus, slurm, squeue_job, ssh_cluster
from textual.widgets import Input
from uihelpers import log_lines, make_app, screen_text
from waiting import async_wait_until, wait_for

from yanflow_tui.hub import Health
from yanflow_tui.model import JobState
from yanflow_tui.screens.dialogs import ConfirmScreen
from yanflow_tui.screens.logs.screen import LogsScreen
from yanflow_tui.screens.node_jobs import NodeJobsScreen
from yanflow_tui.screens.nodes import NodesScreen
from yanflow_tui.screens.queue import JobTable
from yanflow_tui.screens.submit.screen import SubmitScreen
from yanflow_tui.screens.widgets.gpugrid import GpuGrid
from yanflow_tui.spec import parse_spec


def cluster():
    return replace(ssh_cluster(nodes_refresh_seconds=0.5), refresh_seconds=0.5)


def rows(app) -> list[str]:
    return app.screen.query_one(JobTable).row_keys


def node_gpus(app, name: str) -> dict[str, tuple[int, int]]:
    return {n.name: (n.gpus_allocated, n.gpus_total) for n in app.hub.snapshots[name].nodes}


def grid_gpus(grid: GpuGrid) -> dict[str, tuple[int, int]]:
    """node -> (allocated GPU cells, GPU cells) as the Nodes grid draws them."""
    return {
        key.split("/", 1)[1]: (sum(g.state.value == "allocated" for g in grid.gpus_of(key)), len(grid.gpus_of(key)))
        for key in grid.row_keys()
        if isinstance(key, str)
    }


async def test_submit_screen_job_shows_in_queue_nodes_and_logs(home, slurm_dir, slurm_jobs, tmp_path):
    spec_path = tmp_path / "short.yaml"
    # Long enough (20 s) to still run after the Nodes checks, when the Queue and Logs steps look for it.
    spec_path.write_text(short_spec_text("yf-ui-submit", lines=40, delay=0.5))
    c = cluster()
    app = make_app(c)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("2")
        await wait_for(
            pilot, lambda: isinstance(app.screen, NodesScreen) and app.hub.snapshots[c.name].nodes, what="nodes"
        )
        assert node_gpus(app, c.name) == sinfo_gpus()  # before the job
        await pilot.press("3")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, SubmitScreen) and app.screen, what="submit")
        screen.query_one("#spec-path", Input).value = str(spec_path)
        await pilot.click("#load")
        await wait_for(pilot, lambda: screen.query_one("#name", Input).value == "yf-ui-submit", what="loaded")
        assert "#SBATCH --gres=gpu:a100:4" in str(screen.query_one("#preview").render())
        capacity = str(screen.query_one("#capacity").render())  # the whole free nodes feed the form
        assert "gpu: 4/4 whole nodes free, 32/32 GPUs free" in capacity
        assert "fits now: 4 nodes in partition gpu can take 4 GPUs now, 2 needed" in capacity
        await pilot.press("ctrl+s")
        cluster_name, job_id = await wait_for(pilot, lambda: getattr(screen, "last_submitted", None), what="sent")
        slurm_jobs.add(job_id)
        assert cluster_name == c.name
        record = await async_wait_until(lambda: (j := squeue_job(job_id)) and j["job_state"] == "RUNNING" and j, 30)
        assert record["node_count"] == 2 and record["tres_per_node"] == "gres:gpu:a100:4"
        # Nodes screen agrees with sinfo during the job.
        await pilot.press("2")
        await wait_for(
            pilot,
            lambda: node_gpus(app, c.name) == sinfo_gpus() and sum(u for u, _ in node_gpus(app, c.name).values()) >= 8,
            timeout=15,
            what="nodes during job",
        )
        grid = app.screen.query_one("#nodes", GpuGrid)
        assert grid.node_count == len(sinfo_gpus())
        await wait_for(pilot, lambda: grid_gpus(grid) == sinfo_gpus(), timeout=15, what="grid cells agree with sinfo")
        used = sum(u for u, _ in sinfo_gpus().values())
        await wait_for(pilot, lambda: grid.group(c.name).summary.gpus_used == used, what="cluster summary")
        busy = next(k for k in grid.row_keys() if isinstance(k, str) and grid_gpus(grid)[k.split("/", 1)[1]][0])
        await wait_for(
            pilot,
            lambda: (j := app.hub.find_job(c.name, job_id)) and busy.split("/", 1)[1] in j.nodes,
            what="the job on the busy node",
        )
        grid.select_key(busy, None)
        await pilot.press("enter")  # on the node's own fields: the node's live jobs are listed
        listing = await wait_for(pilot, lambda: isinstance(app.screen, NodeJobsScreen) and app.screen, what="jobs")
        assert job_id in [j.id for j in listing.jobs]
        await pilot.press("escape")
        # Queue shows it; logs stream while it runs.
        await pilot.press("1")
        key = f"{c.name}/{job_id}"
        await wait_for(pilot, lambda: key in rows(app), what="queue row")
        app.request_refresh(c.name)  # the row may come from a refresh taken while it was still pending
        job = await wait_for(
            pilot,
            lambda: (j := app.hub.find_job(c.name, job_id)) and j.state is JobState.RUNNING and j,
            timeout=20,
            what="running in the queue",
        )
        assert job.gpus == 8 and len(job.nodes) == 2
        table = app.screen.query_one(JobTable)
        table.move_cursor_to_key(key)
        await pilot.press("l")
        logs = await wait_for(pilot, lambda: isinstance(app.screen, LogsScreen) and app.screen, what="logs")
        await wait_for(pilot, lambda: "line 2" in log_lines(logs), timeout=20, what="first lines")
        assert live_state(job_id) == "RUNNING"  # lines arrived while it ran
        await wait_for(pilot, lambda: "done" in log_lines(logs), timeout=40, what="last line")
        assert [f"line {i}" for i in range(1, 41)] == [x for x in log_lines(logs) if x.startswith("line ")]


async def test_cancel_from_the_queue_ends_the_job_in_squeue(home, slurm_dir, slurm_jobs):
    c = cluster()
    app = make_app(c)
    async with app.run_test(size=(160, 45)) as pilot:
        backend = app.hub.backend(c.name)
        spec = parse_spec(
            "name: yf-ui-cancel\nkind: slurm\ncommand: sleep 300\nresources: {cpus: 1, memory: 100M}\n"
            "slurm: {partition: cpu, output: /dev/null}\n"
        )
        job_id = slurm_jobs.add(await backend.submit(spec))
        key = f"{c.name}/{job_id}"
        await wait_for(pilot, lambda: key in rows(app), what="row")
        await async_wait_until(lambda: live_state(job_id) == "RUNNING", 30, "running")
        table = app.screen.query_one(JobTable)
        table.move_cursor_to_key(key)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirm")
        await pilot.press("y")
        await async_wait_until(lambda: live_state(job_id) in ("CANCELLED", None), 20, "cancelled in squeue")
        await wait_for(
            pilot,
            lambda: (j := app.hub.find_job(c.name, job_id)) is None or j.state.terminal,
            timeout=15,
            what="queue updated",
        )


async def test_controller_outage_marks_the_cluster_stale_and_the_app_recovers(home, slurm_dir):
    c = cluster()
    app = make_app(c)
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_for(pilot, lambda: app.hub.snapshots[c.name].health is Health.OK, what="ok")
        pid = int((DIR / "run" / "slurmctld.pid").read_text())
        try:
            os.kill(pid, 15)
            await wait_for(pilot, lambda: app.hub.snapshots[c.name].health is Health.STALE, timeout=40, what="stale")
            await wait_for(pilot, lambda: "stale" in screen_text(app), what="stale drawn")
            assert app.is_running
        finally:
            up = await asyncio.to_thread(
                subprocess.run, [str(ROOT / "scripts" / "slurm-cluster"), "up"], capture_output=True, text=True
            )
            assert up.returncode == 0, up.stderr
        await wait_for(pilot, lambda: app.hub.snapshots[c.name].health is Health.OK, timeout=60, what="back")
        assert app.hub.snapshots[c.name].nodes


async def test_a_cancelled_jobs_gpus_show_free_within_seconds_not_at_the_next_node_poll(home, slurm_dir, slurm_jobs):
    """The cluster's jobs and nodes are polled every 30 s: after a cancel from the Queue, the node map
    shows the job's GPUs free within a few seconds (the change refreshes both, and again shortly after)."""
    c = replace(ssh_cluster(), refresh_seconds=30.0)
    out = slurm(
        "sbatch", "--parsable", "-p", "gpu", "-N1", "--gres=gpu:a100:4", "-o", "/dev/null", "-J", "yf-free-gpus",
        "-t", "00:05:00", "--wrap=sleep 300",
    )  # fmt: skip
    job_id = slurm_jobs.add(out.strip().split(";")[0])
    record = await async_wait_until(lambda: (j := squeue_job(job_id)) and j["job_state"] == "RUNNING" and j, 30)
    node = record["nodes"]
    app = make_app(c)
    async with app.run_test(size=(160, 45)) as pilot:
        key = f"{c.name}/{job_id}"
        await wait_for(pilot, lambda: key in rows(app) and node in node_gpus(app, c.name), what="the job and nodes")
        busy = node_gpus(app, c.name)[node][0]
        assert busy >= 4
        app.screen.query_one(JobTable).move_cursor_to_key(key)
        await pilot.pause()
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirm")
        await pilot.press("y")
        started = asyncio.get_running_loop().time()
        await wait_for(pilot, lambda: node_gpus(app, c.name)[node][0] <= busy - 4, what="the GPUs free", timeout=10)
        assert asyncio.get_running_loop().time() - started < 10
        assert live_state(job_id) in (None, "CANCELLED", "COMPLETING")


async def test_widen_history_on_a_cluster_without_accounting_says_what_is_listed(home, slurm_dir):
    """H on the loopback cluster (no slurmdbd) says no history is kept, not "the last 7 days"."""
    app = make_app(cluster())
    async with app.run_test(size=(140, 30)) as pilot:
        backend = app.hub.backend(cluster().name)
        await wait_for(pilot, lambda: backend.notice, timeout=30, what="sacct found without accounting")
        window = backend.history_window
        await pilot.press("H")
        said = await wait_for(
            pilot, lambda: next((n.message for n in app._notifications if "history" in n.message), ""), what="said"
        )
        assert "no history (no accounting): only the jobs squeue still lists" in said and "days" not in said
        assert backend.history_window == window


async def test_a_pending_arrays_group_counts_its_tasks_not_its_rows(home, slurm_dir, slurm_jobs):
    """A held array of 6 is one squeue row (N_[0-5]): its group says (6), and its detail 6 tasks."""
    from slurmhelpers import slurm

    out = slurm("sbatch", "--parsable", "--hold", "--array=0-5", "-J", "nc-sweep", "--wrap", "true")
    job_id = slurm_jobs.add(out.strip().split(";")[0])
    app = make_app(cluster())
    async with app.run_test(size=(160, 30)) as pilot:
        key = f"{cluster().name}/{job_id}"
        await wait_for(pilot, lambda: key in rows(app), timeout=30, what="the array's group row")
        await wait_for(pilot, lambda: "nc-sweep (6)" in screen_text(app), what="the group's count of tasks")
        head = app.hub.find_job(cluster().name, job_id)
        assert dict(head.details)["Array tasks"] == "6 in 1 row"
