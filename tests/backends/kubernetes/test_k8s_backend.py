"""The Kubernetes backend through the official client over real HTTP, against the stateful API
emulator (tests/fakes/k8s_api.py): watch cache, node/GPU map, 410 re-list, losing the API server,
submit (with a retried create), cancel, describe with events, merged per-rank logs, read-only."""

from __future__ import annotations

import asyncio
import copy
from datetime import datetime, timedelta, timezone
from urllib.parse import parse_qs, urlsplit

import pytest
from fakes.k8s_api import make_job, make_pod
from k8shelpers import cluster
from paths import SAMPLES
from waiting import async_wait_until

from yanflow_tui.backends.kubernetes import logs
from yanflow_tui.backends.kubernetes.backend import KubernetesBackend
from yanflow_tui.backends.kubernetes.logs import RESUME_SLACK, LogLimits, log_limits
from yanflow_tui.errors import BackendError, ReadOnlyError
from yanflow_tui.model import GpuState, JobKind, JobState
from yanflow_tui.spec import load_spec

NS = "ml"
NOT_YET = (BackendError, KeyError)  # a read that fails while the cache catches up, or a node not there yet


def lists(emu, resource_path: str) -> int:
    """How many plain lists (not watches) of ``resource_path`` reached the emulator."""
    return sum(
        1
        for m, p in emu.requests
        if m == "GET" and urlsplit(p).path == resource_path and "watch" not in parse_qs(urlsplit(p).query)
    )


@pytest.fixture
async def backend(kubeconfig):
    b = KubernetesBackend(cluster(kubeconfig))
    yield b
    await b.close()


def by_name(items):
    return {i.name: i for i in items}


async def test_node_map_follows_pod_gpu_requests_by_watch_without_relisting(emulator, backend):
    emulator.add_node("gpu-a", 8)
    emulator.add_node("gpu-b", 8, unschedulable=True)
    emulator.add_node("gpu-c", 4, ready=False)
    emulator.add_node("gpu-d", 8, taints=[{"key": "maintenance", "value": "yes", "effect": "NoSchedule"}])
    emulator.put("jobs", make_job("train", NS, gpus=4))
    emulator.put("pods", make_pod("train-x1", NS, node="gpu-a", gpus=4, job="train"))
    emulator.put("pods", make_pod("done-x1", NS, node="gpu-a", gpus=2, phase="Succeeded"))  # terminal: frees GPUs

    nodes = by_name(await backend.list_nodes())
    a = nodes["gpu-a"]
    assert (a.state, a.gpus_total, a.gpus_allocated, a.gpu_type) == ("ready", 8, 4, "NVIDIA-A100-SXM4-80GB")
    assert [g.job_id for g in a.gpus if g.state is GpuState.ALLOCATED] == ["ml/train"] * 4
    assert a.partitions == ("p4d.24xlarge",)
    assert nodes["gpu-b"].state == "cordoned" and nodes["gpu-b"].gpus[0].state is GpuState.UNAVAILABLE
    assert nodes["gpu-c"].state == "notready" and nodes["gpu-c"].reason == "KubeletNotReady"
    assert nodes["gpu-d"].state == "tainted" and "maintenance=yes:NoSchedule" in nodes["gpu-d"].reason
    before = (lists(emulator, "/api/v1/nodes"), lists(emulator, f"/api/v1/namespaces/{NS}/pods"))

    emulator.put("pods", make_pod("train-x2", NS, node="gpu-a", gpus=3, job="train"))
    emulator.patch("nodes", "", "gpu-b", {"spec": {"unschedulable": False}})
    await async_wait_until(lambda: _gpus_allocated(backend, "gpu-a", 7), ignore=NOT_YET, what="watch event applied")
    await async_wait_until(lambda: _node_state(backend, "gpu-b", "ready"), ignore=NOT_YET, what="uncordon applied")
    emulator.remove("pods", NS, "train-x1")
    await async_wait_until(lambda: _gpus_allocated(backend, "gpu-a", 3), ignore=NOT_YET, what="delete applied")
    after = (lists(emulator, "/api/v1/nodes"), lists(emulator, f"/api/v1/namespaces/{NS}/pods"))
    assert after == before == (1, 1)  # watch events only, no re-list


async def _node_state(backend, node, state):
    return by_name(await backend.list_nodes())[node].state == state


async def _gpus_allocated(backend, node, count):
    return by_name(await backend.list_nodes())[node].gpus_allocated == count


async def test_changes_are_pushed_and_bursts_coalesce(emulator, backend):
    calls = []
    backend.set_change_callback(lambda: calls.append(1))
    emulator.add_node("gpu-a", 8)
    await backend.list_nodes()
    calls.clear()
    emulator.bulk("pods", [make_pod(f"p{i}", NS, node="gpu-a", gpus=0) for i in range(500)])
    await async_wait_until(lambda: len([j for j in backend._reflectors["pods"].values()]) == 500, what="burst")
    await async_wait_until(lambda: calls, what="a change pushed")
    # A bound on a count needs a quiet time: the callbacks the watch thread has queued on the loop run meanwhile.
    await asyncio.sleep(0.3)
    assert 1 <= len(calls) <= 10  # 500 events, a handful of UI updates


