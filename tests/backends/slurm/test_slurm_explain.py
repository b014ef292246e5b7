"""``explain`` against the REAL loopback Slurm cluster over SSH: a job pending on resources, one on a
dependency, one held by its user and one with a later begin time each get their own, correct
explanation naming its values, with an expected start where Slurm has one; the CLI's ``--json``; and
in read-only mode only read commands reach the cluster. Every job is named ``explain-`` and cancelled."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timezone

import pytest
from slurmhelpers import (
    assert_backfill_estimate,
    assert_held_and_begin,
    assert_reads_only,
    slurm,
    squeue_job,
    ssh_cluster,
)
from waiting import wait_until

from yanflow_tui import cli
from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.explain import Category


def sbatch(name: str, *options: str, seconds: int = 120) -> str:
    out = slurm(
        "sbatch", "--parsable", "-J", f"explain-{name}", "-p", "cpu", "--mem=100M", "-o", "/dev/null",
        *options, f"--wrap=sleep {seconds}",
    )  # fmt: skip
    return out.strip().split(";")[0]


def reason_of(job_id: str) -> str:
    job = squeue_job(job_id)
    return "" if job is None else str(job.get("state_reason", ""))


@pytest.fixture
async def backend(slurm_dir):
    b = SlurmBackend(replace(ssh_cluster(), read_only=True))  # explain is a read: read-only must allow it
    yield b
    await b.close()


async def test_four_pending_jobs_get_four_explanations_with_their_values(backend, slurm_jobs):
    blocker = slurm_jobs.add(sbatch("blocker", "-w", "cpu02", "--exclusive", "-t", "00:30:00", seconds=1800))
    wait_until(lambda: (squeue_job(blocker) or {}).get("job_state") == "RUNNING", 60, "the blocker to run on cpu02")
    waiting = slurm_jobs.add(sbatch("resources", "-w", "cpu02", "--exclusive", "-t", "00:02:00"))
    after = slurm_jobs.add(sbatch("dependency", f"--dependency=afterok:{blocker}", "-t", "00:02:00"))
    held = slurm_jobs.add(sbatch("held", "--hold", "-t", "00:02:00"))
    later = slurm_jobs.add(sbatch("begin", "--begin=now+2hours", "-t", "00:02:00"))
    wait_until(lambda: reason_of(waiting) == "Resources", 60, "the second job to wait for cpu02")

    found = {job_id: await backend.explain(job_id) for job_id in (waiting, after, held, later)}
    categories = [found[j].category for j in (waiting, after, held, later)]
    assert categories == [Category.RESOURCES, Category.DEPENDENCY, Category.HELD, Category.BEGIN_TIME]
    assert len({e.reason for e in found.values()}) == 4 and all(e.state == "PENDING" for e in found.values())

    assert "cpu02" in found[waiting].reason and "partition cpu" in found[waiting].reason
    assert found[waiting].short.startswith("waits for resources")
    assert (
        f"job {blocker}" in found[after].reason
        and "RUNNING" in found[after].reason
        and "afterok" in found[after].reason
    )
    # the job it depends on has a time limit: it cannot start before that job's end
    blocker_end = datetime.fromtimestamp(int(squeue_job(blocker)["end_time"]), timezone.utc)  # squeue --json 22.05
    assert found[after].expected_start == blocker_end
    assert_held_and_begin(found[held], found[later])

    # resources: backfill's estimate, after its next cycle; and every command sent was a read
    await assert_backfill_estimate(backend, waiting, blocker_end)
    assert_reads_only(backend.transport.history)


def test_cli_explain_json(slurm_dir, slurm_jobs, capsys):
    held = slurm_jobs.add(sbatch("cli", "--hold", "-t", "00:02:00"))
    config = ["--config", str(slurm_dir / "yanflow.yaml"), "--read-only"]
    capsys.readouterr()
    assert cli.main([*config, "explain", held, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["schema_version"] == 1 and out["errors"] == []
    data = out["explain"]
    assert (data["state"], data["category"], data["code"]) == ("PENDING", "held", "JobHeldUser")
    assert data["action"].startswith("press L") and data["expected_start"] is None and data["expected_start_why"]
    assert cli.main([*config, "explain", held]) == 0
    assert "What to do: press L" in capsys.readouterr().out


async def test_job_state_uses_only_job_state_where_slurm_has_it_and_falls_back_where_not(backend, slurm_jobs):
    from yanflow_tui.model import JobState

    held = slurm_jobs.add(sbatch("state", "--hold", "-t", "00:02:00"))
    assert await backend._job_state(held) is JobState.PENDING  # 22.05 lacks the option: the plain query answers
    assert await backend._job_state(held) is JobState.PENDING
    tried = [argv for argv in backend.transport.history if "--only-job-state" in argv]
    version = slurm("sinfo", "-V").split()[-1]
    if tuple(map(int, version.split(".")[:2])) < (23, 2):
        assert len(tried) == 1 and backend._only_state is False  # refused once, never asked again
    else:
        assert backend._only_state is True and len(tried) == 2
    assert await backend._job_state("999999999") is JobState.COMPLETED  # gone, not an error
