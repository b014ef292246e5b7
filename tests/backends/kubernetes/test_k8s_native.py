"""Kubernetes manifests submitted as they are written, on the API emulator: created as written in the
context's namespace (or the file's), a second submit of the same name reported and nothing replaced,
a Kubeflow kind refused clearly where its CRD is missing; ``kubernetes.pod_patch`` merged in."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from jobhelpers import run_cli
from k8shelpers import cluster, config_file

from yanflow_tui.backends.kubernetes.backend import KubernetesBackend
from yanflow_tui.backends.kubernetes.manifests import manifests
from yanflow_tui.errors import BackendError
from yanflow_tui.nativefiles import load_job_file
from yanflow_tui.spec import parse_spec

NS = "ml"  # the kubeconfig context's namespace
JOB = """apiVersion: batch/v1
kind: Job
metadata:
  name: resnet-native
  labels: {team: vision}
spec:
  backoffLimit: 2
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: train
          image: pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime
          command: ["python", "-c", "print('hi')"]
          resources:
            limits: {nvidia.com/gpu: 2, cpu: "4", memory: 8Gi}
"""


@pytest.fixture
def config(home, tmp_path, kubeconfig) -> Path:
    return config_file(tmp_path / "config.yaml", kubeconfig)


def test_a_job_manifest_is_created_as_written_and_a_second_submit_reports_the_name(emulator, config, tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(JOB)
    first = run_cli("submit", str(path), "--config", str(config))
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == f"{NS}/resnet-native"
    created = emulator.get("jobs", NS, "resnet-native")
    written = yaml.safe_load(JOB)
    # as written (the server adds, as the real one does, the selector and the pods' job-name labels),
    # the quantity written as a number (nvidia.com/gpu: 2) sent as text, which the API server reads the same
    # and client 37 requires
    written["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "2"
    assert created["spec"]["template"]["spec"] == written["spec"]["template"]["spec"]
    assert {k: v for k, v in created["spec"].items() if k not in ("selector", "template")} == {"backoffLimit": 2}
    assert created["metadata"]["labels"] == written["metadata"]["labels"]
    assert not (created["metadata"].get("annotations") or {})  # nothing of ours added
    posts = [r for r in emulator.mutations() if r[0] == "POST"]
    assert len(posts) == 1

    second = run_cli("submit", str(path), "--config", str(config))
    assert second.returncode == 1
    assert "a Job named 'resnet-native' already exists in namespace 'ml'; not replaced" in second.stderr
    assert [r for r in emulator.mutations() if r[0] == "POST"] == posts  # no second create, no replace
    assert [r for r in emulator.mutations() if r[0] in ("PUT", "PATCH", "DELETE")] == []
    assert len([k for k in emulator.store["jobs"] if k[1] == "resnet-native"]) == 1


def test_the_dry_run_shows_the_file_and_where_it_goes(emulator, config, tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(JOB.replace("  name: resnet-native\n", "  name: resnet-native\n  namespace: vision\n"))
    result = run_cli("submit", "--dry-run", str(path), "--config", str(config))
    assert result.returncode == 0, result.stderr
    head, rest = result.stdout.split("\n", 1)
    assert head == f"# Job vision/resnet-native, created as written in {path}"
    assert rest.split("\n", 1)[1] == path.read_text()
    assert emulator.mutations() == []


async def test_a_pod_goes_to_the_namespace_of_the_file_and_a_pytorchjob_needs_its_crd(emulator, kubeconfig, tmp_path):
    backend = KubernetesBackend(cluster(kubeconfig))
    try:
        pod = tmp_path / "pod.yaml"
        pod.write_text(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: probe, namespace: other}\n"
            "spec: {containers: [{name: c, image: busybox, command: [sleep, '1']}]}\n"
        )
        assert await backend.submit(load_job_file(pod)) == "other/probe"
        assert emulator.get("pods", "other", "probe")["spec"]["containers"][0]["command"] == ["sleep", "1"]

        torch = tmp_path / "pytorchjob.yaml"
        torch.write_text(
            "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: ddp}\nspec:\n  pytorchReplicaSpecs:\n"
            "    Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: x}]}}}\n"
        )
        with pytest.raises(BackendError, match=r"has no PyTorchJob resource \(CRD pytorchjobs\.kubeflow\.org\)"):
            await backend.submit(load_job_file(torch))
        assert [r for r in emulator.mutations() if "pytorchjobs" in r[1]] == []
    finally:
        await backend.close()


def test_pod_patch_is_a_strategic_merge_into_the_pod_template():
    spec = parse_spec(
        "name: p\ncommand: 'true'\nresources: {gpus: 1}\nenv: {A: '1'}\nkubernetes:\n  pod_patch:\n"
        "    metadata: {labels: {team: vision}}\n    spec:\n      hostIPC: true\n"
        "      containers: [{name: main, env: [{name: B, value: '2'}], securityContext: {privileged: false}}]\n",
        "p.yaml",
    )
    job = manifests(spec, "abcdef12", NS)[0]
    template = job["spec"]["template"]
    assert template["metadata"]["labels"]["team"] == "vision"
    assert template["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "yanflow-tui"  # merged, not replaced
    pod = template["spec"]
    assert pod["hostIPC"] is True and len(pod["containers"]) == 1
    main = pod["containers"][0]
    assert main["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    assert main["securityContext"] == {"privileged": False} and main["image"]


def test_a_pod_patch_of_something_else_is_refused_by_name():
    spec = parse_spec("name: p\ncommand: 'true'\nkubernetes: {pod_patch: {containers: []}}\n", "p.yaml")
    with pytest.raises(BackendError, match="pod_patch: a patch of the pod template takes metadata: and spec:"):
        manifests(spec, "abcdef12", NS)