@pytest.mark.parametrize("as_http", [False, True], ids=["error-event", "http-410"])
async def test_410_mid_watch_relists_and_misses_nothing(emulator, backend, as_http):
    emulator.gone_as_http = as_http
    emulator.add_node("gpu-a", 8)
    emulator.put("jobs", make_job("old", NS))
    emulator.put("pods", make_pod("old-1", NS, node="gpu-a", gpus=2, job="old"))
    await backend.list_jobs()
    assert lists(emulator, f"/apis/batch/v1/namespaces/{NS}/jobs") == 1

    # Changes the open watches never deliver, then history compacted and the streams cut: the
    # reflectors re-watch from their last resourceVersion, get 410 Gone, and must re-list.
    async def silent():
        await emulator._aput("jobs", make_job("new", NS), notify=False)
        await emulator._aput("pods", make_pod("new-1", NS, node="gpu-a", gpus=5, job="new"), notify=False)
        await emulator._aremove("pods", NS, "old-1")
        emulator.compacted = emulator.rv + 1
        emulator.history.clear()
        for queue in list(emulator._watchers):
            queue.put_nowait(None)

    emulator._call(silent())

    await async_wait_until(lambda: _job_ids(backend, {"ml/old", "ml/new"}), ignore=NOT_YET, what="re-listed jobs")
    assert all(r.error is None for r in backend._reflectors.values())  # never shown as a failure
    await async_wait_until(lambda: _gpus_allocated(backend, "gpu-a", 5), ignore=NOT_YET, what="re-listed pods")
    assert lists(emulator, f"/apis/batch/v1/namespaces/{NS}/jobs") == 2
    assert lists(emulator, f"/api/v1/namespaces/{NS}/pods") == 2
    # and the new watch carries on from the re-list
    emulator.put("pods", make_pod("new-2", NS, node="gpu-a", gpus=1, job="new"))
    await async_wait_until(lambda: _gpus_allocated(backend, "gpu-a", 6), ignore=NOT_YET, what="event after re-list")


async def test_a_watch_that_simply_ends_resumes_from_its_resource_version_without_a_list(emulator, backend):
    emulator.add_node("gpu-a", 8)
    await backend.list_nodes()
    last_rv = backend._reflectors["pods"].resource_version
    watches_before = len([p for m, p in emulator.requests if "watch=" in p and "/pods" in p])
    emulator.end_watches()  # as the server does when timeoutSeconds runs out
    await async_wait_until(
        lambda: len([p for m, p in emulator.requests if "watch=" in p and "/pods" in p]) > watches_before,
        what="re-watch",
    )
    rewatch = [p for m, p in emulator.requests if "watch=" in p and "/pods" in p][-1]
    assert f"resourceVersion={last_rv}" in rewatch
    emulator.put("pods", make_pod("late", NS, node="gpu-a", gpus=2))
    await async_wait_until(
        lambda: _gpus_allocated(backend, "gpu-a", 2), ignore=NOT_YET, what="event on the resumed watch"
    )
    assert lists(emulator, f"/api/v1/namespaces/{NS}/pods") == 1


async def _job_ids(backend, wanted):
    return {j.id for j in await backend.list_jobs() if not j.parent} == wanted


async def test_losing_the_api_server_raises_then_recovers_with_the_cache_kept(emulator, backend):
    emulator.add_node("gpu-a", 8)
    emulator.put("jobs", make_job("train", NS))
    assert [j.id for j in await backend.list_jobs()] == ["ml/train"]
    emulator.stop()

    async def refused():
        try:
            await backend.list_jobs()
        except BackendError as exc:
            return str(exc)
        return None

    message = await async_wait_until(refused, what="unreachable error")
    assert message.startswith("API server unreachable:")
    with pytest.raises(BackendError, match="unreachable"):
        await backend.list_nodes()
    assert backend._reflectors["jobs"].items  # cache kept for when it comes back

    emulator.put("jobs", make_job("while-away", NS))  # changed while we could not see it
    emulator.start()
    backend.invalidate()  # cut the backoff short, as the refresh key does
    await async_wait_until(
        lambda: _job_ids(backend, {"ml/train", "ml/while-away"}), timeout=15, ignore=NOT_YET, what="recovery"
    )
    assert len(await backend.list_nodes()) == 1


