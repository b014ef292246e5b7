"""Read-only asks a cluster for read permissions only (issue 28 point 2): a read-only console swept
through (``sweephelpers.sweep``: every screen and key, every job's detail with ``t``, ``f``, ``l``..., the
palette's commands) sends the Kubernetes API server only requests a view-only user may make. Each
request the emulator received is checked as RBAC sees it (verb, resource, subresource) against the
built-in ``view`` ClusterRole: get/list/watch, no secrets, no ``pods/exec``, ``pods/portforward`` or
``pods/attach`` (the old code sent exec for every detail: curves' file lookup)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from fakes.k8s_api import make_job, make_pod
from k8shelpers import cluster
from sweephelpers import sweep
from uihelpers import make_app
from waiting import wait_for

from yanflow_tui.screens.detail import JobDetailScreen
from yanflow_tui.screens.queue import JobTable
from yanflow_tui.screens.widgets.curves import CurvesView

NS = "ml"
READ_VERBS = frozenset({"get", "list", "watch"})
# Kubernetes' built-in ``view`` ClusterRole (the core and batch groups, which the console reads): resource
# or resource/subresource -> verbs. Its other groups (apps, autoscaling, policy...) the console never asks.
VIEW_ROLE: dict[str, frozenset[str]] = {
    name: READ_VERBS
    for name in (
        "configmaps",
        "endpoints",
        "persistentvolumeclaims",
        "persistentvolumeclaims/status",
        "pods",
        "replicationcontrollers",
        "replicationcontrollers/scale",
        "serviceaccounts",
        "services",
        "services/status",
        "bindings",
        "events",
        "limitranges",
        "namespaces/status",
        "pods/log",
        "pods/status",
        "replicationcontrollers/status",
        "resourcequotas",
        "resourcequotas/status",
        "namespaces",
        "jobs",
        "jobs/status",
        "cronjobs",
        "cronjobs/status",
    )
}
# Nodes are cluster-scoped and not in ``view``: the GPU map reads them where a role grants it (a
# ``get/list/watch nodes`` ClusterRole beside ``view``); reading them is no write either way.
NODE_READER = {"nodes": READ_VERBS}
NON_RESOURCE = {"/version", "/api", "/apis"}  # discovery: every authenticated user may read it


def rbac_request(method: str, path_qs: str) -> tuple[str, str, str] | None:
    """(verb, resource, subresource) of one API request as the API server authorizes it; None for a
    non-resource URL (discovery)."""
    url = urlsplit(path_qs)
    parts = [p for p in url.path.split("/") if p]
    if url.path in NON_RESOURCE or not parts:
        return None
    rest = parts[2:] if parts[0] == "api" else parts[3:]
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) != 2:
        rest = rest[2:]
    resource, name, sub = rest[0], rest[1] if len(rest) > 1 else "", rest[2] if len(rest) > 2 else ""
    if sub in ("exec", "portforward", "attach"):
        return "create", resource, sub  # a websocket upgrade (GET) is authorized as create
    query = parse_qs(url.query)
    verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method)
    if verb is None:
        verb = "get" if name else ("watch" if query.get("watch", [""])[0].lower() in ("true", "1") else "list")
    return verb, resource, sub


def allowed(verb: str, resource: str, sub: str, role: dict[str, frozenset[str]]) -> bool:
    return verb in role.get(f"{resource}/{sub}" if sub else resource, frozenset())


def test_the_rbac_mapping_sees_exec_and_writes():
    role = VIEW_ROLE | NODE_READER
    assert rbac_request("GET", "/api/v1/namespaces/ml/pods/p/exec?command=sh") == ("create", "pods", "exec")
    assert not allowed("create", "pods", "exec", role)
    assert rbac_request("GET", "/api/v1/namespaces/ml/pods/p/log?follow=true") == ("get", "pods", "log")
    assert allowed("get", "pods", "log", role)
    assert rbac_request("GET", "/api/v1/namespaces/ml/pods?watch=true") == ("watch", "pods", "")
    assert rbac_request("DELETE", "/apis/batch/v1/namespaces/ml/jobs/j") == ("delete", "jobs", "")
    assert rbac_request("GET", "/api/v1/namespaces") == ("list", "namespaces", "")
    assert rbac_request("GET", "/api/v1/namespaces/ml/secrets/s") == ("get", "secrets", "")
    assert not allowed("get", "secrets", "", role)


def seed(emulator) -> None:
    """A running job (two pods), a pending one and a finished one, on one GPU node."""
    emulator.add_node("gpu-a", 8)
    emulator.put("jobs", make_job("train", NS))
    emulator.put("pods", make_pod("train-0", NS, node="gpu-a", gpus=4, job="train", index=0))
    emulator.put("pods", make_pod("train-1", NS, node="gpu-a", gpus=4, job="train", index=1))
    emulator.put("jobs", make_job("waits", NS))
    emulator.put("pods", make_pod("waits-0", NS, gpus=2, job="waits", phase="Pending"))
    emulator.put("jobs", make_job("done", NS))
    emulator.put("pods", make_pod("done-0", NS, node="gpu-a", gpus=1, job="done", phase="Succeeded"))


async def test_a_read_only_sweep_asks_kubernetes_for_view_permissions_only(home, emulator, kubeconfig, monkeypatch):
    monkeypatch.setenv("EDITOR", "true")  # ``v`` in a detail opens the raw spec in it
    seed(emulator)
    app = make_app(cluster(kubeconfig), read_only=True)
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_for(pilot, lambda: len(app.screen.query_one(JobTable).row_keys) >= 3, what="the jobs")
        done = await sweep(pilot, app)
    assert len(done["details"]) >= 3 and done["palette"], done
    requests = [(m, p, rbac_request(m, p)) for m, p in emulator.requests]
    denied = sorted(
        {f"{m} {urlsplit(p).path} -> {r}" for m, p, r in requests if r and not allowed(*r, VIEW_ROLE | NODE_READER)}
    )
    assert not denied, "a view-only user is refused:\n" + "\n".join(denied)
    assert emulator.streams.execs == [] and emulator.streams.forwards == []
    seen = {r for _, _, r in requests if r}
    assert ("get", "pods", "log") in seen and ("watch", "pods", "") in seen  # the sweep did read (logs, the watch)


async def test_read_only_detail_says_curves_need_exec_and_sends_none(home, emulator, kubeconfig):
    seed(emulator)
    app = make_app(cluster(kubeconfig), read_only=True)
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_for(pilot, lambda: "k8s/ml/train" in app.screen.query_one(JobTable).row_keys, what="the jobs")
        app.screen.query_one(JobTable).move_cursor_to_key("k8s/ml/train")
        await pilot.pause()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen), what="the detail")
        curves = app.screen.query_one(CurvesView)
        assert curves.display
        text = str(curves.content)
        assert "off in read-only mode" in text and "pods/exec" in text, text
        assert not app.screen.check_action("files", ())  # ``f``: listing needs exec too
        await pilot.press("t")  # TensorBoard: refused by the gate, nothing sent
        await pilot.pause(0.5)
    assert emulator.streams.execs == [] and emulator.streams.forwards == []
    assert not [p for _, p in emulator.requests if "/exec" in p or "/portforward" in p]
