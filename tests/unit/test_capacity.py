"""Whole free nodes, and the fits now / waits / never fits verdict, from the Nodes data."""

from __future__ import annotations

import json

import pytest
from paths import DATA as TEST_DATA

from yanflow_tui.backends.slurm.parse import parse_sinfo_json
from yanflow_tui.backends.slurm.parsecache import ParseCaches
from yanflow_tui.capacity import Fit, Request, Verdict, pools, verdict
from yanflow_tui.model import Gpu, GpuState, Node


def node(name, partitions, free, allocated=0, unavailable=0):
    gpus = (
        [Gpu(i, GpuState.ALLOCATED) for i in range(allocated)]
        + [Gpu(i, GpuState.FREE) for i in range(free)]
        + [Gpu(i, GpuState.UNAVAILABLE) for i in range(unavailable)]
    )
    return Node("c", name, "idle", partitions, gpus_total=len(gpus), gpus_allocated=allocated, gpus=tuple(gpus))


DATA = TEST_DATA / "slurm"

NODES = [
    node("gpu01", ("gpu",), 8),
    node("gpu02", ("gpu",), 8),
    node("gpu03", ("gpu",), 4, allocated=4),
    node("gpu04", ("gpu", "debug"), 0, unavailable=8),  # drained
    Node("c", "cpu01", "idle", ("cpu",)),
]


def test_pools_count_whole_free_nodes_and_usable_gpus():
    by_name = {p.name: p for p in pools(NODES)}
    assert (by_name["gpu"].nodes, by_name["gpu"].whole_free, by_name["gpu"].gpus_free, by_name["gpu"].gpus_total) == (
        4,
        2,
        20,
        32,
    )
    assert (by_name["debug"].whole_free, by_name["debug"].gpus_free) == (0, 0)
    assert (by_name["cpu"].nodes, by_name["cpu"].whole_free) == (1, 0)


def test_verdict_on_hand_made_nodes():
    gpu = Request(nodes=2, gpus=8, pool="gpu")
    assert verdict(NODES, gpu) == Verdict(Fit.NOW, "2 nodes in partition gpu can take 8 GPUs now, 2 needed")
    found = verdict(NODES, Request(nodes=3, gpus=8, pool="gpu"))
    assert found.fit is Fit.WAITS and found.reason.startswith("2 nodes in partition gpu can take 8 GPUs now, 3 needed")
    assert verdict(NODES, Request(nodes=3, gpus=4)).fit is Fit.NOW  # gpu03's 4 free GPUs count for a 4-GPU rank
    assert verdict(NODES, Request(gpus=16, pool="gpu")) == Verdict(
        Fit.NEVER, "no node in partition gpu has 16 GPUs (largest: 8)"
    )
    assert verdict(NODES, Request(gpus=1, pool="nope")) == Verdict(
        Fit.NEVER, "there is no partition nope (there are: cpu, debug, gpu)"
    )
    assert verdict(NODES, Request(pool="cpu")).fit is Fit.NOW
    assert verdict(NODES, Request(gpus=1, pool="cpu")) == Verdict(Fit.NEVER, "partition cpu has no GPUs")


RECORDED = parse_sinfo_json(json.loads((DATA / "sinfo.json").read_text()), "c", ParseCaches())  # from the test cluster:
# gpu01 and gpu03 full, gpu02 4 of 8 a100 free, gpu04 whole free; cpu01 idle, cpu02 drained


@pytest.mark.parametrize(
    "request_, fit, reason",
    [
        (Request(gpus=1, gpu_type="h100", pool="gpu"), Fit.NEVER, "partition gpu has no h100 GPUs; it has a100"),
        (
            Request(gpus=1, gpu_type="A100", pool="gpu"),
            Fit.NOW,
            "2 nodes in partition gpu can take 1 GPUs now, 1 needed",
        ),
        (Request(gpus=9, pool="gpu"), Fit.NEVER, "no node in partition gpu has 9 GPUs (largest: 8)"),
        (Request(gpus=9, gpu_type="a100"), Fit.NEVER, "no node in cluster c has 9 a100 GPUs (largest: 8)"),
        (
            Request(nodes=5, gpus=8, pool="gpu", exclusive=True),
            Fit.NEVER,
            "partition gpu has 4 nodes that can take 8 GPUs; the job needs 5 whole",
        ),
        (
            Request(nodes=2, gpus=8, pool="gpu", exclusive=True),
            Fit.WAITS,
            "1 node in partition gpu can take 8 GPUs whole now, 2 needed (4 could once free)",
        ),
        (
            Request(nodes=1, pool="gpu", exclusive=True),
            Fit.NOW,
            "1 node in partition gpu can take the job's share whole now, 1 needed",
        ),
        (Request(nodes=2, gpus=4, pool="gpu"), Fit.NOW, "2 nodes in partition gpu can take 4 GPUs now, 2 needed"),
        (
            Request(nodes=3, gpus=4, pool="gpu"),
            Fit.WAITS,
            "2 nodes in partition gpu can take 4 GPUs now, 3 needed (4 could once free)",
        ),
        (Request(cpus=33, pool="gpu"), Fit.NEVER, "no node in partition gpu has 33 CPUs (largest: 32)"),
        (
            Request(memory_mb=300000, pool="gpu"),
            Fit.NEVER,
            "no node in partition gpu has 300000 MB of memory (largest: 256000 MB)",
        ),
        (
            Request(nodes=2, pool="cpu"),
            Fit.NEVER,  # cpu02 is drained: one node in service
            "only 1 of 2 nodes in partition cpu that could take it are in service (drain); the job needs 2",
        ),
        (
            Request(nodes=1, cpus=16, pool="cpu"),
            Fit.NOW,
            "1 node in partition cpu can take the job's share now, 1 needed",
        ),
    ],
)
def test_verdict_on_recorded_sinfo(request_, fit, reason):
    assert verdict(RECORDED, request_) == Verdict(fit, reason)


