"""The capacity verdict against the REAL loopback Slurm cluster (gpu[01-04] with 8 a100 each in
partition gpu; ``scripts/slurm-cluster up``): a job that can never fit is refused by ``submit`` and by
the Submit form before anything reaches sbatch. The cases hold however busy the shared cluster is:
they break the cluster's configuration (a GPU type it lacks, more whole nodes than the partition has,
more GPUs than a node has), never its current load."""

from __future__ import annotations

import json
import subprocess
import uuid
from dataclasses import replace

import pytest
from slurmhelpers import DIR, env, slurm, ssh_cluster
from textual.widgets import Input
from uihelpers import make_app
from waiting import wait_for

from yanflow_tui import cli
from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.capacity import Fit, verdict
from yanflow_tui.screens.submit.screen import SubmitScreen
from yanflow_tui.spec import parse_spec

CONFIG = str(DIR / "yanflow.yaml")

NEVER = [
    ({"nodes": 1, "gpus": 1}, {"gpu_type": "h100"}, "partition gpu has no h100 GPUs; it has a100"),
    (
        {"nodes": 5, "gpus": 1},
        {"exclusive": True},
        "partition gpu has 4 nodes that can take 1 GPUs; the job needs 5 whole",
    ),
    ({"nodes": 1, "gpus": 9}, {}, "no node in partition gpu has 9 GPUs (largest: 8)"),
]


def spec_text(name: str, resources: dict, slurm_keys: dict) -> str:
    kind = "multi-node" if resources["nodes"] > 1 else "slurm"
    return json.dumps(
        {
            "name": name,
            "kind": kind,
            "command": "sleep 60",
            "resources": resources,
            "slurm": {"partition": "gpu", "output": "/dev/null", **slurm_keys},
        }
    )


def names_in_slurm() -> set[str]:
    """Every job name slurmctld knows (pending, running, and finished ones it still holds: a refused
    sbatch that left a FAILED job behind would show here)."""
    return {j["name"] for j in json.loads(slurm("squeue", "-a", "-t", "all", "--json"))["jobs"]}


