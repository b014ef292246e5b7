"""Helpers for tests against the real loopback Slurm cluster (``scripts/slurm-cluster up``): its
paths, direct Slurm commands (the ground truth we compare with), configs for the SSH and local
transports, and cleanup of the jobs a test submits. Tests FAIL (never skip) when it is missing."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from yanflow_tui.config import ClusterConfig, load_config

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_jobs"
DIR = Path(os.environ.get("YANFLOW_SLURM_DIR", "/tmp/yanflow-slurm"))
CONF = DIR / "etc" / "slurm.conf"
JOBS = DIR / "jobs"
MISSING = "the Slurm test cluster is not running: run scripts/slurm-cluster up (it needs root)"


def env() -> dict[str, str]:
    return dict(os.environ, SLURM_CONF=str(CONF))


def require_cluster() -> None:
    if not (DIR / "yanflow.yaml").is_file() or not CONF.is_file():
        pytest.fail(MISSING, pytrace=False)
    status = subprocess.run([str(ROOT / "scripts" / "slurm-cluster"), "status"], capture_output=True, text=True)
    if status.returncode != 0:
        pytest.fail(f"{MISSING}\n{status.stdout}{status.stderr}", pytrace=False)


def slurm(*argv: str, check: bool = True, input: str | None = None) -> str:
    """Run a Slurm command here, directly (not through our transport), from the cluster's jobs folder: a job
    sbatch'ed without ``-o`` writes its ``slurm-%j.out`` there, not into the checkout the tests run from."""
    cwd = JOBS if JOBS.is_dir() else None
    result = subprocess.run(list(argv), capture_output=True, text=True, env=env(), input=input, timeout=60, cwd=cwd)
    if check and result.returncode != 0:
        raise AssertionError(f"{argv[0]} failed: {result.stderr.strip()}")
    return result.stdout


def squeue_json() -> list[dict]:
    return json.loads(slurm("squeue", "-a", "-t", "all", "--json"))["jobs"]


def squeue_job(job_id: str) -> dict | None:
    """The squeue --json record of a job (``123`` or ``123_4``)."""
    base, _, task = job_id.partition("_")
    for job in squeue_json():
        if task and str(job.get("array_job_id")) == base and str(job.get("array_task_id")) == task:
            return job
        if not task and str(job["job_id"]) == base:
            return job
    return None


def live_state(job_id: str) -> str | None:
    job = squeue_job(job_id)
    return None if job is None else job["job_state"]


def sinfo_gpus() -> dict[str, tuple[int, int]]:
    """node -> (GPUs used, GPUs total), read from plain sinfo output with its own small parser."""
    out = slurm("sinfo", "-h", "-N", "-O", "NodeList:0|,Gres:0|,GresUsed:0")
    result = {}
    for line in out.splitlines():
        name, gres, used = line.split("|")
        total = int(m.group(1)) if (m := re.search(r"gpu(?::\w+)?:(\d+)", gres)) else 0
        busy = int(m.group(1)) if (m := re.search(r"gpu(?::\w+)?:(\d+)", used)) else 0
        result[name] = (busy, total)
    return result


def ssh_cluster(**options) -> ClusterConfig:
    """The generated SSH config's cluster, with ``options`` overriding its kind options."""
    cluster = load_config(str(DIR / "yanflow.yaml")).clusters[0]
    return replace(cluster, options={**cluster.options, **options})


def local_cluster(**options) -> ClusterConfig:
    cluster = load_config(str(DIR / "yanflow-local.yaml")).clusters[0]
    return replace(cluster, options={**cluster.options, **options})


def short_spec_text(name: str, lines: int = 8, nodes: int = 2, gpus: int = 4, delay: float = 0.5) -> str:
    """A short variant of sample_jobs/slurm-batch.yaml for tests."""
    return f"""name: {name}
kind: slurm
command: |
  echo "start $SLURM_JOB_ID on $SLURM_JOB_NODELIST"
  for i in $(seq 1 {lines}); do echo "line $i"; sleep {delay}; done
  echo done
resources: {{nodes: {nodes}, gpus: {gpus}, cpus: 1, memory: 1G}}
slurm: {{partition: gpu, gpu_type: a100, time: "00:05:00", output: {JOBS}/%x-%j.out}}
"""


