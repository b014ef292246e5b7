"""``yanflow-tui watch JOB``: waits for the job's end, prints its final state and exits with its exit
code, on the local backend (subprocesses, as a script runs it); the Slurm cluster's in
``slurm/test_slurm_watch.py``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from jobhelpers import cleanup_state_dir, run_cli

from yanflow_tui import locations


@pytest.fixture
def env(home, fake_nvml):
    fake_nvml.gpus(1)
    state = locations.state_dir()
    yield home
    cleanup_state_dir(state)


def submit(tmp_path, command: str) -> str:
    spec = tmp_path / "job.yaml"
    spec.write_text(json.dumps({"name": "notice-watch", "command": command}))
    result = run_cli("submit", str(spec))
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.mark.parametrize(("command", "code", "state"), [("sleep 1; exit 3", 3, "failed"), ("sleep 1", 0, "completed")])
def test_watch_exits_with_the_local_jobs_code(env, tmp_path, command, code, state):
    job_id = submit(tmp_path, command)
    result = run_cli("watch", job_id, timeout=60)
    assert result.returncode == code, result.stderr
    assert result.stdout == f"{job_id}\tlocal\t{state}, exit code {code}\n"


def test_watch_of_a_cancelled_local_job_exits_143(env, tmp_path):
    job_id = submit(tmp_path, "sleep 60")
    watcher = subprocess.Popen(
        [sys.executable, "-m", "yanflow_tui", "watch", job_id],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        assert "waiting for its end" in watcher.stderr.readline()  # it has seen the job live
        assert run_cli("cancel", job_id).returncode == 0
        assert watcher.wait(timeout=60) == 143
        assert watcher.stdout.read().startswith(f"{job_id}\tlocal\tcancelled")
    finally:
        watcher.kill()
        watcher.wait()


def test_watch_of_an_unknown_job_is_an_error(env):
    result = run_cli("watch", "999999")
    assert result.returncode == 1 and "yanflow-tui: error:" in result.stderr and "Traceback" not in result.stderr