async def test_submit_torchrun_sample_creates_indexed_job_and_service_and_shows_ranks(emulator, backend):
    for name in ("gpu-a", "gpu-b"):
        emulator.add_node(name, 8)
    job_id = await backend.submit(load_spec(SAMPLES / "k8s-torchrun.yaml"))
    namespace, name = job_id.split("/")
    assert namespace == NS
    job = emulator.get("jobs", NS, name)
    service = emulator.get("services", NS, name)
    assert job["spec"]["completionMode"] == "Indexed" and job["spec"]["parallelism"] == 2
    assert service["spec"]["clusterIP"] == "None"
    assert service["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    assert ("POST", f"/apis/batch/v1/namespaces/{NS}/jobs") in emulator.requests

    pods = emulator.run_job_pods(NS, name, ["gpu-a", "gpu-b"])
    rows = await async_wait_until(lambda: _rows_with_children(backend, job_id, 2), ignore=NOT_YET, what="job and pods")
    parent = rows[job_id]
    assert parent.kind is JobKind.MULTI_NODE and parent.state is JobState.RUNNING and parent.gpus == 16
    assert parent.name == "llama-finetune-2x8" and parent.nodes == ("gpu-a", "gpu-b")
    children = sorted((j for j in rows.values() if j.parent == job_id), key=lambda j: j.name)
    assert [c.name for c in children] == ["llama-finetune-2x8 [rank 0]", "llama-finetune-2x8 [rank 1]"]
    assert children[0].id == f"{job_id}/{pods[0]['metadata']['name']}"
    nodes = by_name(await backend.list_nodes())
    assert nodes["gpu-a"].gpus_allocated == nodes["gpu-b"].gpus_allocated == 8
    assert {g.job_id for g in nodes["gpu-b"].gpus} == {job_id}

    await backend.cancel(job_id)
    assert emulator.get("jobs", NS, name) is None and emulator.get("services", NS, name) is None
    deletes = [p for m, p in emulator.requests if m == "DELETE"]
    assert any(
        p.startswith(f"/apis/batch/v1/namespaces/{NS}/jobs/{name}") and "propagationPolicy=Background" in p
        for p in deletes
    )
    await async_wait_until(lambda: _gpus_allocated(backend, "gpu-a", 0), ignore=NOT_YET, what="pods gone after cancel")


async def _rows_with_children(backend, job_id, count):
    rows = {j.id: j for j in await backend.list_jobs()}
    if (
        job_id in rows
        and sum(1 for j in rows.values() if j.parent == job_id) == count
        and rows[job_id].state is JobState.RUNNING
    ):
        return rows
    return None


async def test_submit_retried_after_a_timeout_creates_one_job(emulator, kubeconfig):
    backend = KubernetesBackend(cluster(kubeconfig), request_timeout=0.5)
    try:
        emulator.create_delay["jobs"] = 2.0  # stored at once, answered after the client gave up
        job_id = await backend.submit(load_spec(SAMPLES / "k8s-single.yaml"))
    finally:
        await backend.close()
    posts = [p for m, p in emulator.requests if m == "POST"]
    assert posts == [f"/apis/batch/v1/namespaces/{NS}/jobs"] * 2  # the retry reached the server...
    jobs = emulator.objects("jobs")
    assert len(jobs) == 1  # ...and got 409 for the same submit: one job
    assert job_id == f"{NS}/{jobs[0]['metadata']['name']}"


async def test_a_foreign_job_with_the_same_name_is_an_error_not_a_success(emulator, backend, monkeypatch):
    from yanflow_tui.backends import base

    monkeypatch.setattr(base, "new_submit_tag", lambda: "00000000deadbeef")
    spec = load_spec(SAMPLES / "k8s-single.yaml")
    emulator.put("jobs", make_job("gpu-check-00000000", NS))
    with pytest.raises(BackendError, match="already exists"):
        await backend.submit(spec)


async def test_pending_reasons_and_describe_with_events(emulator, backend):
    emulator.add_node("gpu-a", 8)
    emulator.put("jobs", make_job("big", NS, gpus=16))
    emulator.put(
        "pods",
        make_pod(
            "big-1",
            NS,
            gpus=16,
            phase="Pending",
            job="big",
            unschedulable="0/1 nodes are available: 1 Insufficient nvidia.com/gpu.",
        ),
    )
    emulator.put("jobs", make_job("badimg", NS))
    emulator.put(
        "pods", make_pod("badimg-1", NS, node="gpu-a", phase="Pending", job="badimg", waiting="ImagePullBackOff")
    )
    emulator.put(
        "jobs",
        make_job(
            "done",
            NS,
            status_={
                "succeeded": 1,
                "completionTime": "2026-11-29T12:05:00Z",
                "conditions": [{"type": "Complete", "status": "True"}],
            },
        ),
    )
    emulator.put(
        "events",
        {
            "metadata": {"name": "big-1.1", "namespace": NS},
            "involvedObject": {"kind": "Pod", "name": "big-1", "namespace": NS},
            "reason": "FailedScheduling",
            "type": "Warning",
            "message": "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.",
            "lastTimestamp": "2026-11-29T12:00:00Z",
        },
    )
    jobs = {j.id: j for j in await backend.list_jobs()}
    assert (jobs["ml/big"].state, jobs["ml/big"].reason) == (JobState.PENDING, "Unschedulable")
    assert (jobs["ml/badimg"].state, jobs["ml/badimg"].reason) == (JobState.PENDING, "ImagePullBackOff")
    assert jobs["ml/done"].state is JobState.COMPLETED and jobs["ml/done"].exit_code == 0
    text = await backend.describe("ml/big")
    assert "FailedScheduling" in text and "pod/big-1" in text and "Insufficient nvidia.com/gpu" in text
    assert "Kubernetes name:" in text or "Kubernetes name" in text
    event_lists = [p for m, p in emulator.requests if "/events" in p]
    assert any("fieldSelector=involvedObject.name%3Dbig-1" in p for p in event_lists)


async def test_logs_of_two_pods_merge_with_rank_sources_and_follow_ends_with_the_job(emulator, backend):
    for name in ("gpu-a", "gpu-b"):
        emulator.add_node(name, 8)
    job_id = await backend.submit(load_spec(SAMPLES / "k8s-torchrun.yaml"))
    name = job_id.split("/")[1]
    pods = [p["metadata"]["name"] for p in emulator.run_job_pods(NS, name, ["gpu-a", "gpu-b"])]
    emulator.write_log(NS, pods[0], "rank0 step 1")
    emulator.write_log(NS, pods[1], "rank1 step 1")
    await async_wait_until(lambda: _rows_with_children(backend, job_id, 2), ignore=NOT_YET, what="pods cached")

    seen: list = []

    async def follow():
        async for line in backend.stream_logs(job_id, follow=True):
            if not line.status:  # a reconnect on a loaded machine says so; its lines are not log lines
                seen.append((line.source, line.text))

    task = asyncio.create_task(follow())
    await async_wait_until(lambda: len(seen) == 2, what="first lines")
    emulator.write_log(NS, pods[1], "rank1 step 2", "rank1 [bold]markup[/] stays text")
    emulator.write_log(NS, pods[0], "rank0 step 2")
    await async_wait_until(lambda: len(seen) == 5, what="followed lines")
    for pod in pods:
        emulator.set_pod_phase(NS, pod, "Succeeded")
    emulator.patch("jobs", NS, name, {"status": {"conditions": [{"type": "Complete", "status": "True"}]}})
    await asyncio.wait_for(task, 10)
    assert sorted(seen) == sorted(
        [
            ("rank 0", "rank0 step 1"),
            ("rank 1", "rank1 step 1"),
            ("rank 1", "rank1 step 2"),
            ("rank 1", "rank1 [bold]markup[/] stays text"),
            ("rank 0", "rank0 step 2"),
        ]
    )
    assert [t for s, t in seen if s == "rank 1"] == ["rank1 step 1", "rank1 step 2", "rank1 [bold]markup[/] stays text"]


TRACEBACK = (
    "Traceback (most recent call last):",
    '  File "train.py", line 5, in <module>',
    "RuntimeError: rank 1 failed",
)


async def test_a_rank_that_dies_at_once_keeps_its_traceback_while_the_job_controller_stops_the_others(
    emulator, backend
):
    """Rank 1 prints a traceback and exits 1 at once; the Job fails (backoffLimit 0) and its controller
    deletes the other pods. Both a log followed from the start and one read afterwards hold the traceback."""
    emulator.put("jobs", make_job("dies", NS, parallelism=3, indexed=True))
    pods = [p["metadata"]["name"] for p in emulator.run_job_pods(NS, "dies", ["gpu-a", "gpu-b", "gpu-c"])]
    for rank, pod in enumerate(pods):
        emulator.write_log(NS, pod, f"hello from rank {rank}")
    await async_wait_until(lambda: _rows_with_children(backend, "ml/dies", 3), ignore=NOT_YET, what="pods cached")
    seen: list = []

    async def follow():
        async for line in backend.stream_logs("ml/dies", follow=True):
            if not line.status:
                seen.append((line.source, line.text))

    task = asyncio.create_task(follow())
    await async_wait_until(lambda: len(seen) == 3, what="the first lines")
    emulator.write_log(NS, pods[1], *TRACEBACK)
    emulator.set_pod_phase(NS, pods[1], "Failed", exit_code=1)
    for pod in (pods[0], pods[2]):
        emulator.remove("pods", NS, pod)
    emulator.patch("jobs", NS, "dies", {"status": {"conditions": [{"type": "Failed", "status": "True"}]}})
    await asyncio.wait_for(task, 20)
    assert [t for s, t in seen if s == "rank 1"] == ["hello from rank 1", *TRACEBACK]
    later = [(line.source, line.text) async for line in backend.stream_logs("ml/dies")]
    assert later == [("rank 1", "hello from rank 1"), *(("rank 1", t) for t in TRACEBACK)]


async def test_previous_container_logs_come_first_as_their_own_source(emulator, backend):
    emulator.put("jobs", make_job("crashy", NS, parallelism=2, indexed=True))
    pod = make_pod("crashy-0-x", NS, node="gpu-a", job="crashy", index=0, phase="Failed", exit_code=137)
    pod["status"]["containerStatuses"][0]["restartCount"] = 1
    emulator.put("pods", pod)
    emulator.write_log(NS, "crashy-0-x", "before the crash", "CUDA error: out of memory", previous=True)
    emulator.write_log(NS, "crashy-0-x", "second try")
    lines = [(line.source, line.text) async for line in backend.stream_logs("ml/crashy")]
    assert lines == [
        ("rank 0 (previous)", "before the crash"),
        ("rank 0 (previous)", "CUDA error: out of memory"),
        ("rank 0", "second try"),
    ]
    jobs = {j.id: j for j in await backend.list_jobs()}
    assert jobs["ml/crashy"].kind is JobKind.MULTI_NODE
    assert jobs["ml/crashy/crashy-0-x"].exit_code == 137


def with_sidecar(pod: dict, default: str | None = None) -> dict:
    """``pod`` with a second container, ``proxy``, after ``main``; ``default`` names kubectl's default one."""
    pod["spec"]["containers"].append({"name": "proxy", "image": "envoyproxy/envoy:v1.31"})
    statuses = pod["status"].get("containerStatuses")
    if statuses:
        statuses.append({**copy.deepcopy(statuses[0]), "name": "proxy"})
    if default:
        pod["metadata"]["annotations"]["kubectl.kubernetes.io/default-container"] = default
    return pod


def log_queries(emu) -> list[dict[str, list[str]]]:
    """The query of every pod log request that reached the emulator, in order."""
    return [parse_qs(urlsplit(p).query) for m, p in emu.requests if urlsplit(p).path.endswith("/log")]


async def texts(stream) -> list[str]:
    return [line.text async for line in stream]


async def test_a_pod_with_a_sidecar_logs_its_default_container_and_the_other_one_as_a_stream(emulator, backend):
    emulator.put("jobs", make_job("named", NS))
    named = make_pod("named-1", NS, node="gpu-a", job="named", phase="Succeeded")
    emulator.put("pods", with_sidecar(named, default="proxy"))
    emulator.put("jobs", make_job("plain", NS))
    emulator.put("pods", with_sidecar(make_pod("plain-1", NS, node="gpu-a", job="plain", phase="Succeeded")))
    emulator.put("jobs", make_job("single", NS))
    emulator.put("pods", make_pod("single-1", NS, node="gpu-a", job="single", phase="Succeeded"))
    for pod in ("named-1", "plain-1", "single-1"):
        emulator.write_log(NS, pod, f"{pod} training step 1", container="main")
    for pod in ("named-1", "plain-1"):
        emulator.write_log(NS, pod, f"{pod} proxy ready", container="proxy")

    # The annotation names the default container (proxy); main is a stream of its own.
    assert await backend.log_streams("ml/named") == ("", "main")
    assert await texts(backend.stream_logs("ml/named")) == ["named-1 proxy ready"]
    assert await texts(backend.stream_logs("ml/named", stream="main")) == ["named-1 training step 1"]
    # No annotation: the first container in spec order; the sidecar is the other stream.
    assert await backend.log_streams("ml/plain") == ("", "proxy")
    assert await texts(backend.stream_logs("ml/plain")) == ["plain-1 training step 1"]
    assert await texts(backend.stream_logs("ml/plain", stream="proxy")) == ["plain-1 proxy ready"]
    # One container: one stream, as before.
    assert await backend.log_streams("ml/single") == ("",)
    assert await texts(backend.stream_logs("ml/single")) == ["single-1 training step 1"]
    # Every request named its container (the API server refuses a pod of two without one).
    assert [q.get("container") for q in log_queries(emulator)] == [["proxy"], ["main"], ["main"], ["proxy"], ["main"]]
    with pytest.raises(BackendError, match="no container 'envoy' in job 'ml/plain' \\(its containers: main, proxy\\)"):
        await texts(backend.stream_logs("ml/plain", stream="envoy"))


async def test_the_previous_log_of_a_restarted_sidecar_comes_first_in_its_own_stream(emulator, backend):
    emulator.put("jobs", make_job("flaky", NS, parallelism=1, indexed=True))
    pod = with_sidecar(make_pod("flaky-0-x", NS, node="gpu-a", job="flaky", index=0, phase="Succeeded"))
    pod["status"]["containerStatuses"][1]["restartCount"] = 1  # the proxy restarted, main did not
    emulator.put("pods", pod)
    emulator.write_log(NS, "flaky-0-x", "proxy crashed", container="proxy", previous=True)
    emulator.write_log(NS, "flaky-0-x", "proxy again", container="proxy")
    emulator.write_log(NS, "flaky-0-x", "main step 1", container="main")

    proxy = [(line.source, line.text) async for line in backend.stream_logs("ml/flaky", stream="proxy")]
    assert proxy == [("rank 0 (previous)", "proxy crashed"), ("rank 0", "proxy again")]
    main = [(line.source, line.text) async for line in backend.stream_logs("ml/flaky")]
    assert main == [("rank 0", "main step 1")]
    previous = [
        q["container"] for q in log_queries(emulator) if q["previous"][0].lower() == "true"
    ]  # 36 sends True, 37 true
    assert previous == [["proxy"]]  # main never restarted: its previous log is not asked for


async def test_log_tail_and_since_limit_the_first_read_as_kubectl_does(emulator, kubeconfig):
    emulator.put("jobs", make_job("chatty", NS))
    emulator.put("pods", make_pod("chatty-1", NS, node="gpu-a", job="chatty"))
    two_hours_ago = (datetime.now(timezone.utc) - timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%S.%f000Z")
    emulator.write_log(NS, "chatty-1", "old 1", "old 2", stamp=two_hours_ago)
    emulator.write_log(NS, "chatty-1", "new 1", "new 2", "new 3")
    tail = KubernetesBackend(cluster(kubeconfig, log_tail=2))
    since = KubernetesBackend(cluster(kubeconfig, name="k8s-since", log_since="1h"))
    both = KubernetesBackend(cluster(kubeconfig, name="k8s-both", log_since="1h30m", log_tail=4))
    try:
        assert await texts(tail.stream_logs("ml/chatty")) == ["new 2", "new 3"]
        assert await texts(since.stream_logs("ml/chatty")) == ["new 1", "new 2", "new 3"]
        assert await texts(both.stream_logs("ml/chatty")) == ["new 1", "new 2", "new 3"]
        assert [(q.get("tailLines"), q.get("sinceSeconds")) for q in log_queries(emulator)] == [
            (["2"], None),
            (None, ["3600"]),
            (["4"], ["5400"]),
        ]
        # Followed: the tail, then every new line; a reconnect resumes after the last line shown
        # (sinceSeconds from a little before it on the server's clock, no tail: three lines written while
        # away all come, none shown twice).
        task, seen, statuses = follow_into(tail, "ml/chatty")
        await async_wait_until(lambda: seen == ["new 2", "new 3"], what="the tail")
        emulator.stop()
        emulator.write_log(NS, "chatty-1", "away 1", "away 2", "away 3")
        await async_wait_until(lambda: statuses, what="the stream to see the server gone")
        emulator.start()
        await async_wait_until(lambda: seen == ["new 2", "new 3", "away 1", "away 2", "away 3"], what="resumed")
        resumed = log_queries(emulator)[-1]
        assert "tailLines" not in resumed, resumed
        # Not the whole log again: the seconds since the last line shown, plus the slack.
        assert int(resumed["sinceSeconds"][0]) <= 60 + RESUME_SLACK, resumed
        emulator.set_pod_phase(NS, "chatty-1", "Succeeded")
        emulator.patch("jobs", NS, "chatty", {"status": {"conditions": [{"type": "Complete", "status": "True"}]}})
        await asyncio.wait_for(task, 10)
    finally:
        for b in (tail, since, both):
            await b.close()


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"log_tail": "10"}, "log_tail: expected a number of lines"),
        ({"log_tail": -2}, "log_tail: expected a number of lines"),
        ({"log_since": "soon"}, "log_since: expected a duration like 30s, 10m or 1h30m, got 'soon'"),
        ({"log_since": "0s"}, "log_since: expected a duration"),
    ],
)
def test_bad_log_limits_are_refused_with_the_accepted_forms(kubeconfig, options, problem):
    with pytest.raises(BackendError, match=f"cluster 'k8s': {problem}"):
        KubernetesBackend(cluster(kubeconfig, **options))


