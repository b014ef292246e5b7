"""``yanflow-tui watch JOB`` on the loopback Slurm cluster: it exits with the job's code (jobs named
``notice-*``, cancelled at teardown)."""

from __future__ import annotations

import pytest
from slurmhelpers import slurm, squeue_job

from yanflow_tui import cli


@pytest.mark.parametrize(("script", "code", "state"), [("exit 3", 3, "failed"), ("true", 0, "completed")])
def test_watch_exits_with_the_slurm_jobs_code(slurm_dir, slurm_jobs, capsys, script, code, state):
    out = slurm(
        "sbatch", "--parsable", "-p", "cpu", "--mem=100M", "-o", "/dev/null", "-J", "notice-watch",
        f"--wrap=sleep 2; {script}",
    )  # fmt: skip
    job_id = slurm_jobs.add(out.strip().split(";")[0])
    assert cli.main(["--config", str(slurm_dir / "yanflow.yaml"), "watch", job_id, "--interval", "2"]) == code
    printed = capsys.readouterr()
    assert printed.out.startswith(f"{job_id}\tslurm-test\t{state}"), printed
    assert squeue_job(job_id)["job_state"] in ({"FAILED"} if code else {"COMPLETED"})
