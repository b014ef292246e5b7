"""Two hosts sharing one local store, as two login nodes sharing an NFS ``$HOME`` do: each job records
its host, only that host's console judges whether it lives or cancels it, the other shows it with its
host. The second host is a real second console in its own UTS and PID namespaces (``unshare``, as
root), so it has another hostname and cannot see the first host's processes, exactly as on NFS."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from jobhelpers import cleanup_state_dir, run_cli
from waiting import async_wait_until, wait_until

from yanflow_tui import locations
from yanflow_tui.backends.local.backend import HOST_ENV, LocalBackend, local_host
from yanflow_tui.backends.local.store import LocalStore
from yanflow_tui.config import ClusterConfig
from yanflow_tui.errors import BackendError
from yanflow_tui.model import JobState
from yanflow_tui.spec import spec_from_data


@pytest.fixture
def state(home, fake_nvml) -> Path:
    path = locations.state_dir()
    yield path
    cleanup_state_dir(path)


def spec(command: str, gpus: int = 0):
    return spec_from_data({"name": "shared", "command": command, "resources": {"gpus": gpus}})


async def state_is(backend: LocalBackend, job_id: str, wanted: JobState) -> bool:
    return (await backend.get_job(job_id)).state is wanted


def waits_for(path: Path) -> str:
    return f"while [ ! -e '{path}' ]; do sleep 0.05; done"


def other_host(*args: str, host: str) -> subprocess.CompletedProcess:
    """``yanflow-tui ARGS`` on a second "machine": another hostname, and none of our processes in sight."""
    env = {k: v for k, v in os.environ.items() if k != HOST_ENV}
    script = 'hostname "$0" && exec "$@"'
    return subprocess.run(
        [
            "unshare",
            "--uts",
            "--pid",
            "--fork",
            "--mount-proc",
            "sh",
            "-c",
            script,
            host,
            sys.executable,
            "-m",
            "yanflow_tui",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="unshare --uts --pid needs root")
def test_a_console_on_another_host_neither_fails_nor_cancels_our_live_job(state, tmp_path):
    gate = tmp_path / "GO"
    path = tmp_path / "job.json"
    path.write_text(json.dumps({"name": "shared", "command": waits_for(gate)}))
    submitted = run_cli("submit", str(path))
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    me = local_host()
    beta = f"yf-beta-{uuid.uuid4().hex[:6]}"
    wait_until(lambda: LocalStore(state / "local.db").get(int(job_id)).state == "running", what="running here")

    seen = other_host("jobs", "--json", host=beta)
    assert seen.returncode == 0, seen.stderr
    (row,) = [j for j in json.loads(seen.stdout)["jobs"] if j["id"] == job_id]
    assert row["state"] == "running", row  # not "failed (the job's process vanished)"
    assert row["nodes"] == [me] and row["reason"] == f"on host {me}"

    refused = other_host("cancel", job_id, host=beta)
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        f"yanflow-tui: error: job {job_id} runs on host {me}, not on {beta}: cancel it from a console on {me}"
    ]

    jobs = run_cli("jobs", "--json")  # this host still has it, running, and can cancel it
    assert [j["state"] for j in json.loads(jobs.stdout)["jobs"] if j["id"] == job_id] == ["running"]
    assert run_cli("cancel", job_id).returncode == 0
    assert LocalStore(state / "local.db").get(int(job_id)).state == "cancelled"


async def test_two_hosts_on_one_store_keep_to_their_own_jobs_and_gpus(state, fake_nvml, tmp_path):
    fake_nvml.gpus(1)
    alpha = LocalBackend(ClusterConfig("local", "local"), state_dir=state, host="alpha")
    beta = LocalBackend(ClusterConfig("local", "local"), state_dir=state, host="beta")
    gate = tmp_path / "GO"
    try:
        a = await alpha.submit(spec(waits_for(gate), gpus=1))
        await async_wait_until(lambda: state_is(alpha, a, JobState.RUNNING), what="alpha's job runs")
        # Beta has a GPU of its own (index 0 too): alpha's job does not hold it, so beta's job starts.
        b = await beta.submit(spec(waits_for(gate), gpus=1))
        assert (await beta.get_job(b)).state is JobState.RUNNING
        assert [g.job_id for g in (await beta.list_nodes())[0].gpus] == [b]
        assert [g.job_id for g in (await alpha.list_nodes())[0].gpus] == [a]
        seen = {j.id: j for j in await beta.list_jobs()}
        assert seen[a].state is JobState.RUNNING and seen[a].reason == "on host alpha" and seen[a].nodes == ("alpha",)
        assert ("Host", "alpha") in seen[a].details and seen[b].reason == ""
        # A row of alpha's whose process beta cannot see (no such pid here) stays as alpha wrote it.
        alpha.store.update(int(a), pid=2**22 + 1)
        assert (await beta.get_job(a)).state is JobState.RUNNING
        with pytest.raises(
            BackendError, match=f"job {a} runs on host alpha, not on beta: cancel it from a console on alpha"
        ):
            await beta.cancel(a)
        assert alpha.store.get(int(a)).cancel_requested == 0
        gate.touch()
        await async_wait_until(lambda: state_is(beta, b, JobState.COMPLETED), what="beta's job ends")
    finally:
        gate.touch()
        await alpha.close()
        await beta.close()


async def test_old_records_without_a_host_are_this_hosts(state):
    """A store from before hosts were recorded: the column is added, its rows count as ours."""
    state.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(state / "local.db")
    db.executescript("""CREATE TABLE jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, user TEXT NOT NULL,
        kind TEXT NOT NULL, spec TEXT NOT NULL, command TEXT NOT NULL, state TEXT NOT NULL,
        reason TEXT NOT NULL DEFAULT '', gpus INTEGER NOT NULL DEFAULT 0, gpu_indices TEXT NOT NULL DEFAULT '',
        cpus INTEGER, memory_mb INTEGER, submit_time REAL NOT NULL, start_time REAL, end_time REAL,
        exit_code INTEGER, pid INTEGER, pid_start TEXT, cancel_requested INTEGER NOT NULL DEFAULT 0);""")
    db.execute(
        "INSERT INTO jobs (name, user, kind, spec, command, state, submit_time) VALUES "
        "('old', 'me', 'single', '{\"name\": \"old\", \"command\": \"true\"}', 'true', 'pending', ?)",
        (time.time(),),
    )
    db.commit()
    db.close()
    backend = LocalBackend(ClusterConfig("local", "local"), state_dir=state, host="alpha")
    try:
        await async_wait_until(lambda: state_is(backend, "1", JobState.COMPLETED), what="the old job runs here")
        job = await backend.get_job("1")
        assert job.nodes == ("alpha",) and job.reason == "" and backend.store.get(1).host == ""
    finally:
        await backend.close()
