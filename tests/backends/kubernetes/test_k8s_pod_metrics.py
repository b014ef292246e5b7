"""A running Kubernetes job's CPU and memory through the metrics API (``metrics.k8s.io/v1beta1``
PodMetrics), read by the official client from the API emulator over real HTTP: summed over the job's
pods and containers (another job's pods not counted), equal to what the emulated metrics-server says,
in process and through ``explain --json``; without metrics-server the figures say which source is
missing. Read-only: no mutating request."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from fakes.k8s_api import make_job
from jobhelpers import run_cli
from jsoncontract import validated
from k8shelpers import cluster, config_file

from yanflow_tui import liveuse
from yanflow_tui.backends.kubernetes import podmetrics
from yanflow_tui.backends.kubernetes.backend import KubernetesBackend
from yanflow_tui.cli.health import job_healths
from yanflow_tui.config import Config
from yanflow_tui.errors import NotOffered
from yanflow_tui.hub import Hub

STARTED = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def running_job(emulator, name: str, nodes: list[str], memory: str = "") -> list[str]:
    job = make_job(
        name, "ml", parallelism=len(nodes), indexed=True, status_={"active": len(nodes), "startTime": STARTED}
    )
    if memory:
        job["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] = {"memory": memory}
    job["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "busybox"})
    emulator.put("jobs", job)
    pods = emulator.run_job_pods("ml", name, nodes)
    return [p["metadata"]["name"] for p in pods]


def test_quantities_and_windows_as_metrics_server_writes_them():
    assert podmetrics.duration_seconds("30s") == 30 and podmetrics.duration_seconds("1m0.5s") == 60.5
    assert podmetrics.duration_seconds("500ms") == 0.5 and podmetrics.duration_seconds("soon") is None


async def test_a_jobs_pods_cpu_and_memory_come_from_the_metrics_api(home, emulator, kubeconfig, tmp_path):
    emulator.add_node("g1", gpus=8)
    emulator.add_node("g2", gpus=8)
    first, second = running_job(emulator, "train", ["g1", "g2"], memory="4Gi")
    (other,) = running_job(emulator, "other", ["g1"])
    config = cluster(kubeconfig, read_only=True)
    hub = Hub(Config(clusters=(config,)))
    backend = hub.backend("k8s")
    assert isinstance(backend, KubernetesBackend)
    try:
        # No metrics-server: the metrics group answers 404, and the figures name the missing source.
        with pytest.raises(NotOffered, match="metrics-server not installed"):
            await backend.live_use(["ml/train"])
        (health,) = await job_healths(hub, ["k8s"], "ml/train")
        assert dict(health.missing_source)["CPU and memory"] == podmetrics.NOT_INSTALLED
        assert health.cpu_busy_percent is None and health.memory_used_kb is None

        emulator.metrics_server = True
        usage = {"main": {"cpu": "1500000000n", "memory": "2Gi"}, "sidecar": {"cpu": "2m", "memory": "10240Ki"}}
        emulator.set_pod_metrics("ml", first, usage, window="15s")
        emulator.set_pod_metrics("ml", second, {"main": {"cpu": "250m", "memory": "512Mi"}}, window="30s")
        emulator.set_pod_metrics("ml", other, {"main": {"cpu": "4", "memory": "1Gi"}})
        use = (await backend.live_use(["ml/train"]))["ml/train"]
        assert use.source == podmetrics.SOURCE and use.parts == 3
        assert use.cpu_percent == pytest.approx((1.5 + 0.002 + 0.25) * 100, rel=1e-12)
        assert use.memory_used_kb == 2 * 2**20 + 10240 + 512 * 1024
        assert use.memory_limit_kb == 2 * 4 * 2**20 and use.window_seconds == 30

        (health,) = await job_healths(hub, ["k8s"], "ml/train")
        assert dict(health.source)["CPU and memory"] == podmetrics.SOURCE
        assert "CPU and memory" not in dict(health.missing_source)
        assert health.cpu_busy_percent == pytest.approx(175.2) and health.memory_used_kb == use.memory_used_kb
        assert ("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/ml/pods") in emulator.requests
        # The CLI (a process of its own): explain --json carries the same figures, in the shipped schema.
        answer = run_cli("explain", "ml/train", "--json", "--config", str(config_file(tmp_path / "c.yaml", kubeconfig)))
        assert answer.returncode == 0, answer.stderr
        printed = validated(answer.stdout, "explain")["explain"]["health"]
        assert printed["source"]["CPU and memory"] == podmetrics.SOURCE
        assert printed["cpu_busy_percent"] == 175.2 and printed["memory_used_kb"] == use.memory_used_kb
        assert emulator.mutations() == []
        # The API server gone: no figures, and a note of what was not read (never an exception).
        emulator.stop()
        found, source = await liveuse.read(backend, ["ml/train"], 20)
        assert found == {} and source.startswith("(missing) " + podmetrics.SOURCE + " (not read now: metrics API:")
    finally:
        await hub.close()
