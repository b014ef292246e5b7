"""Which job holds which GPU on Slurm, and the job detail's fields, against the REAL site cluster
(hx-n[1-3] with 4 h100 each): the GPU indices Slurm reports per node (``scontrol -dd``) reach the
Nodes data, ``nodes --json``, ``enter`` on a GPU and a node's job list; a pending job shows its
expected start, and every field once."""

from __future__ import annotations

import json
import re
from dataclasses import replace

from sitehelpers import SITE_CONFIG, site_cluster, site_slurm
from uihelpers import make_app
from waiting import wait_for, wait_until

from yanflow_tui import cli
from yanflow_tui.backends.slurm import gpus as slurm_gpus
from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.model import JobState
from yanflow_tui.screens.detail import JobDetailScreen
from yanflow_tui.screens.node_jobs import NodeJobsScreen, jobs_on
from yanflow_tui.screens.nodes import NodesScreen
from yanflow_tui.screens.widgets.gpugrid import GpuGrid


def test_placement_from_scontrol_dd():
    text = (
        "JobId=16 JobName=wrap Nodes=hx-n[1-2] CPU_IDs=0 Mem=1000 GRES=gpu:h100:2(IDX:0-1) "
        "Nodes=hx-n3 CPU_IDs=0-1 Mem=2000 GRES=gpu:h100:1(IDX:3) Nodes=hx-c1 CPU_IDs=0 Mem=10 GRES= "
        "TresPerNode=gres:gpu:h100:2"
    )
    assert slurm_gpus.job_placement(text) == {"hx-n1": (0, 1), "hx-n2": (0, 1), "hx-n3": (3,)}
    multiline = "   Nodes=node7 CPU_IDs=0-3 Mem=4000 GRES=gpu:a100:4(IDX:4-7)\n   MinCPUsNode=1\n"
    assert slurm_gpus.job_placement(multiline) == {"node7": (4, 5, 6, 7)}
    assert slurm_gpus.job_placement("JobId=1 Nodes=n1 CPU_IDs=0 Mem=1 GRES=") == {}


def _running(*argv: str) -> str:
    job_id = site_slurm("sbatch", "--parsable", "-o", "/dev/null", *argv).strip().split(";")[0]
    return job_id


def _where(job_id: str) -> dict[str, set[int]]:
    """node -> GPU indices, from Slurm itself."""
    out = site_slurm("scontrol", "-dd", "-o", "show", "job", job_id)
    found: dict[str, set[int]] = {}
    for nodes, idx in re.findall(r"Nodes=(\S+) CPU_IDs=\S+ Mem=\S+ GRES=gpu:\w+:\d+\(IDX:([\d,-]+)\)", out):
        hosts = site_slurm("scontrol", "show", "hostnames", nodes).split()
        indices = {i for part in idx.split(",") for i in (range(int(part.split("-")[0]), int(part.split("-")[-1]) + 1))}
        for host in hosts:
            found.setdefault(host, set()).update(indices)
    return found


def _wait_running(*job_ids: str) -> None:
    wait_until(
        lambda: all(site_slurm("squeue", "-h", "-j", j, "-o", "%T").strip() == "RUNNING" for j in job_ids),
        timeout=60,
        what=f"jobs {job_ids} running",
    )


def test_nodes_json_says_which_job_holds_each_gpu(site_jobs, capsys):
    wide = _running("-p", "batch", "-N", "2", "--gres=gpu:h100:2", "-w", "hx-n[1-2]", "--wrap", "sleep 120")
    one = _running("-p", "batch", "-w", "hx-n1", "--gres=gpu:h100:1", "--wrap", "sleep 120")
    site_jobs.extend([wide, one])
    _wait_running(wide, one)
    expected = {}
    for job_id in (wide, one):
        for node, indices in _where(job_id).items():
            for index in indices:
                expected[(node, index)] = job_id
    assert len(expected) == 5
    assert cli.main(["--config", str(SITE_CONFIG), "nodes", "--json"]) == 0
    nodes = {n["name"]: n for n in json.loads(capsys.readouterr().out)["nodes"]}
    got = {(name, g["index"]): g["job"] for name, n in nodes.items() for g in n["gpus"] if g["job"]}
    assert got == expected


