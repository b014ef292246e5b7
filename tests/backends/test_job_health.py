"""A running job's live figures (``yanflow_tui.jobhealth``, ``yanflow-tui health``) equal the source's:
per GPU through the NVML test double on the local backend, through a REAL Prometheus scraping a fake
DCGM exporter with its HPC job mapping (``hpc_job``), and CPU and memory from ``sstat`` on the REAL site
Slurm cluster with accounting. Idle GPUs through the same data, with an injected clock."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import datetime, timezone

from jobhelpers import run_cli
from sitehelpers import site_cluster, site_sbatch, site_slurm
from waiting import ManualClock, async_wait_until, wait_until

from yanflow_tui.backends.local.backend import LocalBackend
from yanflow_tui.cli.health import job_healths
from yanflow_tui.config import ClusterConfig, Config
from yanflow_tui.hub import Health, Hub
from yanflow_tui.idlegpus import IdleRule, IdleTracker
from yanflow_tui.jobhealth import PROMETHEUS
from yanflow_tui.model import Job, JobState
from yanflow_tui.spec import spec_from_data


def gpu_figures(health) -> list[tuple]:
    return [(g.node, g.index, g.utilization, g.memory_used_mb, g.memory_total_mb) for g in health.gpus]


async def test_local_jobs_gpu_figures_are_nvmls_and_an_idle_one_is_told_once(home, fake_nvml):
    fake_nvml.set(
        devices=[
            {"util": 0, "mem_used": 1000, "mem_total": 81920},
            {"util": 3, "mem_used": 2000, "mem_total": 81920},
            {"util": 50, "mem_used": 3000, "mem_total": 40960},
            {"util": 50, "mem_used": 4000, "mem_total": 40960},
        ]
    )
    hub = Hub(Config(clusters=(ClusterConfig("local", "local"),)))
    backend = hub.backend("local")
    assert isinstance(backend, LocalBackend)
    spec = {"command": "sleep 60", "resources": {"gpus": 2}}
    idle_job = await backend.submit(spec_from_data({"name": "effic-idle", **spec}))
    busy_job = await backend.submit(spec_from_data({"name": "effic-busy", **spec}))
    try:

        async def both_running():
            snap = await hub.refresh("local")
            held = {g.job_id for n in snap.nodes for g in n.gpus}
            return snap if {idle_job, busy_job} <= held else None

        snap = await async_wait_until(both_running, what="both jobs holding their GPUs")
        host = snap.nodes[0].name
        found = {h.job_id: h for h in await job_healths(hub, ["local"])}
        assert gpu_figures(found[idle_job]) == [(host, 0, 0.0, 1000, 81920), (host, 1, 3.0, 2000, 81920)]
        assert gpu_figures(found[busy_job]) == [(host, 2, 50.0, 3000, 40960), (host, 3, 50.0, 4000, 40960)]
        assert found[idle_job].gpu_utilization == 1.5 and found[idle_job].gpu_memory_used_mb == 3000
        assert dict(found[idle_job].source) == {"GPU use": "NVML", "CPU and memory": "/proc"}
        assert found[idle_job].missing_source == () and found[idle_job].memory_used_kb
        # Idle: both of the first job's GPUs under 5 % for 10 minutes; the job at 50 % never.
        clock = ManualClock()
        tracker = IdleTracker(IdleRule(), clock)
        assert tracker.update("local", snap.nodes) == []
        clock.now += 600
        told = tracker.update("local", (await hub.refresh("local")).nodes)
        assert {(e.job_id, e.index) for e in told} == {(idle_job, 0), (idle_job, 1)}
        assert tracker.idle_jobs() == {f"local/{idle_job}"}
        clock.now += 60
        assert tracker.update("local", (await hub.refresh("local")).nodes) == []  # told once
        # The CLI reads the same figures (a process of its own, through the same state and NVML double).
        cli = run_cli("health", idle_job, "--json")
        assert cli.returncode == 0, cli.stderr
        (printed,) = json.loads(cli.stdout)
        assert [(g["index"], g["utilization_percent"], g["memory_used_mb"]) for g in printed["gpus"]] == [
            (0, 0.0, 1000),
            (1, 3.0, 2000),
        ]
        assert printed["source"] == {"GPU use": "NVML", "CPU and memory": "/proc"}
    finally:
        for job_id in (idle_job, busy_job):
            await backend.cancel(job_id)
        await hub.close()


async def test_the_exporters_job_mapping_gives_a_jobs_gpus_through_a_real_prometheus(fake_backend, prometheus, dcgm):
    # gpu01's devices 5 and 6 are free to the scheduler; the exporter's HPC job mapping says job 777 uses them.
    dcgm.set("gpu01", 5, 0, 1234, 80686, hpc_job="777")
    dcgm.set("gpu01", 6, 61, 20480, 61440, hpc_job="777")
    dcgm.set("gpu01", 0, 88, 5000, 76920)  # job 101's, by the scheduler
    prometheus.wait_for_values({("gpu01", 5): 0, ("gpu01", 6): 61, ("gpu01", 0): 88})
    cluster = ClusterConfig("fk", "fake", options={"metrics": {"prometheus": prometheus.url}})
    hub = Hub(Config(clusters=(cluster,)))
    try:
        fake = fake_backend.instances[-1]
        started = datetime(2026, 12, 1, tzinfo=timezone.utc)
        mapped_job = fake.job("777", "effic-mapped", JobState.RUNNING, gpus=2, nodes=("gpu01",))
        fake.jobs = [replace(j, start_time=started) for j in [*fake.jobs, mapped_job]]
        (mapped,) = await job_healths(hub, ["fk"], "777")
        assert gpu_figures(mapped) == [("gpu01", 5, 0.0, 1234, 81920), ("gpu01", 6, 61.0, 20480, 81920)]
        assert dict(mapped.source) == {"GPU use": PROMETHEUS}
        (scheduled,) = await job_healths(hub, ["fk"], "101")
        assert gpu_figures(scheduled)[0] == ("gpu01", 0, 88.0, 5000, 81920)
        tracker = IdleTracker(IdleRule(seconds=0), ManualClock())
        told = tracker.update("fk", hub.snapshots["fk"].nodes)
        assert [(e.job_id, e.node, e.index) for e in told] == [("777", "gpu01", 5)]  # 61 % is not idle
    finally:
        await hub.close()


async def test_site_running_jobs_cpu_and_memory_come_from_sstat(site_dir, site_jobs):
    job_id = site_sbatch(
        site_jobs, "-p", "batch", "-J", "effic-sstat", "--mem=200M", "-t", "00:02:00", "-o", "/dev/null",
        "--wrap=python3 -c 'import time; t = time.time()\nwhile time.time() - t < 60: pass'",
    )  # fmt: skip

    def sampled() -> str:
        text = site_slurm("sstat", "-a", "-n", "-P", "-o", "JobID,TRESUsageInTot", "-j", job_id, check=False)
        return text if re.search(r"cpu=00:00:0[1-9]", text) else ""

    wait_until(sampled, 40, "sstat has a sample")
    cluster = site_cluster()
    hub = Hub(Config(clusters=(cluster,)))
    try:

        async def read():
            found = await job_healths(hub, [cluster.name], job_id)
            return found[0] if found and found[0].memory_kb else None

        health = await async_wait_until(read, what="the running job's figures", timeout=60)
        assert hub.snapshots[cluster.name].health is Health.OK
        assert dict(health.source)["CPU and memory"] == "sstat"
        assert health.memory_kb == 200 * 1024
        assert health.cpu_percent is not None and health.cpu_percent > 0
        text = site_slurm("sstat", "-a", "-n", "-P", "-o", "JobID,TRESUsageInTot", "-j", job_id, check=False)
        mem = max(_kib(m) for m in re.findall(r"mem=([0-9.]+[KMG]?)", text))
        assert 0 < health.memory_used_kb <= mem * 1.5 + 1024  # sampled again since: the same order, not drift
        assert "GPU use" not in dict(health.missing_source)  # the job holds no GPUs: nothing to say of them
    finally:
        await hub.close()


def _kib(text: str) -> float:
    units = {"K": 1, "M": 1024, "G": 1024**2}
    return float(text[:-1]) * units[text[-1]] if text[-1] in units else float(text) / 1024


def test_a_job_with_no_gpu_reading_says_which_source_would_give_it():
    from yanflow_tui.jobhealth import job_health
    from yanflow_tui.model import Gpu, GpuState, Node

    job = Job("5", "k", "t", "ann", JobState.RUNNING, gpus=2)
    node = Node("k", "n1", "mixed", gpus=(Gpu(0, GpuState.ALLOCATED, "5"), Gpu(1, GpuState.ALLOCATED, "5")))
    health = job_health(job, [node], "(missing) a DCGM exporter", "(missing) the metrics API (metrics.k8s.io)")
    assert health.source == ()
    assert dict(health.missing_source) == {
        "GPU use": "a DCGM exporter",
        "CPU and memory": "the metrics API (metrics.k8s.io)",
    }
    assert ("GPU use not read", "would come from a DCGM exporter") in health.lines()
    assert health.as_json()["gpus"][0] == {
        "node": "n1",
        "index": 0,
        "utilization_percent": None,
        "memory_used_mb": None,
        "memory_total_mb": None,
        "idle_seconds": None,
    }