class Jobs:
    """Job ids a test submitted; all cancelled at teardown."""

    def __init__(self):
        self.ids: list[str] = []

    def add(self, job_id: str) -> str:
        self.ids.append(job_id)
        return job_id

    def cancel_all(self) -> None:
        if self.ids:
            slurm("scancel", *self.ids, check=False)


@pytest.fixture(scope="session")
def slurm_dir() -> Path:
    require_cluster()
    return DIR


@pytest.fixture
def slurm_jobs(slurm_dir):
    jobs = Jobs()
    yield jobs
    jobs.cancel_all()


@pytest.fixture(scope="session")
def sftp_cluster(slurm_dir, tmp_path_factory) -> Iterator[ClusterConfig]:
    """The SSH cluster with an SFTP subsystem on its login node: the running sshd where its config has
    one (``scripts/slurm-cluster`` writes it now), else a second sshd of ours on a free port with the
    same config and keys plus ``Subsystem sftp internal-sftp``, stopped at the end."""
    ssh = DIR / "ssh"
    config = (ssh / "sshd_config").read_text()
    if "Subsystem sftp" in config:
        yield ssh_cluster()
        return
    folder = tmp_path_factory.mktemp("sftp-sshd")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    lines = [line for line in config.splitlines() if not line.startswith(("Port ", "PidFile "))]
    lines += [f"Port {port}", f"PidFile {folder / 'sshd.pid'}", "Subsystem sftp internal-sftp"]
    (folder / "sshd_config").write_text("\n".join(lines) + "\n")
    host_key = (ssh / "host_ed25519.pub").read_text().split()[:2]
    (folder / "known_hosts").write_text(f"[127.0.0.1]:{port} {' '.join(host_key)}\n")
    proc = subprocess.Popen(["/usr/sbin/sshd", "-D", "-f", str(folder / "sshd_config"), "-E", str(folder / "log")])
    try:
        deadline = time.monotonic() + 20
        while True:  # waiting for the listener: connect until it answers (no event to wait on)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise AssertionError(f"our sshd on {port} did not start: {(folder / 'log').read_text()}") from None
                time.sleep(0.05)
        cluster = ssh_cluster()
        target = {**cluster.options["ssh"], "port": port, "known_hosts": str(folder / "known_hosts")}
        yield replace(cluster, options={**cluster.options, "ssh": target})
    finally:
        proc.terminate()
        proc.wait(10)


# ``explain`` is a read: the commands an explaining backend may send, each with a word its argv must hold
EXPLAIN_READS = {"scontrol": ("show",), "squeue": (), "sprio": (), "sinfo": (), "id": (), "sacctmgr": ("show", "list")}


def assert_reads_only(history) -> None:
    """Every command in a transport's ``history`` was one of ``EXPLAIN_READS``."""
    for argv in history:
        assert argv[0] in EXPLAIN_READS, argv
        assert not EXPLAIN_READS[argv[0]] or any(word in argv for word in EXPLAIN_READS[argv[0]]), argv


async def assert_backfill_estimate(backend, job_id: str, not_after) -> None:
    """Backfill's estimate of a job waiting for resources comes after its next cycle (``bf_interval``,
    30 s): no later than ``not_after`` (the end of the job it waits for; 5 s of rounding), from squeue --start."""
    from datetime import timedelta

    from waiting import async_wait_until

    async def estimate():
        return (await backend.explain(job_id)).expected_start

    await async_wait_until(estimate, 90, f"backfill's estimate of job {job_id}'s start")
    start = await estimate()
    assert start is not None and start <= not_after + timedelta(seconds=5)
    assert "squeue --start" in (await backend.explain(job_id)).expected_start_why


def assert_held_and_begin(held, later) -> None:
    """The explanations of a job held by its user (L releases it; no start while held) and of one with
    ``--begin=now+2hours`` (that time as its expected start, and in its sentence)."""
    from datetime import datetime, timedelta, timezone

    assert held.action.startswith("press L") and f"yanflow-tui release {held.job_id}" in held.action
    assert held.expected_start is None and held.expected_start_why
    begin = later.expected_start
    ahead = begin - datetime.now(timezone.utc) if begin is not None else None
    assert ahead is not None and timedelta(hours=1, minutes=55) < ahead < timedelta(hours=2, minutes=1)
    assert begin.astimezone().strftime("%H:%M") in later.reason
