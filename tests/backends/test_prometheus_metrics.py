"""GPU metrics from a REAL Prometheus scraping a fake DCGM exporter, joined by the hub onto the nodes of
the REAL loopback Slurm cluster and of the Kubernetes API emulator: utilisation and memory per GPU,
one query per refresh, and a Prometheus that is down, slow or wrong marks only the metrics."""

from __future__ import annotations

import asyncio
import socket
import time
from dataclasses import replace

import k8shelpers
from fakes.k8s_api import make_job, make_pod
from slurmhelpers import ssh_cluster
from waiting import async_wait_until

from yanflow_tui.capacity import idle_allocated
from yanflow_tui.config import ClusterConfig, Config
from yanflow_tui.errors import BackendError
from yanflow_tui.hub import Health, Hub


def slurm_cluster(url: str, **metrics):
    return replace(ssh_cluster(nodes_refresh_seconds=0.5, metrics={"prometheus": url, **metrics}), refresh_seconds=0.5)


def gpus_of(snapshot, node: str):
    return next(n for n in snapshot.nodes if n.name == node).gpus


async def test_slurm_nodes_carry_the_exporters_utilisation_with_one_query_per_refresh(slurm_dir, prometheus, dcgm):
    # Hostnames as a site's exporter may write them: upper case, fully qualified; one node not in the cluster.
    dcgm.set("GPU01.cluster.example", 0, 87, 40960, 40960)
    dcgm.set("GPU01.cluster.example", 3, 2, 1024, 80896)
    dcgm.set("gpu02", 7, 55, 2048, 79872)
    dcgm.set("elsewhere", 0, 99, 1, 1)
    prometheus.wait_for_values({("GPU01.cluster.example", 0): 87, ("gpu02", 7): 55})
    cluster = slurm_cluster(prometheus.url)
    hub = Hub(Config(clusters=(cluster,)))
    try:
        before = prometheus.query_requests()
        for _ in range(3):
            snap = await hub.refresh(cluster.name)
            assert snap.health is Health.OK, snap.message
        assert prometheus.query_requests() - before == 3  # counted by Prometheus itself
        assert hub.metrics[cluster.name].queries == 3
        gpu01 = gpus_of(snap, "gpu01")
        assert (gpu01[0].utilization, gpu01[0].memory_used_mb, gpu01[0].memory_total_mb) == (87, 40960, 81920)
        assert gpu01[0].uuid == "GPU-GPU01-0000-0000-0000-000000000000"
        assert (gpu01[3].utilization, gpu01[3].memory_used_mb) == (2, 1024)
        assert [g.utilization for g in gpu01] == [87, None, None, 2, None, None, None, None]
        assert gpus_of(snap, "gpu02")[7].utilization == 55
        assert all(g.utilization is None for g in gpus_of(snap, "gpu03"))
        assert "metrics" not in snap.message
        # The exporter changes: the next refresh says so.
        dcgm.set("gpu02", 7, 3, 2048, 79872)
        prometheus.wait_for_values({("gpu02", 7): 3})
        snap = await hub.refresh(cluster.name)
        assert gpus_of(snap, "gpu02")[7].utilization == 3
        # A jobs-only refresh keeps the nodes and asks nothing.
        asked = hub.metrics[cluster.name].queries
        await hub.refresh(cluster.name, nodes=False)
        assert hub.metrics[cluster.name].queries == asked
    finally:
        await hub.close()


async def test_prometheus_down_marks_only_the_metrics(slurm_dir, prometheus, dcgm):
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now
    silent = socket.socket()  # accepts connections (the backlog) and never answers: a hung server
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    down = slurm_cluster(f"http://127.0.0.1:{port}")
    hung = replace(slurm_cluster(f"http://127.0.0.1:{silent.getsockname()[1]}", timeout=0.5), name="hung")
    wrong = replace(slurm_cluster(prometheus.url + "/not-prometheus"), name="wrong")
    good = replace(slurm_cluster(prometheus.url), name="good")
    dcgm.set("gpu01", 1, 42, 10, 10)
    prometheus.wait_for_values({("gpu01", 1): 42})
    hub = Hub(Config(clusters=(down, hung, wrong, good)))
    try:
        notes = {}
        for cluster in (down, hung, wrong, good):
            snap = await hub.refresh(cluster.name)
            assert snap.health is Health.OK and len(snap.nodes) >= 4  # the cluster's own data is still shown
            assert hub.metrics[cluster.name].note in snap.message  # beside the backend's own notice
            notes[cluster.name] = hub.metrics[cluster.name].note
            if cluster is not good:
                assert all(g.utilization is None for n in snap.nodes for g in n.gpus)
        assert notes[down.name] == "metrics: prometheus unreachable"
        assert notes["hung"] == "metrics: prometheus timed out"
        assert notes["wrong"] == "metrics: prometheus answered HTTP 404"
        assert notes["good"] == "" and "metrics" not in hub.snapshots["good"].message
        assert gpus_of(hub.snapshots["good"], "gpu01")[1].utilization == 42
    finally:
        silent.close()
        await hub.close()