def test_node_states_planned_reserved_and_cordoned():
    def one(state):
        return [Node("c", "n", state, ("p",), 8, 0, 1000, 0, "a100", 2, 0, (Gpu(0), Gpu(1)))]

    assert verdict(one("idle"), Request(gpus=2)).fit is Fit.NOW
    assert verdict(one("planned"), Request(gpus=2)).fit is Fit.WAITS  # held for another job, free later
    assert verdict(one("reserved"), Request(gpus=2)).fit is Fit.WAITS
    for out in ("cordoned", "notready", "down", "drain", "disabled"):  # Kubernetes, Slurm, Determined words
        found = verdict(one(out), Request(gpus=2))
        assert found.fit is Fit.NEVER and f"in service ({out})" in found.reason, out


def test_a_machine_without_gpus_never_fits_a_gpu_job():
    machine = [Node("local", "box", "up", ("local",), 8, 0, 16000)]
    assert verdict(machine, Request(gpus=4)) == Verdict(Fit.NEVER, "cluster local has no GPUs")
    assert verdict(machine, Request()).fit is Fit.NOW


def test_spread_slots_count_over_agents():
    agents = [
        Node(
            "d",
            f"a{i}",
            "up",
            ("default",),
            gpu_type="t4",
            gpus_total=4,
            gpus_allocated=i,
            gpus=tuple(Gpu(j, GpuState.ALLOCATED if j < i else GpuState.FREE) for j in range(4)),
        )
        for i in range(2)
    ]
    req = dict(pool="default", pool_label="resource pool", spread=True)
    assert verdict(agents, Request(gpus=7, **req)).fit is Fit.NOW
    assert verdict(agents, Request(gpus=8, **req)).fit is Fit.WAITS
    assert verdict(agents, Request(gpus=9, **req)) == Verdict(
        Fit.NEVER, "resource pool default has 8 GPUs in all; the job asks for 9"
    )


def test_group_summaries_count_each_node_once_and_idle_allocated_gpus():
    from yanflow_tui.capacity import GroupSummary, idle_allocated, summarize

    idle = Gpu(0, GpuState.ALLOCATED, "7", utilization=2.0)
    assert idle_allocated(idle) and not idle_allocated(Gpu(0, GpuState.ALLOCATED, "7", utilization=50.0))
    assert not idle_allocated(Gpu(0, GpuState.ALLOCATED, "7"))  # unknown utilisation is not idle
    assert not idle_allocated(Gpu(0, GpuState.FREE, utilization=0.0))
    counts_only = Node("c", "old", "mixed", gpus_total=4, gpus_allocated=3)  # no per-GPU data
    busy = Node("c", "n", "mixed", gpus_total=2, gpus_allocated=2, gpus=(idle, Gpu(1, GpuState.ALLOCATED, "7")))
    assert summarize(NODES + [counts_only, busy]) == GroupSummary(
        nodes=7, gpus_used=9, gpus_total=38, whole_free=2, idle=1
    )
    assert summarize([busy]) + summarize([counts_only]) == summarize([busy, counts_only])


def test_backends_read_the_request_from_their_own_spec_fields():
    from yanflow_tui.backends.determined.backend import DeterminedBackend
    from yanflow_tui.backends.slurm.backend import SlurmBackend
    from yanflow_tui.config import ClusterConfig
    from yanflow_tui.spec import spec_from_data

    slurm = SlurmBackend(ClusterConfig("s", "slurm", options={"partition": "gpu"}))
    spec = spec_from_data(
        {
            "name": "x",
            "kind": "multi-node",
            "command": "true",
            "resources": {"nodes": 2, "gpus": 4, "cpus": 8, "memory": "10G"},
            "slurm": {"gpu_type": "h100", "exclusive": True},
        }
    )
    assert slurm.capacity_request(spec) == Request(
        nodes=2, gpus=4, gpu_type="h100", cpus=8, memory_mb=10240, pool="gpu", exclusive=True
    )  # the cluster's default partition
    other = spec_from_data({"name": "x", "command": "true", "slurm": {"partition": "cpu"}})
    assert slurm.capacity_request(other).pool == "cpu"
    det = DeterminedBackend(ClusterConfig("d", "determined", options={"master": "http://127.0.0.1:9"}))
    trial = spec_from_data(
        {
            "name": "x",
            "kind": "multi-node",
            "command": "true",
            "resources": {"nodes": 2, "gpus": 4},
            "determined": {"resource_pool": "a100s"},
        }
    )
    assert det.capacity_request(trial) == Request(gpus=8, pool="a100s", pool_label="resource pool", spread=True)