def test_log_limits_read_as_kubectl_reads_tail_and_since():
    assert log_limits({}) == LogLimits(None, None)
    assert log_limits({"log_tail": -1, "log_since": "45s"}) == LogLimits(None, 45)  # -1: every line
    assert log_limits({"log_tail": 0, "log_since": "2h5m"}) == LogLimits(0, 7500)


async def test_closing_a_followed_log_stops_its_reader_threads(emulator, backend):
    emulator.put("jobs", make_job("long", NS))
    emulator.put("pods", make_pod("long-1", NS, node="gpu-a", job="long"))
    emulator.write_log(NS, "long-1", "hello")
    await backend.list_jobs()
    stream = backend.stream_logs("ml/long", follow=True)
    first = await stream.__anext__()
    assert (first.source, first.text) == ("", "hello")
    await stream.aclose()
    import threading

    await async_wait_until(
        lambda: not [t for t in threading.enumerate() if t.name.startswith("k8s-log-")], what="log threads gone"
    )


async def test_read_only_refuses_before_any_request(emulator, kubeconfig):
    backend = KubernetesBackend(cluster(kubeconfig, read_only=True))
    try:
        emulator.put("jobs", make_job("train", NS))
        await backend.list_jobs()
        with pytest.raises(ReadOnlyError):
            await backend.submit(load_spec(SAMPLES / "k8s-torchrun.yaml"))
        with pytest.raises(ReadOnlyError):
            await backend.cancel("ml/train")
    finally:
        await backend.close()
    assert emulator.mutations() == []
    assert emulator.get("jobs", NS, "train") is not None


