"""No rank's last words are lost: on the real Slurm test cluster, 3-node jobs rendered by our own
sbatch script under the stub torchrun (``tests/launchstubs.py``), whose middle rank prints a
traceback to stderr and exits 1 at once while the others sleep. Each job must end promptly
(--kill-on-bad-exit stops the others), and the console's log read (``stream_logs``, as the log view
and ``yanflow-tui logs`` read it) must hold the traceback, labelled with its rank, in every job. torchrun
is handed a TORCHELASTIC_ERROR_FILE per node, beside that node's rank file."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from pathlib import Path

from launchstubs import make_launchers
from slurmhelpers import JOBS, live_state, slurm, ssh_cluster
from waiting import async_wait_until

from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.backends.slurm.script import ERROR_SUFFIX, RANK_SUFFIX, render
from yanflow_tui.model import LogLine
from yanflow_tui.spec import spec_from_data

RUNS = 10
SLEEP = 600  # what the ranks that do not fail would sleep: a job that hangs cannot pass
# Rank 1 fails once the others have said hello (each leaves a file in the shared workdir after its line), so
# that their lines are there to be checked; a loaded machine could otherwise stop them before they print.
TRAIN = f"""import os, sys, time
rank, marker = int(os.environ["RANK"]), sys.argv[1]
print(f"hello from rank {{rank}}", flush=True)
print(f"error file {{os.environ.get('TORCHELASTIC_ERROR_FILE')}}", flush=True)  # the stub passes it on
open(f"ready-{{marker}}-{{rank}}", "w").close()
if rank == 1:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not all(os.path.exists(f"ready-{{marker}}-{{r}}") for r in (0, 2)):
        time.sleep(0.1)
    raise RuntimeError(f"rank {{rank}} failed on purpose ({{marker}})")
time.sleep({SLEEP})
"""


def failing_spec(root: Path, marker: str):
    bin_dir = make_launchers(root / "bin")
    (root / "train.py").write_text(TRAIN)
    return spec_from_data(
        {
            "name": "yf-rank-logs",
            "kind": "multi-node",
            "launcher": "torchrun",
            "command": ["python3", "train.py", marker],
            "workdir": str(root),
            "resources": {"nodes": 3, "gpus": 1, "cpus": 1, "memory": "1G"},
            "env": {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "TMPDIR": str(root)},
            "slurm": {"partition": "gpu", "time": "00:15:00", "output": str(root / "%x-%j.out")},
        }
    )


def job_output(root: Path, job_id: str) -> str:
    """The job's StdOut, as the batch shell reads it (its real path)."""
    return os.path.realpath(next(root.glob(f"*-{job_id}.out")))


def ended(job_id: str) -> bool:
    return live_state(job_id) in ("FAILED", "COMPLETED", "CANCELLED", "TIMEOUT", "NODE_FAIL", None)


async def test_a_failing_ranks_traceback_reaches_the_jobs_log_in_every_run(slurm_jobs):
    root = JOBS / f"rank-logs-{uuid.uuid4().hex[:8]}"
    root.mkdir(parents=True)
    jobs: dict[str, str] = {}  # job id -> the marker its failing rank prints
    submitted = time.monotonic()
    for _ in range(RUNS):  # all at once: they run side by side
        marker = uuid.uuid4().hex[:10]
        rendered = render(failing_spec(root, marker), f"test-{marker[:6]}")
        job_id = slurm(*rendered.argv, input=rendered.script).strip().split(";")[0]
        jobs[slurm_jobs.add(job_id)] = marker
    backend = SlurmBackend(ssh_cluster())
    try:
        first = next(iter(jobs))
        followed = asyncio.create_task(_lines(backend.stream_logs(first, follow=True)))
        for job_id in jobs:  # every job fails fast: the ranks still asleep are stopped
            await async_wait_until(lambda j=job_id: ended(j), 180, f"job {job_id} ended")
        took = time.monotonic() - submitted
        assert took < SLEEP / 3, f"the jobs took {took:.0f} s: the sleeping ranks were not stopped"
        states = {job_id: live_state(job_id) for job_id in jobs}
        assert set(states.values()) <= {"FAILED", None}, states
        kept = {}
        for job_id, marker in jobs.items():  # read while slurmctld still has them (MinJobAge)
            lines = await _lines(backend.stream_logs(job_id))
            kept[job_id] = _traceback(lines, marker)
            assert LogLine(job_id, "hello from rank 0", "rank 0") in lines, lines
            assert LogLine(job_id, "hello from rank 2", "rank 2") in lines, lines
            assert any("task 1: Exited with exit code 1" in line.text for line in lines), lines  # srun's own
            error_file = f"{job_output(root, job_id)}{RANK_SUFFIX}1{ERROR_SUFFIX}"
            assert LogLine(job_id, f"error file {error_file}", "rank 1") in lines, lines
        assert sum(kept.values()) == RUNS, f"the traceback was kept in {sum(kept.values())} of {RUNS}: {kept}"
        # A log followed from the start finds the rank files as they appear and ends with the job.
        lines = await asyncio.wait_for(followed, 60)
        assert _traceback(lines, jobs[first]), lines
    finally:
        await backend.close()
    out = next(root.glob(f"*-{first}.out"))
    assert sorted(p.name for p in root.glob(f"{out.name}{RANK_SUFFIX}*")) == [
        f"{out.name}{RANK_SUFFIX}{n}" for n in range(3)
    ]


async def _lines(stream) -> list[LogLine]:
    return [line async for line in stream if not line.status]


def _traceback(lines: list[LogLine], marker: str) -> bool:
    """The failing rank's whole traceback, from its start to its last line, from rank 1."""
    texts = [line.text for line in lines if line.source == "rank 1"]
    return "Traceback (most recent call last):" in texts and any(
        t == f"RuntimeError: rank 1 failed on purpose ({marker})" for t in texts
    )
