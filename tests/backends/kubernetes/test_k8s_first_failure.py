"""The first failure across ranks on Kubernetes, through the official client against the API emulator:
a 3-pod Indexed Job whose pod on the second node is OOMKilled (no traceback: the kernel killed it) while
the other two print torch's NCCL watchdog timeout later and fail. The answer names that pod's rank and
node, the OOM killer, and its finishedAt; the other ranks are consequences."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from fakes.k8s_api import make_job
from k8shelpers import cluster
from waiting import async_wait_until

from yanflow_tui import firstfailure as ff
from yanflow_tui.backends.kubernetes.backend import KubernetesBackend
from yanflow_tui.failureevidence import find_first_failure
from yanflow_tui.model import JobState

NS = "ml"


def nccl(rank: int, when: datetime) -> str:
    return (
        f"[rank{rank}]:[E{when:%m%d %H:%M:%S.%f} 811 ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600042 ms"
    )


async def test_an_oomkilled_pod_is_the_first_failure(emulator, kubeconfig):
    backend = KubernetesBackend(cluster(kubeconfig))
    try:
        emulator.put("jobs", make_job("oom", NS, parallelism=3, indexed=True))
        pods = [p["metadata"]["name"] for p in emulator.run_job_pods(NS, "oom", ["gpu-a", "gpu-b", "gpu-c"])]
        oomed = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(minutes=10)
        for rank, pod in enumerate(pods):
            emulator.write_log(NS, pod, f"{(oomed - timedelta(minutes=1)).isoformat()} rank {rank}: step 1")
        emulator.set_pod_phase(
            NS, pods[1], "Failed", exit_code=137, reason="OOMKilled", finished=oomed.strftime("%Y-%m-%dT%H:%M:%SZ")
        )
        for rank in (0, 2):
            emulator.write_log(NS, pods[rank], nccl(rank, oomed + timedelta(minutes=10, seconds=rank)))
            emulator.set_pod_phase(NS, pods[rank], "Failed", exit_code=1)
        emulator.patch("jobs", NS, "oom", {"status": {"conditions": [{"type": "Failed", "status": "True"}]}})

        async def failed():
            job = next((j for j in await backend.list_jobs() if j.id == "ml/oom"), None)
            return job if job is not None and job.state is JobState.FAILED else None

        job = await async_wait_until(failed, what="the job failed")
        await async_wait_until(lambda: _all_terminal(backend), what="every pod's end in the cache")
        found = await find_first_failure(backend, job, 30)
    finally:
        await backend.close()
    assert found is not None
    first = found.first
    assert (first.rank, first.node, first.kind, first.exit_code) == ("1", "gpu-b", ff.OOM, 137), found.to_dict()
    assert "OOMKilled" in first.why
    assert first.time == oomed and first.time_from == "the rank's end"
    assert sorted((c.rank, c.kind) for c in found.consequences) == [("0", ff.NCCL), ("2", ff.NCCL)]


async def _all_terminal(backend) -> bool:
    evidence = await backend.rank_evidence("ml/oom")
    return len(evidence) == 3 and all(ev.exit_code for ev in evidence)
