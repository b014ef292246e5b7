"""Local jobs started by a version that spawned its helpers under the old module paths
(``yanflow_tui.backends.local_runner`` / ``local_scheduler``) keep working after the move to
``backends/local/``: the shims run, and a console of this version follows such a job to its end."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from jobhelpers import cleanup_state_dir
from waiting import async_wait_until

from yanflow_tui import locations
from yanflow_tui.backends.local import runner, scheduler
from yanflow_tui.backends.local.backend import LocalBackend
from yanflow_tui.config import ClusterConfig
from yanflow_tui.model import JobState
from yanflow_tui.spec import spec_from_data

OLD_RUNNER = "yanflow_tui.backends.local_runner"
OLD_SCHEDULER = "yanflow_tui.backends.local_scheduler"


@pytest.fixture
def state(home, fake_nvml):
    path = locations.state_dir()
    yield path
    cleanup_state_dir(path)


def test_the_old_runner_path_still_runs_a_job_and_records_its_exit(tmp_path):
    exit_file = tmp_path / "exit"
    done = subprocess.run(
        [sys.executable, "-m", OLD_RUNNER, str(exit_file), "--", "sh", "-c", "exit 3"], capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert exit_file.read_text() == "3\n"
    assert (exit_file.stat().st_mode & 0o777) == 0o600


def test_the_old_scheduler_path_still_starts_and_exits_when_nothing_waits(state):
    state.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-m", OLD_SCHEDULER, str(state), "local"], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_new_jobs_are_spawned_by_the_modules_own_names(state, tmp_path):
    backend = LocalBackend(ClusterConfig("local", "local"), state_dir=state)
    argv = backend._argv(["true"], tmp_path / "exit")
    assert argv[:3] == [sys.executable, "-m", runner.__spec__.name]
    assert runner.__spec__.name == "yanflow_tui.backends.local.runner"
    assert scheduler.__spec__.name == "yanflow_tui.backends.local.scheduler"


async def test_a_job_running_under_the_old_runner_is_followed_to_its_end_by_a_new_console(state, monkeypatch):
    """The job is started the way the old version started it (its runner under the old module path);
    a fresh backend, as a new console would make, sees it run, then reads its exit status."""
    old = LocalBackend(ClusterConfig("local", "local"), state_dir=state)
    new_argv = old._argv

    def old_argv(command, exit_file):  # the runner the old version spawned
        argv = new_argv(command, exit_file)
        assert argv[2] == runner.__spec__.name
        return [*argv[:2], OLD_RUNNER, *argv[3:]]

    monkeypatch.setattr(old, "_argv", old_argv)
    gate = state / "go"
    job_id = await old.submit(
        spec_from_data({"name": "old", "command": f"while [ ! -e {gate} ]; do sleep 0.05; done; exit 4"})
    )
    await old.close()

    new = LocalBackend(ClusterConfig("local", "local"), state_dir=state)
    try:
        running = await new.get_job(job_id)
        assert running.state is JobState.RUNNING
        row = new.store.get(int(job_id))
        assert row is not None and row.pid
        cmdline = await asyncio.to_thread(Path(f"/proc/{row.pid}/cmdline").read_bytes)
        assert OLD_RUNNER in cmdline.decode().split("\0")
        gate.touch()

        async def ended():
            job = await new.get_job(job_id)
            return job if job.state.terminal else None

        job = await async_wait_until(ended, what=f"job {job_id} to end")
        assert job.state is JobState.FAILED
        assert job.exit_code == 4
    finally:
        gate.touch()
        await new.close()