async def test_all_namespaces_and_bad_kubeconfig(emulator, kubeconfig, tmp_path):
    emulator.put("jobs", make_job("a", "team-a"))
    emulator.put("jobs", make_job("b", "team-b"))
    everywhere = KubernetesBackend(cluster(kubeconfig, all_namespaces=True))
    try:
        assert {j.id for j in await everywhere.list_jobs()} == {"team-a/a", "team-b/b"}
    finally:
        await everywhere.close()
    broken = KubernetesBackend(cluster(tmp_path / "missing-kubeconfig"))
    with pytest.raises(BackendError, match="kubeconfig: no such file: .*missing-kubeconfig"):
        await broken.list_jobs()
    await broken.close()


async def test_context_option_and_exec_auth_plugin_as_kubectl_uses_them(emulator, tmp_path):
    import stat
    import sys

    import yaml

    plugin = tmp_path / "token-plugin"
    plugin.write_text(
        f"#!{sys.executable}\nimport json\nprint(json.dumps({{'apiVersion': "
        "'client.authentication.k8s.io/v1beta1', 'kind': 'ExecCredential', "
        "'status': {'token': 'exec-token-123'}}))\n"
    )
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "emu",
        "clusters": [{"name": "emu", "cluster": {"server": emulator.url}}],
        "users": [
            {"name": "alice", "user": {"token": "static"}},
            {
                "name": "bob",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": str(plugin),
                        "interactiveMode": "Never",
                    }
                },
            },
        ],
        "contexts": [
            {"name": "emu", "context": {"cluster": "emu", "user": "alice", "namespace": "ml"}},
            {"name": "team-b", "context": {"cluster": "emu", "user": "bob", "namespace": "team-b"}},
        ],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    emulator.put("jobs", make_job("a", "ml"))
    emulator.put("jobs", make_job("b", "team-b"))
    backend = KubernetesBackend(cluster(path, context="team-b"))
    try:
        assert [j.id for j in await backend.list_jobs()] == ["team-b/b"]
    finally:
        await backend.close()
    assert "Bearer exec-token-123" in emulator.authorizations
    assert "Bearer static" not in emulator.authorizations


