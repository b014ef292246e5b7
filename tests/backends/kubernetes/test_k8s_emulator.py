"""The API emulator answers in real Kubernetes shapes: checked by the official client itself, which
deserialises every answer into its own model classes (V1PodList, V1Job, V1Status...) and runs its own
``watch.Watch`` over the event stream."""

from __future__ import annotations

import json

import pytest
import urllib3
from fakes.k8s_api import make_job, make_node, make_pod

NS = "ml"


@pytest.fixture
def api(kubeconfig):
    from kubernetes import client, config

    api_client = config.new_client_from_config(config_file=str(kubeconfig), persist_config=False)
    yield client.CoreV1Api(api_client), client.BatchV1Api(api_client), api_client
    api_client.close()


def deserialize(api_client, data: dict, klass: str):
    return api_client._ApiClient__deserialize(data, klass)


def test_lists_and_objects_deserialise_into_the_clients_models(emulator, api):
    core, batch, _ = api
    emulator.add_node("gpu-a", 8)
    emulator.put("pods", make_pod("p1", NS, node="gpu-a", job="j1"))
    emulator.put("pods", make_pod("p2", NS, node="gpu-a", job="j2", phase="Pending", unschedulable="no GPUs"))
    emulator.put("pods", make_pod("p3", "other", node="gpu-a"))
    pods = core.list_namespaced_pod(NS, _request_timeout=5)
    assert [p.metadata.name for p in pods.items] == ["p1", "p2"]
    assert int(pods.metadata.resource_version) == emulator.rv
    assert pods.items[1].status.conditions[0].reason == "Unschedulable"
    assert [p.metadata.name for p in core.list_namespaced_pod(NS, label_selector="job-name=j2").items] == ["p2"]
    assert [
        p.metadata.name for p in core.list_pod_for_all_namespaces(field_selector="metadata.namespace=other").items
    ] == ["p3"]
    node = core.read_node("gpu-a", _request_timeout=5)
    assert node.status.allocatable["nvidia.com/gpu"] == "8"
    assert core.list_node().items[0].metadata.labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB"


def test_create_conflict_and_not_found_are_status_objects(emulator, api):
    from kubernetes.client.rest import ApiException

    _, batch, api_client = api
    raw = batch.create_namespaced_job(NS, make_job("train", NS), _request_timeout=5, _preload_content=False)
    assert raw.status == 201
    created = deserialize(api_client, json.loads(raw.data), "V1Job")
    assert created.metadata.uid and created.metadata.namespace == NS
    assert created.spec.template.metadata.labels["batch.kubernetes.io/job-name"] == "train"
    with pytest.raises(ApiException) as conflict:
        batch.create_namespaced_job(NS, make_job("train", NS), _request_timeout=5)
    status = deserialize(api_client, json.loads(conflict.value.body), "V1Status")
    assert (conflict.value.status, status.reason, status.code) == (409, "AlreadyExists", 409)
    with pytest.raises(ApiException) as missing:
        batch.read_namespaced_job("nope", NS, _request_timeout=5)
    assert deserialize(api_client, json.loads(missing.value.body), "V1Status").reason == "NotFound"
    batch.delete_namespaced_job("train", NS, propagation_policy="Background", _request_timeout=5)
    assert emulator.get("jobs", NS, "train") is None


def test_watch_streams_typed_events_replays_from_a_version_and_expires_with_410(emulator, api):
    from kubernetes import watch
    from kubernetes.client.rest import ApiException

    core, _, _ = api
    emulator.put("pods", make_pod("p1", NS))
    start = core.list_namespaced_pod(NS).metadata.resource_version
    emulator.put("pods", make_pod("p2", NS))
    emulator.patch("pods", NS, "p1", {"status": {"phase": "Succeeded"}})
    emulator.remove("pods", NS, "p2")
    seen = []
    w = watch.Watch()
    for event in w.stream(core.list_namespaced_pod, NS, resource_version=start, timeout_seconds=1):
        seen.append((event["type"], event["object"].metadata.name, event["object"].status.phase))
        if len(seen) == 3:
            w.stop()
    assert seen == [("ADDED", "p2", "Running"), ("MODIFIED", "p1", "Succeeded"), ("DELETED", "p2", "Running")]
    watches = [p for m, p in emulator.requests if "watch=" in p]
    assert watches and "watch=true" in watches[-1].lower()  # either spelling is served as a watch (36: True)

    emulator.compact()
    with pytest.raises(ApiException) as gone:
        for _ in watch.Watch().stream(core.list_namespaced_pod, NS, resource_version=start, timeout_seconds=1):
            pass
    assert gone.value.status == 410