async def test_enter_on_a_gpu_opens_the_job_holding_it_and_node_jobs_are_live_ones(home, site_jobs):
    first = _running("-p", "batch", "-w", "hx-n3", "--gres=gpu:h100:1", "--wrap", "sleep 120")
    second = _running("-p", "batch", "-w", "hx-n3", "--gres=gpu:h100:2", "--wrap", "sleep 120")
    gone = _running("-p", "batch", "-w", "hx-n3", "--gres=gpu:h100:1", "--wrap", "sleep 120")
    site_jobs.extend([first, second, gone])
    _wait_running(first, second, gone)
    site_slurm("scancel", gone)
    wait_until(
        lambda: "RUNNING" not in site_slurm("squeue", "-h", "-t", "all", "-j", gone, "-o", "%T"),
        timeout=60,
        what="the cancelled job to end",
    )
    held = {i: j for j in (first, second) for i in _where(j)["hx-n3"]}
    cluster = replace(site_cluster(), refresh_seconds=0.5)
    app = make_app(replace(cluster, options={**cluster.options, "nodes_refresh_seconds": 0.5}))
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.press("2")
        grid = await wait_for(
            pilot, lambda: isinstance(app.screen, NodesScreen) and app.screen.query_one(GpuGrid), what="the Nodes grid"
        )
        key = f"{cluster.name}/hx-n3"
        await wait_for(
            pilot,
            lambda: {g.index: g.job_id for g in grid.gpus_of(key) if g.job_id} == held,
            timeout=30,
            what="each GPU of hx-n3 with its job",
        )
        for index, job_id in held.items():
            assert grid.select_key(key, index)
            await pilot.pause()
            await pilot.press("enter")
            screen = await wait_for(
                pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen, what="the job detail"
            )
            assert screen.job.id == job_id
            await pilot.press("escape")
            await wait_for(pilot, lambda: isinstance(app.screen, NodesScreen), what="back on Nodes")
        await wait_for(
            pilot,
            lambda: all(j.state.terminal for j in app.hub.snapshots[cluster.name].jobs if j.id == gone),
            timeout=60,
            what="the cancelled job seen ended",
        )
        assert grid.select_key(key, None)
        await pilot.pause()
        await pilot.press("enter")
        screen = await wait_for(
            pilot, lambda: isinstance(app.screen, NodeJobsScreen) and app.screen, what="the node's jobs"
        )
        snapshot = app.hub.snapshots[cluster.name]
        listed = {j.id for j in jobs_on(screen.node, snapshot.jobs)}
        assert listed == {first, second}  # the cancelled one has left the node
        text = screen.query_one("DataTable").get_row(
            next(k for k in screen.query_one("DataTable").rows if k.value.endswith(f"/{second}"))
        )
        assert ",".join(str(i) for i in sorted(i for i, j in held.items() if j == second)) in [str(c) for c in text]


async def test_pending_job_shows_expected_start_and_each_field_once(site_jobs):
    job_id = site_slurm(
        "sbatch",
        "--parsable",
        "--hold",
        "-p",
        "serial",
        "-t",
        "3:00:00",
        "-o",
        "/dev/null",
        "-J",
        "held-one",
        "--wrap",
        "true",
    ).strip()
    site_jobs.append(job_id)
    backend = SlurmBackend(site_cluster())
    try:
        job = await backend.get_job(job_id)
        assert job.state is JobState.PENDING and job.start_time is None
        text = await backend.describe(job_id)
        labels = [line.split(":", 1)[0] for line in text.splitlines() if re.match(r"^\S[^:]*:", line)]
        assert len(labels) == len(set(labels)), text  # every field once
        assert re.search(r"^Time limit:\s+3:00:00$", text, re.M), text
        assert re.search(r"^Started:\s+-$", text, re.M), text
        assert "180" not in text
    finally:
        await backend.close()


async def test_planned_nodes_show_their_gpus_held_not_free(site_jobs):
    """Slurm's backfill holds free nodes for a pending job (PLANNED; 22.05's JSON says "idle" with the
    flag PLANNED): their free GPUs are not free for anyone else."""
    from yanflow_tui.model import GpuState

    busy = _running("-p", "batch", "-w", "hx-n1", "--gres=gpu:h100:1", "-t", "5", "--wrap", "sleep 120")
    site_jobs.append(busy)
    _wait_running(busy)
    whole = site_slurm(
        "sbatch", "--parsable", "-p", "batch", "-N", "3", "--exclusive", "-t", "5", "-o", "/dev/null", "--wrap", "true"
    ).strip()
    site_jobs.append(whole)
    wait_until(
        lambda: "planned" in site_slurm("sinfo", "-h", "-N", "-p", "batch", "-o", "%N %T"),
        timeout=60,
        what="backfill to plan the pending job on the free nodes",
    )
    planned = {
        line.split()[0]
        for line in site_slurm("sinfo", "-h", "-N", "-p", "batch", "-o", "%N %T").splitlines()
        if line.split()[1] == "planned"
    }
    backend = SlurmBackend(site_cluster())
    try:
        nodes = {n.name: n for n in await backend.list_nodes()}
    finally:
        await backend.close()
    for name in planned:
        assert nodes[name].state == "planned"
        assert {g.state for g in nodes[name].gpus} == {GpuState.UNAVAILABLE}
        assert all("pending job" in g.reason for g in nodes[name].gpus)