async def test_a_user_who_may_not_list_nodes_still_sees_jobs(emulator, backend):
    emulator.forbidden = {"nodes"}
    emulator.add_node("gpu-a", 8)
    emulator.put("jobs", make_job("train", NS))
    assert [j.id for j in await backend.list_jobs()] == ["ml/train"]
    assert await backend.list_nodes() == []
    emulator.forbidden = {"nodes", "jobs"}
    emulator.end_watches()

    async def refused():
        try:
            await backend.list_jobs()
        except BackendError as exc:
            return str(exc)

    message = await async_wait_until(refused, what="forbidden jobs")
    assert message.startswith("listing jobs: HTTP 403") and "forbidden" in message


async def test_submit_to_an_absent_api_server_is_one_clear_error(emulator, backend):
    emulator.stop()
    with pytest.raises(BackendError, match=r"could not create Job ml/gpu-check-[0-9a-f]{8}: .*(refused|Connection)"):
        await backend.submit(load_spec(SAMPLES / "k8s-single.yaml"))
    assert emulator.mutations() == []


def follow_into(backend, job_id: str):
    """Follow ``job_id``'s log in a task: (task, log lines, status lines), filled as they come."""
    seen: list[str] = []
    statuses: list[str] = []

    async def follow():
        async for line in backend.stream_logs(job_id, follow=True):
            (statuses if line.status else seen).append(line.text)

    return asyncio.create_task(follow()), seen, statuses


