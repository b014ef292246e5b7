"""``explain`` on Kubernetes against the API emulator, which schedules as kube-scheduler does (GPUs
free, taints tolerated: a ``FailedScheduling`` event and the ``Unschedulable`` condition when no node
fits) and refuses pods over a ResourceQuota as the API server does: a Job pending for GPUs, one for a
taint and one over a quota each get their own explanation with the counts; an image that cannot be
pulled says "cannot start: image"; and a read-only backend sends no mutating request."""

from __future__ import annotations

import pytest
from fakes.k8s_api import make_job, make_pod
from k8shelpers import cluster
from waiting import async_wait_until

from yanflow_tui.backends.kubernetes.backend import KubernetesBackend
from yanflow_tui.backends.kubernetes.explain import read_scheduler
from yanflow_tui.explain import Category


@pytest.fixture
async def backend(kubeconfig):
    b = KubernetesBackend(cluster(kubeconfig, read_only=True))  # explain is a read
    yield b
    await b.close()


def test_the_schedulers_message_is_read_with_its_counts():
    read = read_scheduler(
        "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: infer}, 2 Insufficient nvidia.com/gpu. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    assert read is not None and read.total == 3
    assert read.reasons == ((1, "node(s) had untolerated taint {dedicated: infer}"), (2, "Insufficient nvidia.com/gpu"))
    assert read.category() is Category.RESOURCES
    assert read_scheduler(
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
    ).category() is (  # type: ignore[union-attr]
        Category.CONFIGURATION
    )
    assert read_scheduler("Back-off pulling image") is None


async def test_gpus_taint_and_quota_each_get_their_own_explanation(emulator, backend):
    emulator.add_node("g1", gpus=4)
    emulator.add_node("g2", gpus=4)
    emulator.add_node("t1", gpus=8, taints=[{"key": "dedicated", "value": "infer", "effect": "NoSchedule"}])
    emulator.put("jobs", make_job("big", "ml", gpus=8))  # 8 GPUs: only the tainted node has them
    emulator.schedule_job("ml", "big")
    emulator.put("jobs", make_job("fits", "ml", gpus=4))
    emulator.schedule_job("ml", "fits")
    emulator.put("jobs", make_job("more", "ml", gpus=4))  # g1 is taken by "fits", g2 is free: runs
    emulator.schedule_job("ml", "more")
    emulator.put("jobs", make_job("wide", "ml", gpus=2))  # every untainted GPU is taken now
    emulator.schedule_job("ml", "wide")
    emulator.add_quota("team", "gpu-quota", {"requests.nvidia.com/gpu": "2"})
    emulator.put("jobs", make_job("quota", "team", gpus=4))
    emulator.schedule_job("team", "quota")
    assert not [p for p in emulator.objects("pods") if p["metadata"]["namespace"] == "team"]  # refused at create

    await backend.set_scope("namespace", "*")

    async def known():
        ids = {job.id for job in await backend.list_jobs()}
        return {"ml/big", "ml/wide", "ml/fits", "team/quota"} <= ids

    await async_wait_until(known, 10, "the jobs to be listed")
    big = await backend.explain("ml/big")
    wide = await backend.explain("ml/wide")
    quota = await backend.explain("team/quota")
    running = await backend.explain("ml/fits")

    assert big.category is Category.RESOURCES and big.state == "PENDING"
    assert "1 of 3 nodes have a taint the pod does not tolerate {dedicated: infer}" in big.reason
    assert "2 of 3 nodes have too little free nvidia.com/gpu" in big.reason and "asks for 8 GPUs" in big.reason
    assert big.short == "waits for GPUs"

    assert wide.category is Category.RESOURCES and "2 of 3 nodes have too little free nvidia.com/gpu" in wide.reason
    assert "asks for 2 GPUs" in wide.reason

    assert quota.category is Category.LIMITS and quota.short == "over quota"
    assert "ResourceQuota gpu-quota" in quota.reason and "requests.nvidia.com/gpu=4" in quota.reason
    assert "allows requests.nvidia.com/gpu=2" in quota.reason

    assert running.category is Category.RUNNING and "g1" in running.reason
    assert len({big.reason, wide.reason, quota.reason}) == 3


async def test_a_pod_pending_only_for_a_taint_says_so_and_how_to_tolerate_it(emulator, backend):
    emulator.add_node("t1", gpus=8, taints=[{"key": "dedicated", "value": "infer", "effect": "NoSchedule"}])
    emulator.put("jobs", make_job("tainted", "ml", gpus=1))
    emulator.schedule_job("ml", "tainted")

    async def known():
        return "ml/tainted" in {job.id for job in await backend.list_jobs()}

    await async_wait_until(known, 10, "the job to be listed")
    found = await backend.explain("ml/tainted")
    assert found.category is Category.NODE_STATE and "toleration" in found.action
    assert "1 of 1 node have a taint the pod does not tolerate {dedicated: infer}" in found.reason
    assert found.short == "no node it tolerates"


async def test_an_image_that_cannot_be_pulled_cannot_start(emulator, backend):
    emulator.put("jobs", make_job("img", "ml"))
    pod = make_pod("img-abcde", "ml", node="g1", phase="Pending", job="img", waiting="ImagePullBackOff")
    emulator.put("pods", pod)

    async def known():
        return "ml/img" in {job.id for job in await backend.list_jobs()}

    await async_wait_until(known, 10, "the job to be listed")
    found = await backend.explain("ml/img")
    assert found.category is Category.LAUNCH_FAILURE and found.short == "cannot start: image"
    assert "ImagePullBackOff" in found.reason
    assert emulator.mutations() == []  # read-only: only GETs reached the API server


def test_the_api_server_refuses_a_pod_over_quota(emulator):
    import json
    import urllib.request

    emulator.add_quota("team", "gpu-quota", {"requests.nvidia.com/gpu": "2"})
    body = json.dumps(make_pod("p", "team", gpus=4)).encode()
    request = urllib.request.Request(
        f"{emulator.url}/api/v1/namespaces/team/pods", body, {"Content-Type": "application/json"}, method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    status = json.loads(refused.value.read())
    assert refused.value.code == 403 and status["reason"] == "Forbidden"
    assert (
        "exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=4, used: requests.nvidia.com/gpu=0"
        in status["message"]
    )
