"""Pure extraction and state mapping on raw Kubernetes JSON (the emulator's real shapes): job states
from conditions and pod phases, pending reasons, quantities, and the node GPU map."""

from __future__ import annotations

import pytest
from fakes.k8s_api import make_job, make_node, make_pod

from yanflow_tui.backends.kubernetes.extract import job_info, node_info, pod_info, quantity
from yanflow_tui.backends.kubernetes.views import build_jobs, build_nodes, job_state
from yanflow_tui.model import GpuState, JobState


@pytest.mark.parametrize(
    "text, value",
    [("8", 8), ("500m", 0.5), ("64Gi", 64 * 2**30), ("1e3", 1000), ("2k", 2000), ("", 0), (None, 0), ("junk", 0)],
)
def test_quantities(text, value):
    assert quantity(text) == value


def test_job_states_from_conditions_and_pods():
    def state(job_status=None, pods=(), deleting=False, **job_kw):
        raw = make_job("j", "ml", status_=job_status or {}, **job_kw)
        if deleting:
            raw["metadata"]["deletionTimestamp"] = "2026-11-29T12:00:00Z"
        return job_state(job_info(raw), [pod_info(p) for p in pods])[::2]

    failed = {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}
    assert state(failed) == (JobState.FAILED, "BackoffLimitExceeded")
    assert state({"conditions": [{"type": "Complete", "status": "True"}]})[0] is JobState.COMPLETED
    assert state(deleting=True) == (JobState.CANCELLED, "deleted")
    assert state() == (JobState.PENDING, "no pods yet")
    crash = make_pod("j-1", "ml", node="n", job="j", phase="Running", waiting="CrashLoopBackOff")
    assert state(pods=[crash]) == (JobState.RUNNING, "CrashLoopBackOff")  # as kubectl: Running, crash-looping
    two = [
        make_pod("j-0", "ml", node="a", job="j", index=0),
        make_pod("j-1", "ml", job="j", index=1, phase="Pending", unschedulable="0/2 nodes are available"),
    ]
    assert state(pods=two, parallelism=2, indexed=True) == (JobState.RUNNING, "Unschedulable")


def test_foreign_indexed_job_is_multi_node_with_rank_children_and_plain_job_is_single():
    jobs = [job_info(make_job("idx", "ml", parallelism=2, indexed=True)), job_info(make_job("one", "ml"))]
    pods = [pod_info(make_pod(f"idx-{i}-a", "ml", node=f"n{i}", job="idx", index=i)) for i in (1, 0)]
    rows = build_jobs("c", jobs, pods)
    assert [(r.id, r.parent, r.name) for r in rows] == [
        ("ml/idx", "", "idx"),
        ("ml/idx/idx-0-a", "ml/idx", "idx [rank 0]"),
        ("ml/idx/idx-1-a", "ml/idx", "idx [rank 1]"),
        ("ml/one", "", "one"),
    ]
    assert rows[0].kind.value == "multi-node" and rows[3].kind.value == "single"
    assert {r.image for r in rows} == {"busybox"}  # the job's and each rank's: the pod template's container


def test_the_image_shows_once_in_the_description():
    from yanflow_tui.backends.base import describe_job

    (row,) = build_jobs("c", [job_info(make_job("one", "ml"))], [])
    text = describe_job(row)
    assert text.count("Image:") == 1 and "busybox" in text


def test_gpu_map_caps_at_allocatable_and_names_owners():
    nodes = [node_info(make_node("n", gpus=4))]
    pods = [
        pod_info(make_pod("a", "ml", node="n", gpus=3, job="ja")),
        pod_info(make_pod("b", "ml", node="n", gpus=3)),  # bare pod, over-committed view
        pod_info(make_pod("c", "ml", node="n", gpus=8, phase="Failed")),
    ]
    (node,) = build_nodes("c", nodes, pods)
    assert node.gpus_total == 4 and node.gpus_allocated == 4 and node.cpus_total == 95
    assert [g.job_id for g in node.gpus] == ["ml/ja"] * 3 + ["ml/b"]
    assert all(g.state is GpuState.ALLOCATED for g in node.gpus)
