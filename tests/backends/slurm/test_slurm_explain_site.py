"""Issue 30's Slurm acceptance in one test, against the REAL site cluster (the one with accounting:
slurmdbd on MariaDB, ``AccountingStorageEnforce=limits,qos``): a job pending on resources, one on a
dependency, one held by its user, one with a later begin time and one over a QoS GPU limit get five
different, correct explanations, each naming its values, with the expected start where Slurm has one;
a job asking alone for more GPUs than the QoS allows is told it never starts under it. The QoS
(``explaingpu1``, ``MaxTRESPerUser=gres/gpu=1``) is made idempotently and given to root's association
for the test, then taken back and deleted; every job is named ``explain5-`` and cancelled. The
backend is read-only: every command it sent is a read."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timezone

import pytest
from sitehelpers import SITE_JOBS, site_cluster, site_slurm
from slurmhelpers import assert_backfill_estimate, assert_held_and_begin, assert_reads_only
from waiting import wait_until

from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.explain import Category

QOS = "explaingpu1"
# the jobs that must stay running through the test: far past its waits (a slow scheduler's minutes);
# cancelled at its end
LONG = "00:30:00"


def site_job(job_id: str) -> dict:
    """slurmctld's record of the job: 22.05's ``squeue --json`` answers with every job it holds whatever -j
    says (the first was once a job cancelled a moment before), so the one with this id."""
    jobs = json.loads(site_slurm("squeue", "--json", "-j", job_id))["jobs"]
    return next((job for job in jobs if str(job.get("job_id")) == job_id), {})


def state_reason(job_id: str) -> tuple[str, str]:
    out = site_slurm("squeue", "-h", "-j", job_id, "-o", "%T|%r", check=False).strip()
    state, _, reason = out.partition("|")
    return state, reason


@pytest.fixture
def gpu1_qos(site_dir):
    """QoS ``explaingpu1`` (one GPU per user) in root's association for the test (made again as it
    should be whatever a killed run left), then taken back and deleted."""
    site_slurm("sacctmgr", "-i", "add", "qos", QOS, check=False)  # there already: "Nothing new added"
    site_slurm("sacctmgr", "-i", "modify", "qos", QOS, "set", "MaxTRESPerUser=gres/gpu=1")
    site_slurm("sacctmgr", "-i", "modify", "user", "root", "set", f"qos+={QOS}", check=False)
    shown = site_slurm("sacctmgr", "-n", "-P", "show", "qos", QOS, "format=name,maxtrespu")
    assert shown.strip() == f"{QOS}|gres/gpu=1", shown
    yield QOS
    site_slurm("sacctmgr", "-i", "modify", "user", "root", "set", f"qos-={QOS}", check=False)
    site_slurm("sacctmgr", "-i", "delete", "qos", QOS, check=False)


@pytest.fixture
async def backend(site_dir):
    b = SlurmBackend(replace(site_cluster(), read_only=True))  # explain is a read: read-only allows it
    yield b
    await b.close()


async def test_five_pending_jobs_get_five_explanations_with_their_values(backend, site_jobs, gpu1_qos):
    def sbatch(name: str, *options: str, seconds: int = 300) -> str:
        out = site_slurm(
            "sbatch", "--parsable", f"--chdir={SITE_JOBS}", "-J", f"explain5-{name}", "--mem=100M", "-o", "/dev/null",
            *options, f"--wrap=sleep {seconds}",
        )  # fmt: skip
        site_jobs.append(out.strip().split(";")[0])
        return site_jobs[-1]

    def under_qos(name: str, gpus: int) -> str | None:
        """sbatch under the QoS, once slurmctld has heard from slurmdbd that root may use it."""
        try:
            return sbatch(name, "-p", "batch", f"--qos={gpu1_qos}", f"--gres=gpu:{gpus}", "-t", LONG, seconds=1800)
        except AssertionError as exc:
            assert "Invalid qos" in str(exc), exc
            return None

    blocker = sbatch("blocker", "-p", "serial", "-w", "hx-c1", "--exclusive", "-t", LONG, seconds=1800)
    qos_running = wait_until(lambda: under_qos("qos-running", 1), 30, f"root allowed QoS {gpu1_qos}")
    wait_until(lambda: state_reason(blocker)[0] == "RUNNING", 60, "the blocker to run on hx-c1")
    wait_until(lambda: state_reason(qos_running)[0] == "RUNNING", 60, "the QoS's first job (1 GPU) to run")
    waiting = sbatch("resources", "-p", "serial", "-w", "hx-c1", "--exclusive", "-t", "00:02:00")
    after = sbatch("dependency", "-p", "serial", f"--dependency=afterok:{blocker}", "-t", "00:02:00")
    held = sbatch("held", "-p", "serial", "--hold", "-t", "00:02:00")
    later = sbatch("begin", "-p", "serial", "--begin=now+2hours", "-t", "00:02:00")
    over_qos = under_qos("qos-limit", 1)
    too_big = under_qos("qos-alone", 2)
    assert over_qos and too_big
    wait_until(lambda: state_reason(waiting)[1] == "Resources", 60, "the second job to wait for hx-c1")
    for job in (over_qos, too_big):
        wait_until(lambda j=job: state_reason(j)[1] == "QOSMaxGRESPerUser", 60, f"job {job} held back by the QoS")

    jobs = (waiting, after, held, later, over_qos)
    found = {job_id: await backend.explain(job_id) for job_id in (*jobs, too_big)}
    assert [found[j].category for j in jobs] == [
        Category.RESOURCES, Category.DEPENDENCY, Category.HELD, Category.BEGIN_TIME, Category.LIMITS,
    ]  # fmt: skip
    assert len({found[j].reason for j in jobs}) == 5 and all(found[j].state == "PENDING" for j in jobs)

    # resources: the node it waits for, its partition
    assert "hx-c1" in found[waiting].reason and "partition serial" in found[waiting].reason
    # dependency: the job, its state and the kind; it cannot start before that job's time limit ends
    assert f"job {blocker}" in found[after].reason and "RUNNING" in found[after].reason
    assert "afterok" in found[after].reason
    blocker_end = datetime.fromtimestamp(int(site_job(blocker)["end_time"]), timezone.utc)
    assert found[after].expected_start == blocker_end
    # held: L releases it, no start while held; begin time: that time, about two hours ahead
    assert_held_and_begin(found[held], found[later])
    # QoS: its name, the limit, the use (the running job's GPU) and the ask, from scontrol show assoc_mgr
    qos = found[over_qos]
    assert qos.code == "QOSMaxGRESPerUser" and qos.short == "QOS GPU limit"
    assert f"QOS {gpu1_qos}'s maximum GPU (GRES) per user limit is reached" in qos.reason
    assert "MaxTRESPU gres/gpu is 1, 1 in use, this job asks for 1" in qos.reason, qos.reason
    assert qos.expected_start is None and "limit has room" in qos.expected_start_why  # Slurm gives none
    # alone over the limit: it never starts under this QoS, and what to change
    alone = found[too_big]
    assert alone.category is Category.LIMITS and alone.code == "QOSMaxGRESPerUser"
    assert "MaxTRESPU gres/gpu is 1, 1 in use, this job asks for 2, so it never starts" in alone.reason
    assert alone.expected_start is None and alone.expected_start_why.startswith("never")
    assert "another QOS" in alone.action and f"yanflow-tui edit {too_big}" in alone.action

    # resources: backfill's estimate, after its next cycle; and every command sent was a read
    await assert_backfill_estimate(backend, waiting, blocker_end)
    assert_reads_only(backend.transport.history)
