"""A real terminal (pty) runs the console over the REAL Slurm test cluster (SSH, asyncssh): ``x`` on a
running job suspends the console and opens ``srun --overlap --pty`` on the job's node; ``echo
$SLURM_JOB_ID`` answers the job's id, ``exit`` brings the console back as it was (the title, the
filter, the job's row; only its age has moved on)."""

from __future__ import annotations

import asyncio
import re
import sys

from slurmhelpers import DIR, ssh_cluster
from terminal import Terminal
from waiting import async_wait_until

from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.spec import spec_from_data

AGE = re.compile(r" \d+[smhd]\b")


def test_x_opens_srun_in_the_job_and_exit_brings_the_console_back(slurm_dir, slurm_jobs, tmp_path):
    spec = spec_from_data(
        {
            "name": "yf-xshell",
            "kind": "slurm",
            "command": "sleep 300",
            "workdir": str(tmp_path),
            "resources": {"cpus": 1, "memory": "200M"},
            "slurm": {"partition": "cpu", "time": "00:05:00", "output": str(tmp_path / "out.log")},
        }
    )

    async def start() -> str:
        backend = SlurmBackend(ssh_cluster())
        try:
            job_id = await backend.submit(spec)

            async def running():
                return (await backend._raw_job(job_id)).state.upper() == "RUNNING"

            await async_wait_until(running, what="the job running", timeout=60)
            return job_id
        finally:
            await backend.close()

    job_id = slurm_jobs.add(asyncio.run(start()))
    home = tmp_path / "home"
    home.mkdir()
    term = Terminal([sys.executable, "-m", "yanflow_tui", "--config", str(DIR / "yanflow.yaml")], home, 130, 30)
    try:
        term.wait_title("Queue", timeout=40)
        term.wait_text(rf"\b{job_id}\b", timeout=40)
        term.press("/")
        term.wait_text("filter: words", timeout=20)
        term.press(f"id:{job_id}", "enter")  # only this job: the cursor is on its row
        term.wait(lambda text: "shown 1 of" in text, "the filter", timeout=20)

        def job_row() -> str:
            rows = [term.line(i) for i in range(term.lines) if re.search(rf"\b{job_id}\b.*yf-xshell", term.line(i))]
            return AGE.sub(" AGE ", " ".join(rows[0].split())) if rows else ""  # column widths follow other jobs

        # (the header's count can reach the terminal a frame before the filtered row: waited for, not read once)
        term.wait(lambda text: "running" in job_row(), "the job's row, running", timeout=20)
        before = job_row()
        term.press("x")
        term.wait_text(rf"yanflow: shell in job {job_id} on \S+", timeout=30)
        term.press('echo "j""ob=$SLURM_JOB_ID"', "enter")  # the typed line itself holds no "job="
        found = term.wait(lambda text: re.search(r"job=(\d+)", text), "the job's id echoed", timeout=40)
        assert found.group(1) == job_id
        term.press("exit", "enter")
        term.wait_title("Queue", timeout=30)
        term.wait(lambda text: "job=" not in text and "shown 1 of" in text, "the console redrawn", timeout=20)
        term.wait(lambda text: job_row() == before, f"the job's row as it was: {before!r}", timeout=20)
        term.wait_text(rf"shell in job {job_id} on .* exited \(0\)", timeout=10)
        term.press("q")
        assert term.exit_code() == 0
    finally:
        term.close()
