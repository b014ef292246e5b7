"""The headless CLI (``python -m yanflow_tui`` subprocesses) over the Kubernetes backend and the API
emulator: dry-run manifests, read-only refusals that send nothing, jobs/nodes JSON, submit, logs, cancel."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from fakes.k8s_api import make_job, make_pod
from jobhelpers import run_cli
from k8shelpers import config_file
from paths import SAMPLES

NS = "ml"
TORCHRUN = str(SAMPLES / "k8s-torchrun.yaml")


@pytest.fixture
def config(home, tmp_path, kubeconfig) -> Path:
    return config_file(tmp_path / "config.yaml", kubeconfig)


def test_dry_run_prints_the_job_and_service_manifests_and_sends_nothing(emulator, config):
    emulator.add_node("gpu-a", 8)
    result = run_cli("submit", "--dry-run", TORCHRUN, "--config", str(config))
    assert result.returncode == 0, result.stderr
    job, service = [d for d in yaml.safe_load_all(result.stdout)]
    assert (job["kind"], job["apiVersion"], service["kind"]) == ("Job", "batch/v1", "Service")
    assert job["spec"]["completionMode"] == "Indexed" and job["metadata"]["namespace"] == NS
    assert service["spec"]["clusterIP"] == "None"
    command = job["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[:2] == ["/bin/sh", "-c"] and command[2].startswith("exec torchrun --nnodes=")
    # Only reads: the nodes, for the capacity verdict on stderr.
    assert [r for r in emulator.requests if r[0] != "GET"] == []
    assert result.stderr.startswith("yanflow-tui: "), result.stderr
    assert result.stderr.splitlines()[0].split(": ")[1] in ("fits now", "waits", "never fits"), result.stderr


def test_read_only_cli_refuses_submit_and_cancel_without_any_write(emulator, config):
    emulator.put("jobs", make_job("train", NS))
    for args in (("submit", TORCHRUN), ("cancel", "ml/train")):
        result = run_cli("--read-only", *args, "--config", str(config))
        assert result.returncode == 1
        assert "read-only" in result.stderr and "Traceback" not in result.stderr
    assert emulator.mutations() == []
    assert emulator.get("jobs", NS, "train") is not None


def test_jobs_nodes_submit_logs_and_cancel(emulator, config):
    emulator.add_node("gpu-a", 8)
    emulator.put("jobs", make_job("train", NS))
    emulator.put("pods", make_pod("train-1", NS, node="gpu-a", gpus=4, job="train"))
    emulator.write_log(NS, "train-1", "epoch 1 loss=0.5", "epoch 2 loss=0.25")

    jobs = json.loads(run_cli("jobs", "--json", "--config", str(config)).stdout)["jobs"]
    assert [(j["id"], j["state"], j["nodes"]) for j in jobs] == [("ml/train", "running", ["gpu-a"])]
    nodes = json.loads(run_cli("nodes", "--json", "--config", str(config)).stdout)["nodes"]
    assert [(n["name"], n["gpus_total"], n["gpus_used"]) for n in nodes] == [("gpu-a", 8, 4)]

    logs = run_cli("logs", "ml/train", "--config", str(config))
    assert logs.returncode == 0, logs.stderr
    assert logs.stdout.splitlines() == ["epoch 1 loss=0.5", "epoch 2 loss=0.25"]

    # 2 whole 8-GPU nodes on an emulated cluster of one such node: never fits, so --force
    submitted = run_cli("submit", "--force", TORCHRUN, "--config", str(config))
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    name = job_id.split("/")[1]
    assert emulator.get("jobs", NS, name) and emulator.get("services", NS, name)

    cancelled = run_cli("cancel", job_id, "--config", str(config))
    assert cancelled.returncode == 0, cancelled.stderr
    assert emulator.get("jobs", NS, name) is None and emulator.get("services", NS, name) is None


def test_unreachable_api_server_is_one_clear_line(emulator, config):
    emulator.stop()
    result = run_cli("jobs", "--config", str(config))
    assert result.returncode == 1
    assert "API server unreachable" in result.stderr and "Traceback" not in result.stderr


def test_a_spec_kubernetes_cannot_run_is_refused_with_file_and_field_before_any_request(emulator, config, tmp_path):
    spec = tmp_path / "bad.yaml"
    spec.write_text(
        "name: bad\nkind: single\ncommand: [python, x.py]\nmounts: [{source: relative/dir, target: /data}]\n"
    )
    result = run_cli("submit", str(spec), "--config", str(config))
    assert result.returncode == 1
    assert f"{spec}: mounts[0].source: expected pvc:CLAIM" in result.stderr
    assert emulator.mutations() == []


def test_logs_of_a_sidecar_by_stream_and_a_tail_from_the_config(emulator, home, tmp_path, kubeconfig):
    path = tmp_path / "config.yaml"
    entry = {"name": "k8s", "kind": "kubernetes", "kubeconfig": str(kubeconfig), "log_tail": 1, "log_since": "1h"}
    path.write_text(yaml.safe_dump({"clusters": [entry]}))
    emulator.put("jobs", make_job("side", NS))
    pod = make_pod("side-1", NS, node="gpu-a", job="side", phase="Succeeded")
    pod["spec"]["containers"].append({"name": "proxy", "image": "envoyproxy/envoy:v1.31"})
    emulator.put("pods", pod)
    emulator.write_log(NS, "side-1", "step 1", "step 2")
    emulator.write_log(NS, "side-1", "proxy starting", "proxy ready", container="proxy")

    main = run_cli("logs", "ml/side", "--config", str(path))
    assert (main.returncode, main.stdout) == (0, "step 2\n"), main.stderr
    proxy = run_cli("logs", "ml/side", "--stream", "proxy", "--config", str(path))
    assert (proxy.returncode, proxy.stdout) == (0, "proxy ready\n"), proxy.stderr
    other = run_cli("logs", "ml/side", "--stream", "envoy", "--config", str(path))
    assert other.returncode == 1 and "its logs: main, proxy" in other.stderr, other.stderr