def assert_reconnected(statuses: list[str]) -> None:
    """The stream said it was reconnecting, and, last, that it had (a retry while the server was
    still away may add a pair)."""
    words = [s.split(" ")[0] for s in statuses]
    assert words[0] == "reconnecting…" and words[-1] == "reconnected:" and "reconnected:" in words, statuses


async def test_a_followed_log_resumes_after_the_api_server_returns_without_repeating_lines(emulator, backend):
    emulator.put("jobs", make_job("long", NS))
    emulator.put("pods", make_pod("long-1", NS, node="gpu-a", job="long"))
    emulator.write_log(NS, "long-1", "line a")
    await backend.list_jobs()
    task, seen, statuses = follow_into(backend, "ml/long")
    await async_wait_until(lambda: seen == ["line a"], what="first line")
    emulator.stop()
    emulator.write_log(NS, "long-1", "line b")  # written while we cannot see it
    await async_wait_until(lambda: statuses, what="the stream to see the server gone")
    emulator.start()
    await async_wait_until(lambda: seen == ["line a", "line b"], what="resumed")
    emulator.write_log(NS, "long-1", "line c")
    await async_wait_until(lambda: seen == ["line a", "line b", "line c"], what="live again")
    emulator.set_pod_phase(NS, "long-1", "Succeeded")
    emulator.patch("jobs", NS, "long", {"status": {"conditions": [{"type": "Complete", "status": "True"}]}})
    backend.invalidate()
    await asyncio.wait_for(task, 15)
    assert seen == ["line a", "line b", "line c"]
    assert_reconnected(statuses)


