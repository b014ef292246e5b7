"""The pure parts of a running job's live figures: two /proc samples into CPU % (a reused pid counts
whole, a vanished one not at all), the Determined profiler's newest report and its host CPU, and
``job_health`` taking a live source's figures (and its GPUs where the nodes read none)."""

from __future__ import annotations

from datetime import datetime, timezone
from types import SimpleNamespace

from yanflow_tui.backends.determined import sysmetrics
from yanflow_tui.backends.local import procuse
from yanflow_tui.jobhealth import MISSING, job_health
from yanflow_tui.liveuse import LiveGpu, LiveUse
from yanflow_tui.model import Gpu, GpuState, Job, JobState, Node


def test_two_proc_samples_give_the_trees_cpu_over_the_interval_and_its_rss_at_the_second():
    tick = procuse.CLK_TCK
    first = procuse.TreeSample(10.0, {1: ("100", 50), 2: ("200", 30), 3: ("300", 7)}, {1: 1000, 2: 2000, 3: 10})
    # pid 2 ran 2 s more, pid 3 ended, pid 4 was born (its ticks all in the window), pid 1 is a new process
    second = procuse.TreeSample(
        12.0, {1: ("101", 5), 2: ("200", 30 + 2 * tick), 4: ("400", tick)}, {1: 500, 2: 2500, 4: 100}
    )
    assert procuse.cpu_ticks_between(first, second) == 5 + 2 * tick + tick
    use = procuse.use_between(first, second, memory_limit_kb=4096.0)
    assert use.cpu_percent == (5 + 3 * tick) / tick / 2.0 * 100
    assert (use.memory_used_kb, use.memory_limit_kb, use.window_seconds, use.parts) == (3100.0, 4096.0, 2.0, 3)


def report(id_: int, end: str, values: dict | None) -> SimpleNamespace:
    return SimpleNamespace(id=id_, endTime=end, metrics={"avg_metrics": values} if values is not None else {})


def test_the_profilers_newest_report_gives_the_hosts_cpu_and_each_gpu():
    reports = [
        report(0, "2026-11-29T12:00:05Z", {"a": {"cpu_util_simple": 90}}),
        report(1, "2026-11-29T12:00:09Z", None),
    ]
    reports.append(report(2, "2026-11-29T12:00:07Z", {"a": {"cpu_util_simple": 20}}))
    assert sysmetrics.latest(reports) == {"a": {"cpu_util_simple": 20}}
    gpu = {"b": {"GPU-2": {"gpu_util": 7}}, "a": {"GPU-9": {"gpu_util": 1}, "GPU-1": {"gpu_util": 99}}}
    use = sysmetrics.use_of({"cpu": [{"a": {"cpu_util_simple": 20}, "b": {"cpu_util_simple": 60}}], "gpu": [gpu]})
    assert use is not None and use.cpu_percent == 40 and use.cpu_of == sysmetrics.HOST_CORES
    assert use.gpus == (LiveGpu(0, 99.0), LiveGpu(1, 1.0), LiveGpu(2, 7.0))  # by agent, then UUID
    assert sysmetrics.use_of({"cpu": [{}], "gpu": [{}]}) is None


def test_job_health_takes_the_live_sources_figures_and_gpus_the_nodes_did_not_read():
    job = Job(
        "7", "k", "train", "alice", JobState.RUNNING, nodes=("n1",), gpus=1, start_time=datetime.now(timezone.utc)
    )
    nodes = [Node("k", "n1", "mixed", gpus=(Gpu(0, GpuState.ALLOCATED, "7"),))]
    live = LiveUse("metrics", cpu_percent=150.0, memory_used_kb=2048.0, window_seconds=30.0, gpus=(LiveGpu(0, 12.0),))
    health = job_health(job, nodes, MISSING + "DCGM", "metrics", live=live)
    assert dict(health.source) == {"GPU use": "metrics", "CPU and memory": "metrics"} and health.missing_source == ()
    assert (health.cpu_busy_percent, health.memory_used_kb, health.gpus[0].utilization) == (150.0, 2048.0, 12.0)
    assert health.cpu_percent is None  # that is seff's (of cores x wall time): not what a live source gives
    bare = job_health(job, nodes, MISSING + "DCGM", MISSING + "the metrics API: metrics-server not installed")
    assert dict(bare.missing_source) == {
        "GPU use": "DCGM",
        "CPU and memory": "the metrics API: metrics-server not installed",
    }
