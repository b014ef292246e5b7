"""A Job not made by the console (created straight through the API, as ``kubectl apply`` would), given back
to create again for ``resume`` (``native_resubmission``) on the API emulator: a new Job under the first free
``<name>-resume-<n>``, whose template is the old one's with ``YANFLOW_RESUME_FROM`` in every container, and
without what the server and the Job controller added; created through the one gate (read-only refuses
before any I/O; a retry with the submit's tag finds the Job, never a second)."""

from __future__ import annotations

import copy

import pytest
from k8shelpers import cluster
from kubernetes import client, config

from yanflow_tui import resume
from yanflow_tui.backends.base import new_submit_tag
from yanflow_tui.backends.kubernetes.backend import KubernetesBackend
from yanflow_tui.errors import ReadOnlyError

NS = "ml"  # the kubeconfig context's namespace
ENV = {resume.RESUME_ENV: "/data/ckpt/epoch_2.pt"}
JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "train", "labels": {"team": "vision"}, "annotations": {"owner": "ana"}},
    "spec": {
        "backoffLimit": 1,
        "template": {
            "metadata": {"labels": {"app": "train"}},
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "trainer",
                        "image": "pytorch/pytorch:2.4.0",
                        "command": ["python", "train.py"],
                        "env": [{"name": "EPOCHS", "value": "3"}, {"name": resume.RESUME_ENV, "value": "old"}],
                    },
                    {"name": "sidecar", "image": "busybox", "command": ["sleep", "1d"]},
                ],
            },
        },
    },
}


def create_by_hand(kubeconfig, body: dict) -> None:
    """Create ``body`` with the official client straight through the API (not the console)."""
    api = config.new_client_from_config(str(kubeconfig))
    try:
        client.BatchV1Api(api).create_namespaced_job(NS, copy.deepcopy(body))
    finally:
        api.close()


async def test_a_job_made_elsewhere_is_created_again_from_its_template_with_the_env_set(emulator, kubeconfig):
    create_by_hand(kubeconfig, JOB)
    uid = emulator.get("jobs", NS, "train")["metadata"]["uid"]
    # what a real API server and Job controller add besides the emulator's job-name labels and selector
    emulator.patch(
        "jobs",
        NS,
        "train",
        {
            "metadata": {"managedFields": [{"manager": "kubectl"}], "labels": {"batch.kubernetes.io/job-name": "x"}},
            "spec": {
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}},
                "template": {
                    "metadata": {
                        "labels": {"app": "train", "controller-uid": uid, "batch.kubernetes.io/controller-uid": uid}
                    },
                    "spec": JOB["spec"]["template"]["spec"],
                },
                "backoffLimit": 1,
            },
            "status": {"failed": 1},
        },
    )
    create_by_hand(kubeconfig, {**JOB, "metadata": {"name": "train-resume-1"}})  # taken: the next number is used
    before = {n for _, n in emulator.store["jobs"]}
    backend = KubernetesBackend(cluster(kubeconfig))
    try:
        spec = await backend.native_resubmission(f"{NS}/train", ENV)
        assert {n for _, n in emulator.store["jobs"]} == before  # reads only
        assert await backend.submit(spec) == f"{NS}/train-resume-2"
        again = await backend.submit(spec, tag=new_submit_tag())  # a retry: the Job is there, not a second
        assert again == f"{NS}/train-resume-2"
    finally:
        await backend.close()

    created = emulator.get("jobs", NS, "train-resume-2")
    want = copy.deepcopy(JOB["spec"]["template"]["spec"])
    resumed = {"name": resume.RESUME_ENV, "value": ENV[resume.RESUME_ENV]}
    want["containers"][0]["env"] = [{"name": "EPOCHS", "value": "3"}, resumed]  # replaced where it was
    want["containers"][1]["env"] = [resumed]
    assert created["spec"]["template"]["spec"] == want
    labels = created["spec"]["template"]["metadata"]["labels"]
    assert uid not in labels.values() and labels == {
        "app": "train",
        "job-name": "train-resume-2",
        "batch.kubernetes.io/job-name": "train-resume-2",
    }  # its own, from the server: the old Job's controller labels left out
    assert created["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/job-name": "train-resume-2"}}
    assert created["spec"]["backoffLimit"] == 1
    assert created["metadata"]["labels"] == {"team": "vision"}
    assert created["metadata"]["annotations"] == {"owner": "ana"}
    assert created["metadata"]["uid"] != uid and "managedFields" not in created["metadata"]
    assert created["status"] == {}
    assert sorted(n for _, n in emulator.store["jobs"]) == ["train", "train-resume-1", "train-resume-2"]


async def test_resume_plans_it_read_only_allows_the_reads_and_the_gate_refuses_the_create(emulator, kubeconfig):
    create_by_hand(kubeconfig, JOB)
    backend = KubernetesBackend(cluster(kubeconfig, read_only=True))
    try:
        spec, why = await resume.given_back(backend, f"{NS}/train", backend, ENV[resume.RESUME_ENV])
        assert why == "" and spec is not None and spec.env == ENV and spec.cluster == "k8s"
        assert spec.native is not None and spec.native.data["metadata"]["name"] == "train-resume-1"
        mutations = len(emulator.mutations())
        with pytest.raises(ReadOnlyError):
            await backend.submit(spec)
        assert len(emulator.mutations()) == mutations and emulator.get("jobs", NS, "train-resume-1") is None
    finally:
        await backend.close()
