"""``explain`` of a Job that Kueue holds suspended, against the API emulator serving Kueue's CRDs
(``Workload``, ``LocalQueue``; ``kueue.x-k8s.io/v1beta1``) over real HTTP, read through the official
client's ``CustomObjectsApi``: it is "waiting for Kueue admission in ClusterQueue X" with Kueue's own
message; an inadmissible one (no such LocalQueue) says what to change; once admitted, or on a cluster
without Kueue (404), the pods and events say the rest as before; and only GETs reach the API server."""

from __future__ import annotations

import pytest
from fakes.k8s_api import make_job, make_local_queue, make_workload
from k8shelpers import cluster
from waiting import async_wait_until

from yanflow_tui.backends.kubernetes.backend import KubernetesBackend
from yanflow_tui.explain import Category

NO_QUOTA = (
    "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor "
    "default-flavor, 2 more needed"
)
SUSPENDED = {"conditions": [{"type": "Suspended", "status": "True", "reason": "JobSuspended", "message": "suspended"}]}


@pytest.fixture
async def backend(kubeconfig):
    b = KubernetesBackend(cluster(kubeconfig, read_only=True))  # explain is a read
    await b.set_scope("namespace", "*")
    yield b
    await b.close()


def suspended_job(emulator, name: str, namespace: str = "ml", gpus: int = 4) -> dict:
    job = make_job(name, namespace, gpus=gpus, status_=dict(SUSPENDED))
    job["spec"]["suspend"] = True
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team-a"}
    return emulator.put("jobs", job)


def pending(reason: str = "Pending", message: str = NO_QUOTA) -> list[dict]:
    return [{"type": "QuotaReserved", "status": "False", "reason": reason, "message": message}]


async def listed(backend, *ids: str) -> None:
    async def known():
        return set(ids) <= {job.id for job in await backend.list_jobs()}

    await async_wait_until(known, 10, f"{', '.join(ids)} listed")


async def test_a_job_kueue_holds_waits_for_admission_in_its_cluster_queue(emulator, backend):
    emulator.kueue = True
    emulator.add_node("g1", gpus=8)
    emulator.put("localqueues", make_local_queue("team-a", "ml", "gpu-cluster-queue"))
    held = suspended_job(emulator, "train")
    emulator.put("workloads", make_workload(held, "team-a", pending()))
    lost = suspended_job(emulator, "lost")
    gone = "LocalQueue nowhere doesn't exist"
    emulator.put("workloads", make_workload(lost, "nowhere", pending("Inadmissible", gone)))
    await listed(backend, "ml/train", "ml/lost")
    before = len(emulator.requests)

    found = await backend.explain("ml/train")
    assert found.state == "PENDING" and found.category is Category.LIMITS and found.code == "Pending"
    assert found.reason.startswith("It is suspended, waiting for Kueue admission in ClusterQueue gpu-cluster-queue")
    assert "(LocalQueue team-a, Workload job-train-" in found.reason and NO_QUOTA in found.reason
    assert found.short == "waits for Kueue: gpu-cluster-queue"
    assert dict(found.details)["ClusterQueue"] == "gpu-cluster-queue"
    assert found.expected_start is None and "ClusterQueue gpu-cluster-queue has quota" in found.expected_start_why
    asked = [path for _, path in emulator.requests[before:]]
    assert any(p.startswith("/apis/kueue.x-k8s.io/v1beta1/namespaces/ml/workloads") for p in asked), asked
    assert "/apis/kueue.x-k8s.io/v1beta1/namespaces/ml/localqueues/team-a" in asked

    inadmissible = await backend.explain("ml/lost")
    assert inadmissible.category is Category.CONFIGURATION and inadmissible.code == "Inadmissible"
    assert "the ClusterQueue of LocalQueue nowhere" in inadmissible.reason and gone in inadmissible.reason
    assert "kueue.x-k8s.io/queue-name" in inadmissible.action
    assert emulator.mutations() == []  # read-only: only GETs reached the API server


async def test_an_admitted_workload_or_no_kueue_leaves_the_pods_to_say_it(emulator, backend):
    emulator.kueue = True
    held = suspended_job(emulator, "admitted")
    admitted = [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}]
    emulator.put("workloads", make_workload(held, "team-a", admitted, cluster_queue="gpu-cluster-queue"))
    await listed(backend, "ml/admitted")
    found = await backend.explain("ml/admitted")
    assert "Kueue" not in found.reason and found.short != "waits for Kueue"

    emulator.kueue = False  # a cluster without Kueue: its API answers 404 there
    suspended_job(emulator, "plain")
    await listed(backend, "ml/plain")
    before = len(emulator.requests)
    plain = await backend.explain("ml/plain")
    assert "Kueue" not in plain.reason
    assert any("/apis/kueue.x-k8s.io/" in path for _, path in emulator.requests[before:])  # asked, 404, went on
