"""The command line's verbs and options over the Kubernetes backend and the API emulator: ``jobs``'
filters and formats, ``describe``, the JSON contract's objects (checked against the shipped schemas),
the API server down beside a working cluster, and a closed pipe."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from fakes.k8s_api import make_job, make_pod
from jobhelpers import run_cli
from jsoncontract import run_into_closed_pipe, validated
from k8shelpers import config_file

from yanflow_tui.cli.context import EXIT_PARTIAL, EXIT_PIPE

NS = "ml"
DONE = {
    "succeeded": 1,
    "completionTime": "2026-11-29T12:05:00Z",
    "conditions": [{"type": "Complete", "status": "True"}],
}


@pytest.fixture
def config(home, tmp_path, kubeconfig) -> Path:
    return config_file(tmp_path / "config.yaml", kubeconfig)


@pytest.fixture
def two_jobs(emulator):
    emulator.add_node("gpu-a", 8)
    emulator.put("jobs", make_job("cliverbs-train", NS, gpus=4))
    emulator.put("pods", make_pod("cliverbs-train-1", NS, node="gpu-a", gpus=4, job="cliverbs-train"))
    emulator.put("jobs", make_job("cliverbs-done", NS, status_=DONE))


def names(config: Path, *args: str) -> list[str]:
    result = run_cli("jobs", *args, "-o", "name", "--config", str(config))
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_jobs_filters_formats_and_schema(two_jobs, config):
    doc = validated(run_cli("jobs", "--json", "--config", str(config)).stdout, "jobs")
    assert {j["id"]: j["state"] for j in doc["jobs"]} == {
        "ml/cliverbs-train": "running",
        "ml/cliverbs-done": "completed",
    }
    assert names(config, "--state", "running") == ["k8s/ml/cliverbs-train"]
    assert names(config, "--state", "CD") == ["k8s/ml/cliverbs-done"]
    assert names(config, "--name", "cliverbs-done") == ["k8s/ml/cliverbs-done"]
    assert names(config, "--filter", "gpus:>=4") == ["k8s/ml/cliverbs-train"]
    assert names(config, "--partition", NS, "--sort=-name") == ["k8s/ml/cliverbs-train", "k8s/ml/cliverbs-done"]
    assert names(config, "--partition", "elsewhere") == []
    listed = yaml.safe_load(run_cli("jobs", "-o", "yaml", "--config", str(config)).stdout)
    assert listed["errors"] == [] and len(listed["jobs"]) == 2
    nodes = validated(run_cli("nodes", "--json", "--config", str(config)).stdout, "nodes")
    assert [(n["name"], n["gpus_used"]) for n in nodes["nodes"]] == [("gpu-a", 4)]


def test_describe_text_and_json(two_jobs, config):
    text = run_cli("describe", "ml/cliverbs-train", "--config", str(config))
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[0].split() == ["Job:", "ml/cliverbs-train"]
    doc = validated(run_cli("describe", "ml/cliverbs-train", "--json", "--config", str(config)).stdout, "describe")
    detail = {f["label"]: f["value"] for f in doc["job"]["detail"]}
    assert detail["Namespace"] == NS and doc["job"]["partition"] == NS


def test_the_api_server_down_beside_a_working_cluster(emulator, home, tmp_path, kubeconfig, fake_nvml):
    fake_nvml.gpus(1)
    path = tmp_path / "two.yaml"
    clusters = [{"name": "here", "kind": "local"}, {"name": "k8s", "kind": "kubernetes", "kubeconfig": str(kubeconfig)}]
    path.write_text(yaml.safe_dump({"clusters": clusters}))
    emulator.stop()
    result = run_cli("nodes", "--json", "--config", str(path))
    assert result.returncode == EXIT_PARTIAL, result.stderr
    doc = validated(result.stdout, "nodes")
    assert [n["cluster"] for n in doc["nodes"]] == ["here"]
    assert [e["cluster"] for e in doc["errors"]] == ["k8s"] and "unreachable" in doc["errors"][0]["message"]


def test_a_closed_pipe(two_jobs, config):
    for args in (("jobs",), ("describe", "ml/cliverbs-train")):
        result = run_into_closed_pipe(*args, "--config", str(config))
        assert (result.returncode, result.stderr) == (EXIT_PIPE, "")
