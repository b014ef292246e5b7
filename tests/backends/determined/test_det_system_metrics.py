"""A running trial's system metrics (CPU and GPUs, as Determined's profiler reports them) through the
fake master, whose answers are the SDK's own bindings: the newest report of each group is read, a
trial's and an experiment's (over its running trials) figures equal what was reported, a trial that
reports none names the missing source, and only reads are sent."""

from __future__ import annotations

from dethelpers import cluster

from yanflow_tui.backends.determined import sysmetrics
from yanflow_tui.cli.health import job_healths
from yanflow_tui.config import Config
from yanflow_tui.hub import Hub
from yanflow_tui.liveuse import LiveGpu


async def test_a_trials_system_metrics_are_what_its_profiler_reported(master, backend):
    assert await backend.live_use(["trial-120"]) == {}  # nothing reported yet (profiling off)
    master.add_system_metrics(120, "agent-a", cpu=10.0, gpus={"GPU-aaa": (5, 1000)})
    master.add_system_metrics(120, "agent-a", cpu=37.5, gpus={"GPU-aaa": (80, 2000), "GPU-bbb": (0, 3000)})
    master.add_system_metrics(121, "agent-b", cpu=62.5)
    master.add_system_metrics(122, "agent-b", cpu=99.0)  # a completed trial: not the experiment's now
    found = await backend.live_use(["trial-120", "exp-12", "trial-122"])
    trial = found["trial-120"]
    assert (trial.source, trial.cpu_percent, trial.cpu_of) == (sysmetrics.SOURCE, 37.5, sysmetrics.HOST_CORES)
    assert trial.gpus == (LiveGpu(0, 80.0), LiveGpu(1, 0.0)) and trial.memory_used_kb is None
    exp = found["exp-12"]
    assert exp.cpu_percent == (37.5 + 62.5) / 2 and exp.parts == 2 and exp.gpus == trial.gpus
    assert found["trial-122"].cpu_percent == 99.0  # asked by its own id, a trial is read as it is
    assert master.mutations(include_login=False) == []


async def test_the_health_of_a_trial_names_its_source_or_the_missing_one(master, backend):
    hub = Hub(Config(clusters=(cluster(master, read_only=True),)))
    try:
        (quiet,) = await job_healths(hub, ["det"], "trial-121")
        assert dict(quiet.missing_source)["CPU and memory"] == sysmetrics.WANTS
        master.add_system_metrics(121, "agent-b", cpu=62.5, gpus={"GPU-ccc": (42, 1000)})
        (health,) = await job_healths(hub, ["det"], "trial-121")
        assert dict(health.source)["CPU and memory"] == sysmetrics.SOURCE
        assert health.cpu_busy_percent == 62.5 and health.cpu_busy_of == sysmetrics.HOST_CORES
        assert [g.utilization for g in health.gpus] == [42.0]
        assert ("CPU busy", "62% (100% is every core of its hosts)") in health.lines()
    finally:
        await hub.close()
