"""Whole free nodes and "fits now?" from the Nodes data."""

from __future__ import annotations

from yanflow_tui.capacity import fit, pools
from yanflow_tui.model import Gpu, GpuState, Node


def node(name, partitions, free, allocated=0, unavailable=0):
    gpus = ([Gpu(i, GpuState.ALLOCATED) for i in range(allocated)]
            + [Gpu(i, GpuState.FREE) for i in range(free)]
            + [Gpu(i, GpuState.UNAVAILABLE) for i in range(unavailable)])
    return Node("c", name, "idle", partitions, gpus_total=len(gpus), gpus_allocated=allocated, gpus=tuple(gpus))


NODES = [
    node("gpu01", ("gpu",), 8),
    node("gpu02", ("gpu",), 8),
    node("gpu03", ("gpu",), 4, allocated=4),
    node("gpu04", ("gpu", "debug"), 0, unavailable=8),  # drained
    Node("c", "cpu01", "idle", ("cpu",)),
]


def test_pools_count_whole_free_nodes_and_usable_gpus():
    by_name = {p.name: p for p in pools(NODES)}
    assert (by_name["gpu"].nodes, by_name["gpu"].whole_free, by_name["gpu"].gpus_free, by_name["gpu"].gpus_total) == (4, 2, 20, 32)
    assert (by_name["debug"].whole_free, by_name["debug"].gpus_free) == (0, 0)
    assert (by_name["cpu"].nodes, by_name["cpu"].whole_free) == (1, 0)


def test_fit_says_whether_and_why():
    assert fit(NODES, 2, 8, "gpu") == (True, "fits now: 2 node(s) in partition gpu have 8+ free GPUs, 2 needed")
    ok, why = fit(NODES, 3, 8, "gpu")
    assert not ok and why.startswith("waits: 2 node(s)")
    ok, why = fit(NODES, 3, 4)  # gpu03's 4 free GPUs count for a 4-GPU rank
    assert ok and "3 node(s) in the cluster" in why
    assert fit(NODES, 1, 16, "gpu") == (False, "never fits: no node in partition gpu has 16 GPUs (largest: 8)")
    assert fit(NODES, 1, 1, "nope") == (False, "no nodes known in partition nope")
    assert fit(NODES, 1, 0, "cpu")[0]


def test_group_summaries_count_each_node_once_and_idle_allocated_gpus():
    from yanflow_tui.capacity import GroupSummary, idle_allocated, summarize

    idle = Gpu(0, GpuState.ALLOCATED, "7", utilization=2.0)
    assert idle_allocated(idle) and not idle_allocated(Gpu(0, GpuState.ALLOCATED, "7", utilization=50.0))
    assert not idle_allocated(Gpu(0, GpuState.ALLOCATED, "7"))  # unknown utilisation is not idle
    assert not idle_allocated(Gpu(0, GpuState.FREE, utilization=0.0))
    counts_only = Node("c", "old", "mixed", gpus_total=4, gpus_allocated=3)  # no per-GPU data
    busy = Node("c", "n", "mixed", gpus_total=2, gpus_allocated=2, gpus=(idle, Gpu(1, GpuState.ALLOCATED, "7")))
    assert summarize(NODES + [counts_only, busy]) == GroupSummary(nodes=7, gpus_used=9, gpus_total=38, whole_free=2,
                                                                  idle=1)
    assert summarize([busy]) + summarize([counts_only]) == summarize([busy, counts_only])
