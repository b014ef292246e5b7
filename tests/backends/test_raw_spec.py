"""The job detail's raw spec, "as the cluster holds it", from each real backend: Slurm's
``scontrol show job -dd`` over SSH, the Kubernetes Job object from the API emulator, and a
Determined experiment's config from the fake master."""

from __future__ import annotations

import pytest
import yaml
from fakes.k8s_api import make_job
from k8shelpers import cluster as k8s_cluster
from slurmhelpers import ssh_cluster

from yanflow_tui.backends.kubernetes.backend import KubernetesBackend
from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.errors import BackendError
from yanflow_tui.spec import parse_spec


async def test_slurm_raw_spec_is_scontrol_show_job_with_the_gres_indices(slurm_dir, slurm_jobs):
    backend = SlurmBackend(ssh_cluster())
    try:
        text = (
            "name: yf-raw\nkind: slurm\ncommand: sleep 60\nresources: {nodes: 1, gpus: 2}\n"
            "slurm: {partition: gpu, time: '00:02:00'}\n"
        )
        job_id = slurm_jobs.add(await backend.submit(parse_spec(text, "raw.yaml")))
        raw = await backend.raw_spec(job_id)
        assert f"JobId={job_id}" in raw and "JobName=yf-raw" in raw and "Partition=gpu" in raw
        with pytest.raises(BackendError):
            await backend.raw_spec("-1; touch /tmp/yf-pwned")  # an argv word, never a shell string
    finally:
        await backend.close()


async def test_kubernetes_raw_spec_is_the_job_object_without_managed_fields(emulator, kubeconfig):
    job = make_job("train", "ml", gpus=4)
    job["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    emulator.put("jobs", job)
    backend = KubernetesBackend(k8s_cluster(kubeconfig))
    try:
        data = yaml.safe_load(await backend.raw_spec("ml/train"))
        assert data["kind"] == "Job" and data["metadata"]["name"] == "train"
        assert "managedFields" not in data["metadata"]
        with pytest.raises(BackendError):
            await backend.raw_spec("ml/absent")
    finally:
        await backend.close()


@pytest.fixture
def det_backend(backend):
    """The Determined backend of ``dethelpers`` (its fixture is named ``backend``) against the fake master."""
    return backend


async def test_determined_raw_spec_is_the_experiment_config_or_trial_hparams(det_backend):
    config = yaml.safe_load(await det_backend.raw_spec("exp-12"))
    assert config["name"] == "resnet-search" and config["searcher"]["metric"] == "validation_loss"
    trial = yaml.safe_load(await det_backend.raw_spec("trial-121"))
    assert trial == {"experiment": 12, "trial": 121, "hyperparameters": {"lr": 0.02, "layers": 3}}
    with pytest.raises(BackendError):
        await det_backend.raw_spec("cmd-5e1f3a9c")