async def test_a_resumed_log_reaches_back_on_the_clusters_clock_not_ours(emulator, backend, monkeypatch):
    monkeypatch.setattr(logs, "RESUME_SLACK", 0)  # the reach alone, no margin to hide a wrong clock
    emulator.clock_skew = 3600.0  # the cluster's clock an hour ahead of ours

    def ago(seconds: float) -> str:
        return (emulator.now() - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%f000Z")

    emulator.put("jobs", make_job("skewed", NS))
    emulator.put("pods", make_pod("skewed-1", NS, node="gpu-a", job="skewed"))
    emulator.write_log(NS, "skewed-1", "line a", stamp=ago(8))
    await backend.list_jobs()
    task, seen, statuses = follow_into(backend, "ml/skewed")
    await async_wait_until(lambda: seen == ["line a"], what="first line")
    emulator.stop()
    emulator.write_log(NS, "skewed-1", "line b", stamp=ago(5))  # while away, 5 s ago on the cluster's clock
    await async_wait_until(lambda: statuses, what="the stream to see the server gone")
    emulator.start()
    # Counted on our clock, the last line shown would be an hour in the future: a reach of 1 s, line b lost.
    await async_wait_until(lambda: seen == ["line a", "line b"], what="line b, written while away")
    emulator.set_pod_phase(NS, "skewed-1", "Succeeded")
    emulator.patch("jobs", NS, "skewed", {"status": {"conditions": [{"type": "Complete", "status": "True"}]}})
    backend.invalidate()
    await asyncio.wait_for(task, 15)
    assert seen == ["line a", "line b"]


async def test_a_log_stream_cut_mid_line_resumes_without_loss_or_repeats_in_a_shared_timestamp(emulator, backend):
    emulator.put("jobs", make_job("burst", NS))
    emulator.put("pods", make_pod("burst-1", NS, node="gpu-a", job="burst"))
    stamp = "2026-11-29T12:00:00.100000000Z"  # a burst: several lines in one clock tick
    emulator.write_log(NS, "burst-1", "line 1", "line 2", "line 3", stamp=stamp)
    await backend.list_jobs()
    task, seen, statuses = follow_into(backend, "ml/burst")
    await async_wait_until(lambda: len(seen) == 3, what="first lines")
    emulator.cut_log_streams(after_bytes=len(f"{stamp} line 4\n{stamp} li"))  # the next write, mid-line
    emulator.write_log(NS, "burst-1", "line 4", "line 5", "line 6", stamp="2026-11-29T12:00:00.2Z")
    await async_wait_until(lambda: len(seen) >= 6, what="the rest after the cut")
    before_7 = int(datetime.now(timezone.utc).timestamp())  # line 7 is stamped now, by the emulator
    emulator.write_log(NS, "burst-1", "line 7")
    await async_wait_until(lambda: len(seen) >= 7, what="live again")
    emulator.set_pod_phase(NS, "burst-1", "Succeeded")
    emulator.patch("jobs", NS, "burst", {"status": {"conditions": [{"type": "Complete", "status": "True"}]}})
    backend.invalidate()
    await asyncio.wait_for(task, 15)
    assert seen == [f"line {i}" for i in range(1, 8)]
    assert_reconnected(statuses)
    # The resume after the cut reaches back to the burst's second at least (its lines were skipped as shown);
    # a later one (the stream closing as the pod ends, after line 7) reaches back to line 7's second at least.
    resumes = [q for q in log_queries(emulator) if "sinceSeconds" in q]
    burst = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc).timestamp()
    now = datetime.now(timezone.utc).timestamp()
    assert resumes and now - int(resumes[0]["sinceSeconds"][0]) <= burst, resumes
    assert all(now - int(q["sinceSeconds"][0]) <= before_7 for q in resumes[1:]), resumes


async def test_a_create_whose_answer_is_lost_and_then_the_server_is_gone_is_unknown_and_a_retry_finds_it(
    emulator, kubeconfig
):
    from yanflow_tui.errors import SubmitUnknown

    backend = KubernetesBackend(cluster(kubeconfig), request_timeout=0.5)
    spec = load_spec(SAMPLES / "k8s-single.yaml")
    try:
        emulator.create_delay["jobs"] = 2.0  # stored at once, answered after the client gave up...

        async def vanish():  # ...and the API server is gone before the client tries again
            await async_wait_until(lambda: emulator.objects("jobs"), what="the job stored")
            emulator.stop()

        stopper = asyncio.create_task(vanish())
        with pytest.raises(SubmitUnknown) as caught:
            await backend.submit(spec)
        await stopper
        assert "could not create" not in str(caught.value) and caught.value.tag in str(caught.value)
        emulator.start()
        job_id = await backend.submit(spec, tag=caught.value.tag)
    finally:
        await backend.close()
    jobs = emulator.objects("jobs")
    assert len(jobs) == 1 and job_id == f"{NS}/{jobs[0]['metadata']['name']}"