def test_a_pod_of_two_containers_logs_one_named_container_as_the_api_server_does(emulator, api):
    from kubernetes.client.rest import ApiException

    core, _, _ = api
    pod = make_pod("p2", NS, node="gpu-a")
    pod["spec"]["containers"].append({"name": "proxy", "image": "envoyproxy/envoy:v1.31"})
    emulator.put("pods", pod)
    emulator.write_log(NS, "p2", "main line")
    emulator.write_log(NS, "p2", "proxy line", container="proxy")
    with pytest.raises(ApiException) as unnamed:
        core.read_namespaced_pod_log("p2", NS, _request_timeout=5)
    assert unnamed.value.status == 400
    assert json.loads(unnamed.value.body)["message"] == (
        "a container name must be specified for pod p2, choose one of: [main proxy]"
    )
    with pytest.raises(ApiException) as unknown:
        core.read_namespaced_pod_log("p2", NS, container="envoy", _request_timeout=5)
    assert unknown.value.status == 400 and "container envoy is not valid for pod p2" in unknown.value.body
    for container, text in (("main", b"main line\n"), ("proxy", b"proxy line\n")):
        raw = core.read_namespaced_pod_log("p2", NS, container=container, _preload_content=False, _request_timeout=5)
        assert raw.data == text


def test_logs_events_and_restart_on_the_same_port(emulator, api):
    core, _, api_client = api
    emulator.put("pods", make_pod("p1", NS, node="gpu-a"))
    emulator.write_log(NS, "p1", "line 1", "line 2")
    # (the client's preloaded ``str`` answer is ``str(bytes)`` in kubernetes 36, so read raw bytes,
    # as the backend does)
    raw = core.read_namespaced_pod_log("p1", NS, _preload_content=False, _request_timeout=5)
    assert raw.data == b"line 1\nline 2\n" and raw.headers["Content-Type"].startswith("text/plain")
    stamped = (
        core.read_namespaced_pod_log("p1", NS, timestamps=True, _preload_content=False, _request_timeout=5)
        .data.decode()
        .splitlines()
    )
    assert stamped[0].endswith("Z line 1")
    tailed = core.read_namespaced_pod_log("p1", NS, tail_lines=1, _preload_content=False, _request_timeout=5)
    assert tailed.data == b"line 2\n"
    recent = core.read_namespaced_pod_log("p1", NS, since_seconds=60, _preload_content=False, _request_timeout=5)
    assert recent.data == b"line 1\nline 2\n"
    emulator.put(
        "events",
        {
            "metadata": {"name": "p1.1", "namespace": NS},
            "involvedObject": {"kind": "Pod", "name": "p1", "namespace": NS},
            "reason": "Pulled",
            "type": "Normal",
            "message": "pulled",
            "lastTimestamp": "2026-11-29T12:00:00Z",
        },
    )
    events = core.list_namespaced_event(NS, field_selector="involvedObject.name=p1", _request_timeout=5)
    assert [e.reason for e in events.items] == ["Pulled"]
    assert core.list_namespaced_event(NS, field_selector="involvedObject.name=p9").items == []
    port = emulator.port
    emulator.stop()
    with pytest.raises(urllib3.exceptions.HTTPError):  # connection refused, after the client's retries
        core.list_namespaced_pod(NS, _request_timeout=2)
    emulator.start()
    assert emulator.port == port and [p.metadata.name for p in core.list_namespaced_pod(NS).items] == ["p1"]
    assert deserialize(api_client, make_node("x"), "V1Node").status.capacity["nvidia.com/gpu"] == "8"


def test_pod_metrics_are_served_as_metrics_server_serves_them_and_absent_without_it(emulator, api):
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    metrics = client.CustomObjectsApi(api[2])
    emulator.put("pods", make_pod("a-0", NS, node="n1", job="a"))
    emulator.put("pods", make_pod("b-0", NS, node="n1", job="b"))
    emulator.set_pod_metrics(NS, "a-0", {"main": {"cpu": "12345678n", "memory": "2048Ki"}}, window="10.5s")
    emulator.set_pod_metrics(NS, "b-0", {"main": {"cpu": "1", "memory": "1Mi"}})
    emulator.set_pod_metrics(NS, "gone-0", {"main": {"cpu": "1", "memory": "1Mi"}})  # no such pod: not served
    with pytest.raises(ApiException) as absent:  # no metrics-server: the group is not there
        metrics.list_namespaced_custom_object("metrics.k8s.io", "v1beta1", NS, "pods")
    assert absent.value.status == 404
    emulator.metrics_server = True
    listed = metrics.list_namespaced_custom_object("metrics.k8s.io", "v1beta1", NS, "pods")
    assert listed["kind"] == "PodMetricsList" and [m["metadata"]["name"] for m in listed["items"]] == ["a-0", "b-0"]
    one = metrics.get_namespaced_custom_object("metrics.k8s.io", "v1beta1", NS, "pods", "a-0")
    assert (one["kind"], one["window"], one["containers"]) == (
        "PodMetrics",
        "10.5s",
        [{"name": "main", "usage": {"cpu": "12345678n", "memory": "2048Ki"}}],
    )
    chosen = metrics.list_namespaced_custom_object("metrics.k8s.io", "v1beta1", NS, "pods", label_selector="job-name=b")
    assert [m["metadata"]["name"] for m in chosen["items"]] == ["b-0"]
    everywhere = metrics.list_cluster_custom_object("metrics.k8s.io", "v1beta1", "pods")
    assert len(everywhere["items"]) == 2
    with pytest.raises(ApiException) as missing:
        metrics.get_namespaced_custom_object("metrics.k8s.io", "v1beta1", NS, "pods", "gone-0")
    assert missing.value.status == 404