async def test_a_hung_prometheus_does_not_hold_up_another_cluster(slurm_dir, prometheus, dcgm):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    hung = replace(slurm_cluster(f"http://127.0.0.1:{silent.getsockname()[1]}", timeout=3), name="hung")
    good = replace(slurm_cluster(prometheus.url), name="good")
    dcgm.set("gpu04", 0, 9, 10, 10)
    prometheus.wait_for_values({("gpu04", 0): 9})
    hub = Hub(Config(clusters=(hung, good)))
    try:
        slow = asyncio.ensure_future(hub.refresh("hung"))
        fast = await hub.refresh("good")
        assert gpus_of(fast, "gpu04")[0].utilization == 9
        assert not slow.done()  # still waiting on its Prometheus
        snap = await slow
        assert snap.health is Health.OK and hub.metrics["hung"].note == "metrics: prometheus timed out"
    finally:
        silent.close()
        await hub.close()


async def test_a_failing_backend_does_not_wait_on_its_metrics(fake_backend):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    metrics = {"prometheus": f"http://127.0.0.1:{silent.getsockname()[1]}", "timeout": 20}
    cluster = ClusterConfig("fk", "fake", options={"metrics": metrics})
    hub = Hub(Config(clusters=(cluster,)))
    try:
        fake_backend.instances[-1].fail_reads = BackendError("controller down")
        started = time.monotonic()
        snap = await hub.refresh("fk")
        assert time.monotonic() - started < 10  # not the metrics' 20 s
        assert snap.health is Health.ERROR and snap.message == "controller down"
    finally:
        silent.close()
        await hub.close()


async def test_kubernetes_nodes_carry_the_exporters_utilisation(emulator, kubeconfig, prometheus, dcgm):
    emulator.add_node("gpu-a", 8)
    emulator.add_node("gpu-b", 4)
    emulator.put("jobs", make_job("train", "ml", gpus=2))
    emulator.put("pods", make_pod("train-0-x7k2p", "ml", node="gpu-a", gpus=2, job="train"))
    # In Kubernetes the exporter's Hostname is its own pod; the node comes from Prometheus's relabelling,
    # and with pod mapping on, each device names the pod using it: here the job's pod holds devices 5 and 6.
    on_a = {"kubernetes_node": "gpu-a"}
    dcgm.set("dcgm-exporter-x7k2p", 5, 1, 512, 80000, pod="train-0-x7k2p", namespace="ml", container="main", **on_a)
    dcgm.set("dcgm-exporter-x7k2p", 6, 3, 600, 80000, pod="train-0-x7k2p", namespace="ml", container="main", **on_a)
    dcgm.set("dcgm-exporter-x7k2p", 2, 0, 0, 80512, **on_a)  # a free device
    dcgm.set("dcgm-exporter-q9z1m", 2, 64, 4096, 76416, kubernetes_node="gpu-b")
    prometheus.wait_for_values({("dcgm-exporter-x7k2p", 6): 3, ("dcgm-exporter-q9z1m", 2): 64})
    cluster = k8shelpers.cluster(kubeconfig, metrics={"prometheus": prometheus.url})
    hub = Hub(Config(clusters=(cluster,)))
    try:
        snap = await async_wait_until(
            lambda: _refreshed_with_job(hub, cluster.name), what="the job's GPUs on gpu-a", timeout=20
        )
        a = gpus_of(snap, "gpu-a")
        held = [g for g in a if g.job_id == "ml/train"]
        assert [(g.utilization, g.memory_used_mb, g.memory_total_mb) for g in held] == [
            (1, 512, 80512),
            (3, 600, 80600),
        ]
        assert [idle_allocated(g) for g in held] == [True, True]
        free = [g for g in a if g.job_id is None]
        assert [g.utilization for g in free] == [
            0,
            None,
            None,
            None,
            None,
            None,
        ]  # device 2, free; device 0 has no series
        assert [g.utilization for g in gpus_of(snap, "gpu-b")] == [None, None, 64, None]
        assert hub.metrics[cluster.name].note == ""
    finally:
        await hub.close()


async def _refreshed_with_job(hub, name):
    snap = await hub.refresh(name)
    assert snap.health is Health.OK, snap.message
    return snap if any(g.job_id for g in gpus_of(snap, "gpu-a")) else None