@pytest.mark.parametrize("resources, slurm_keys, reason", NEVER, ids=["gpu-type", "exclusive-nodes", "gpus-per-node"])
def test_cli_refuses_a_job_that_never_fits_and_sbatch_never_runs(
    slurm_dir, slurm_jobs, tmp_path, capsys, register_backend, resources, slurm_keys, reason
):
    name = f"yf-never-{uuid.uuid4().hex[:8]}"
    path = tmp_path / "job.yaml"
    path.write_text(spec_text(name, resources, slurm_keys))
    made: list[SlurmBackend] = []

    class Recording(SlurmBackend):  # the CLI's backend, kept so its transport's history can be read
        def __init__(self, config):
            super().__init__(config)
            made.append(self)

    register_backend(Recording, "slurm")

    def ran() -> set[str]:
        return {argv[0] for backend in made for argv in backend.transport.history}

    assert cli.main(["--config", CONFIG, "submit", str(path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [f"yanflow-tui: error: never fits: {reason} (--force submits anyway)"]
    assert "sinfo" in ran() and "sbatch" not in ran()  # the verdict came from the cluster's nodes
    assert name not in names_in_slurm()
    # --dry-run says the same on stderr, and still prints the script.
    assert cli.main(["--config", CONFIG, "submit", "--dry-run", str(path)]) == 0
    out = capsys.readouterr()
    assert out.err.splitlines() == [f"yanflow-tui: never fits: {reason}"] and "#!/bin/sh" in out.out
    assert "sinfo" in ran() and "sbatch" not in ran()


def test_slurm_itself_never_runs_these_jobs(slurm_dir, slurm_jobs, tmp_path):
    """The ground truth: sbatch refuses each case the verdict calls never outright, except more nodes
    than the partition has, which it takes and leaves pending for good (reason PartitionConfig)."""
    for resources, slurm_keys, _reason in NEVER:
        argv = [
            "sbatch",
            "--parsable",
            "-J",
            f"yf-truth-{uuid.uuid4().hex[:8]}",
            "-p",
            "gpu",
            "-o",
            "/dev/null",
            "-N",
            str(resources["nodes"]),
            f"--gres=gpu:{slurm_keys.get('gpu_type', 'a100')}:{resources['gpus']}",
            *(["--exclusive"] if slurm_keys.get("exclusive") else []),
            "--wrap",
            "sleep 1",
        ]
        result = subprocess.run(argv, capture_output=True, text=True, env=env(), timeout=60)
        if result.returncode == 0:
            job_id = slurm_jobs.add(result.stdout.strip().split(";")[0])
            job = next(
                j for j in json.loads(slurm("squeue", "-j", job_id, "--json"))["jobs"] if str(j["job_id"]) == job_id
            )  # 22.05 answers with every job
            assert (resources["nodes"], job["job_state"], job["state_reason"]) == (5, "PENDING", "PartitionConfig")
        else:
            assert "Requested node configuration is not available" in result.stderr, result.stderr
            # ...and leaves a FAILED job behind (what the verdict spares the user).


async def test_the_verdict_on_the_live_cluster_fits_or_waits_for_what_it_has(slurm_dir):
    backend = SlurmBackend(ssh_cluster())
    try:
        nodes = await backend.list_nodes()
        spec = parse_spec(spec_text("yf-fits", {"nodes": 4, "gpus": 8}, {"exclusive": True}), "t.yaml")
        assert verdict(nodes, backend.capacity_request(spec)).fit in (Fit.NOW, Fit.WAITS)
        spec = parse_spec(spec_text("yf-fits", {"nodes": 1, "gpus": 8}, {"gpu_type": "a100"}), "t.yaml")
        assert verdict(nodes, backend.capacity_request(spec)).fit in (Fit.NOW, Fit.WAITS)
    finally:
        await backend.close()


async def test_the_form_lists_never_fits_as_a_problem_and_cannot_submit(home, slurm_dir):
    app = make_app(replace(ssh_cluster(nodes_refresh_seconds=0.5), refresh_seconds=0.5))
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for(pilot, lambda: app.hub.snapshots["slurm-test"].nodes, what="nodes")
        await pilot.press("3")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, SubmitScreen) and app.screen, what="submit")
        errors = lambda: str(screen.query_one("#errors").render())  # noqa: E731
        capacity = lambda: str(screen.query_one("#capacity").render())  # noqa: E731
        screen.query_one("#name", Input).value = "yf-form-never"
        screen.query_one("#command").text = "sleep 60"
        screen.query_one("#slurm-partition", Input).value = "gpu"
        screen.query_one("#gpus", Input).value = "1"
        await wait_for(
            pilot,
            lambda: errors() == "none" and not screen.query_one("#submit").disabled,
            what="a job that fits or waits can be sent",
        )
        assert "fits now" in capacity() or "waits" in capacity()
        screen.query_one("#slurm-gpu_type", Input).value = "h100"
        await wait_for(
            pilot, lambda: errors() == "never fits: partition gpu has no h100 GPUs; it has a100", what="never: no h100"
        )
        assert screen.query_one("#submit").disabled and "never fits" in capacity()
        await pilot.press("ctrl+s")
        screen.query_one("#slurm-gpu_type", Input).value = ""
        screen.query_one("#gpus", Input).value = "9"
        await wait_for(
            pilot,
            lambda: errors() == "never fits: no node in partition gpu has 9 GPUs (largest: 8)",
            what="never: 9 GPUs",
        )
        assert screen.query_one("#submit").disabled
        await pilot.press("ctrl+s")
        await pilot.pause()  # the key handled: a submission it started is a worker by now
        await wait_for(
            pilot,
            lambda: not any(w.group == "submit" and not w.is_finished for w in app.workers),
            what="no submission left",
        )
        assert "sbatch" not in {argv[0] for argv in app.hub.backend("slurm-test").transport.history}
    assert "yf-form-never" not in names_in_slurm()
