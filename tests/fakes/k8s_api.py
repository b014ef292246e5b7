"""A small stateful Kubernetes API server emulator over real HTTP (aiohttp), for tests and benchmarks.

It behaves like the real API server where our backend depends on it: 201 on create, 409/404 as
``Status`` objects, numeric resourceVersions, list + watch (``watch=true|True|1``) with newline-
delimited events, ``resourceVersion`` replay and 410 Gone (an ERROR event carrying a Status) once
history is compacted, ``labelSelector`` / ``fieldSelector``, ``timeoutSeconds``, pod logs (with
``container`` (required when a pod has several, as the real server), ``follow``, ``previous``,
``timestamps``, ``sinceSeconds``, ``sinceTime``, ``tailLines``), events, the metrics API
(``metrics.k8s.io/v1beta1`` PodMetrics, as metrics-server serves it: only with ``metrics_server`` on,
else the group answers 404 as on a cluster without it), background deletion of a
Job's pods, and the websocket subresources the official client speaks (``fakes.k8s_streams``): exec
(``v4.channel.k8s.io``, the command run for real in a folder standing for the pod) and port-forward
(``portforward.k8s.io``, to a real local TCP port per pod port). Every request is logged as (method,
path). It runs in its own thread and event loop and can be stopped and started again on the same
port, keeping its state. ``clock_skew`` sets the cluster's clock ahead of this machine's (seconds;
negative: behind): its log timestamps, ``sinceSeconds`` and the ``Date`` of a log answer follow it.

Run it alone (for benchmarks): ``python tests/fakes/k8s_api.py --port 0 --nodes 1250 --pods 10000``.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import email.utils
import json
import socket
import sys
import threading
import time
import uuid
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from typing import Any

from aiohttp import web

try:
    from fakes.k8s_streams import PodStreams
except ImportError:  # run alone as a script: its folder is on the path
    from k8s_streams import PodStreams  # type: ignore[no-redef]

# resource -> (group path prefix, plural, namespaced, kind)
KUEUE = "/apis/kueue.x-k8s.io/v1beta1"
RESOURCES = {
    "nodes": ("/api/v1", "nodes", False, "Node"),
    "pods": ("/api/v1", "pods", True, "Pod"),
    "services": ("/api/v1", "services", True, "Service"),
    "events": ("/api/v1", "events", True, "Event"),
    "jobs": ("/apis/batch/v1", "jobs", True, "Job"),
    "resourcequotas": ("/api/v1", "resourcequotas", True, "ResourceQuota"),
    # Kueue's CRDs: served only while ``kueue`` is True (a cluster without Kueue answers 404 there)
    "workloads": (KUEUE, "workloads", True, "Workload"),
    "localqueues": (KUEUE, "localqueues", True, "LocalQueue"),
}
API_VERSION = {
    "nodes": "v1",
    "pods": "v1",
    "services": "v1",
    "events": "v1",
    "jobs": "batch/v1",
    "resourcequotas": "v1",
    "workloads": "kueue.x-k8s.io/v1beta1",
    "localqueues": "kueue.x-k8s.io/v1beta1",
}
JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")


def now_text(offset: float = 0.0) -> str:
    return (datetime.now(timezone.utc) + timedelta(seconds=offset)).strftime("%Y-%m-%dT%H:%M:%SZ")


def status(code: int, reason: str, message: str, details: dict | None = None) -> dict:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": details or {},
        "code": code,
    }


def _get(obj: dict, path: str):
    for part in path.split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def label_match(obj: dict, selector: str) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k.strip()) == v.strip():
                return False
        elif "=" in term:
            k, v = term.replace("==", "=").split("=", 1)
            if labels.get(k.strip()) != v.strip():
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def field_match(obj: dict, selector: str) -> bool:
    for term in filter(None, (t.strip() for t in selector.split(","))):
        negate = "!=" in term
        k, v = term.split("!=" if negate else "=", 1)
        k = k.replace("==", "")
        value = _get(obj, k.strip())
        value = "" if value is None else str(value)
        if (value == v.strip()) == negate:
            return False
    return True


class K8sEmulator:
    """The emulated API server. Mutate it from tests with ``put``/``patch``/``remove`` (thread-safe)."""

    def __init__(self, port: int = 0, history: int = 100_000, ssl_context=None):
        self.port = port or _free_port()
        self.ssl_context = ssl_context  # serve HTTPS with it (client certificates are not checked)
        self.history_limit = history
        self.store: dict[str, dict[tuple[str, str], dict]] = {r: {} for r in RESOURCES}
        self.rv = 1000
        self.history: list[tuple[int, str, bytes, dict]] = []  # (rv, resource, event line, object)
        self.compacted = 0  # watches from a resourceVersion below this get 410 Gone
        self.gone_as_http = False  # False: an ERROR event carrying a 410 Status (as the real server); True: HTTP 410
        self.requests: list[tuple[str, str]] = []
        self.raw_requests: list[tuple[str, str]] = []  # (method, path and query as sent, still percent-encoded)
        self.forbidden: set[str] = set()  # resources this "user" may not touch (403 Forbidden); "namespaces" too
        self.forbidden_cluster_wide: set[str] = set()  # resources this "user" may list only within a namespace
        self.namespaces: set[str] = set()  # listed by GET /api/v1/namespaces, with those of the stored objects
        self.authorizations: set[str] = set()  # Authorization headers seen (tests of auth plugins)
        # (namespace, pod, container, previous) -> [(stamp, line)]
        self.logs: dict[tuple[str, str, str, bool], list[tuple[str, str]]] = defaultdict(list)
        self.log_cut: int | None = None  # cut_log_streams(): bytes the next log write sends before dropping
        self.clock_skew = 0.0  # the cluster's clock minus this machine's, in seconds
        self.create_delay: dict[str, float] = {}  # resource -> seconds; the next create sleeps after storing
        self.kueue = False  # whether Kueue's CRDs (Workload, LocalQueue) are installed and served
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._watchers: set[asyncio.Queue] = set()
        self._log_waiters: set[asyncio.Event] = set()
        self._streams: dict[int, web.Request] = {}  # open streaming requests, cut on stop
        self.running = False
        self.streams = PodStreams(self)  # exec and port-forward: see ``fakes.k8s_streams``
        self.metrics_server = False  # serve metrics.k8s.io (else 404: the group is not installed)
        # (namespace, pod) -> (window, [(container, {"cpu": "250m", "memory": "64Mi"})]): ``set_pod_metrics``
        self.pod_metrics: dict[tuple[str, str], tuple[str, list[tuple[str, dict[str, str]]]]] = {}

    # -- lifecycle ---------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"{'https' if self.ssl_context else 'http'}://127.0.0.1:{self.port}"

    def start(self) -> K8sEmulator:
        if self.loop is None:
            ready = threading.Event()

            def run() -> None:
                self.loop = asyncio.new_event_loop()
                asyncio.set_event_loop(self.loop)
                ready.set()
                self.loop.run_forever()

            self._thread = threading.Thread(target=run, name="k8s-emulator", daemon=True)
            self._thread.start()
            ready.wait()
        self._call(self._start())
        return self

    def stop(self) -> None:
        """Stop serving (connections are cut; watches end); state is kept for ``start``."""
        if self.running:
            self._call(self._stop())

    def shutdown(self) -> None:
        self.stop()
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(5)
            self.loop.close()
            self.loop = None

    def _call(self, coro, timeout: float = 30):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def _start(self) -> None:
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, reuse_address=True, ssl_context=self.ssl_context)
        await site.start()
        self.running = True

    async def _stop(self) -> None:
        self.running = False
        for queue in list(self._watchers):
            queue.put_nowait(None)
        for waiter in list(self._log_waiters):
            waiter.set()
        for request in list(self._streams.values()):
            if request.transport is not None:
                request.transport.abort()
        await self._runner.cleanup()
        self._runner = None

    # -- state changes (from tests; thread-safe) ---------------------------------------------------
    def set_pod_metrics(self, namespace: str, pod: str, usage: dict[str, dict[str, str]], window: str = "30s") -> None:
        """What metrics-server last scraped of a pod: each container's usage (``cpu`` in cores, ``m`` or
        ``n``; ``memory`` with its unit), averaged over ``window``. Served while the pod exists."""
        self.pod_metrics[(namespace, pod)] = (window, list(usage.items()))

    def put(self, resource: str, obj: dict) -> dict:
        """Create or replace an object (ADDED/MODIFIED event)."""
        return self._call(self._aput(resource, copy.deepcopy(obj)))

    def patch(self, resource: str, namespace: str, name: str, changes: dict) -> dict:
        """Deep-merge ``changes`` into an object (MODIFIED event)."""

        async def run():
            obj = copy.deepcopy(self.store[resource][(namespace, name)])
            _merge(obj, changes)
            return await self._aput(resource, obj)

        return self._call(run())

    def remove(self, resource: str, namespace: str, name: str) -> None:
        self._call(self._aremove(resource, namespace, name))

    def bulk(self, resource: str, objects: list[dict]) -> None:
        """Many puts in one go (one loop turn), as a burst of events."""

        async def run():
            for obj in objects:
                await self._aput(resource, obj, notify=False)
            self._wake_watchers()

        self._call(run())

    def end_watches(self) -> None:
        """End every open watch stream cleanly (as the server does at timeoutSeconds)."""

        async def run():
            for queue in list(self._watchers):
                queue.put_nowait(None)

        self._call(run())

    def compact(self) -> None:
        """Forget the event history: watches from any older resourceVersion now get 410 Gone."""

        async def run():
            self.compacted = self.rv + 1
            self.history.clear()

        self._call(run())

    def get(self, resource: str, namespace: str, name: str) -> dict | None:
        obj = self.store[resource].get((namespace, name))
        return copy.deepcopy(obj) if obj is not None else None

    def objects(self, resource: str) -> list[dict]:
        return [copy.deepcopy(o) for o in self.store[resource].values()]

    def write_log(
        self,
        namespace: str,
        pod: str,
        *lines: str,
        previous: bool = False,
        stamp: str | None = None,
        container: str = "",
    ) -> None:
        """Append lines to a pod's log, stamped now (or all with ``stamp``, as a burst in one tick), of
        ``container`` (default: the pod's first)."""

        async def run():
            name = container or _containers(self.store["pods"].get((namespace, pod)))[0]
            for line in lines:
                self.logs[(namespace, pod, name, previous)].append((stamp or _nano(self.now()), line))
            for waiter in list(self._log_waiters):
                waiter.set()

        self._call(run())

    def now(self) -> datetime:
        """The cluster's time (``clock_skew`` ahead of this machine's)."""
        return datetime.now(timezone.utc) + timedelta(seconds=self.clock_skew)

    def cut_log_streams(self, after_bytes: int = 0) -> None:
        """Fault switch: the next write to any open pod log stream sends only its first
        ``after_bytes`` bytes (mid-line, if that is where they end), then the connection drops."""
        self.log_cut = after_bytes

    def mutations(self) -> list[tuple[str, str]]:
        return [(m, p) for m, p in self.requests if m in ("POST", "PUT", "PATCH", "DELETE")]

    # -- convenience objects -----------------------------------------------------------------------
    def add_node(
        self,
        name: str,
        gpus: int = 8,
        product: str = "NVIDIA-A100-SXM4-80GB",
        ready: bool = True,
        unschedulable: bool = False,
        taints: list | None = None,
        labels: dict | None = None,
    ) -> dict:
        return self.put("nodes", make_node(name, gpus, product, ready, unschedulable, taints, labels))

    def run_job_pods(self, namespace: str, job: str, nodes: list[str], phase: str = "Running") -> list[dict]:
        """Act as the Job controller + scheduler: create the job's pods from its template, bound to
        ``nodes`` (one per index), in ``phase``."""
        spec = self.store["jobs"][(namespace, job)]["spec"]
        count = spec.get("parallelism") or 1
        indexed = spec.get("completionMode") == "Indexed"
        pods = []
        for i in range(count):
            template = copy.deepcopy(spec["template"])
            meta = template.setdefault("metadata", {})
            meta["name"] = f"{job}-{i}-{uuid.uuid4().hex[:5]}" if indexed else f"{job}-{uuid.uuid4().hex[:5]}"
            meta["namespace"] = namespace
            meta.setdefault("labels", {}).update({"job-name": job, "batch.kubernetes.io/job-name": job})
            if indexed:
                meta.setdefault("annotations", {})["batch.kubernetes.io/job-completion-index"] = str(i)
                meta["labels"]["batch.kubernetes.io/job-completion-index"] = str(i)
                template["spec"]["hostname"] = f"{job}-{i}"
            meta["ownerReferences"] = [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": job,
                    "uid": self.store["jobs"][(namespace, job)]["metadata"]["uid"],
                    "controller": True,
                }
            ]
            template["spec"]["nodeName"] = nodes[i % len(nodes)] if nodes else None
            template["status"] = pod_status(phase)
            pods.append(self.put("pods", template))
        self.patch("jobs", namespace, job, {"status": {"active": count, "startTime": now_text()}})
        return pods

    # -- the scheduler and the quota admission, as kube-scheduler and the API server do them --------
    def add_quota(self, namespace: str, name: str, hard: dict[str, str]) -> dict:
        """A ResourceQuota: pods whose requests would go over ``hard`` are refused at create."""
        return self.put("resourcequotas", make_quota(name, namespace, hard))

    def quota_refusal(self, namespace: str, pod: dict) -> str:
        """The API server's refusal of ``pod`` over a ResourceQuota of its namespace ("" when it fits):
        ``pods "x" is forbidden: exceeded quota: q, requested: requests.nvidia.com/gpu=2, used: ...``."""
        asked = _pod_requests(pod)
        for (ns, quota_name), quota in list(self.store["resourcequotas"].items()):
            if ns != namespace:
                continue
            used: dict[str, int] = defaultdict(int)
            for (pod_ns, _), other in self.store["pods"].items():
                if pod_ns == namespace and (other.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                    for key, value in _pod_requests(other).items():
                        used[key] += value
            over = []
            for key, limit in (quota.get("spec") or {}).get("hard", {}).items():
                name = key if key.startswith(("requests.", "limits.")) or key == "pods" else f"requests.{key}"
                want = 1 if name == "pods" else asked.get(name, 0)
                if want and used[name] + want > _quantity(limit):
                    over.append((key, want, used[name], limit))
            if over:
                req = ",".join(f"{k}={w}" for k, w, _, _ in over)
                use = ",".join(f"{k}={u}" for k, _, u, _ in over)
                lim = ",".join(f"{k}={h}" for k, _, _, h in over)
                pod_name = (pod.get("metadata") or {}).get("name", "")
                return (
                    f'pods "{pod_name}" is forbidden: exceeded quota: {quota_name}, '
                    f"requested: {req}, used: {use}, limited: {lim}"
                )
        return ""

    def event(self, namespace: str, kind: str, name: str, reason: str, message: str, type_: str = "Warning") -> dict:
        """An Event about an object, as a controller records it."""
        return self.put(
            "events",
            {
                "metadata": {"name": f"{name}.{uuid.uuid4().hex[:12]}", "namespace": namespace},
                "involvedObject": {"kind": kind, "name": name, "namespace": namespace},
                "reason": reason,
                "message": message,
                "type": type_,
                "count": 1,
                "firstTimestamp": now_text(),
                "lastTimestamp": now_text(),
            },
        )

    def schedule_job(self, namespace: str, job: str) -> list[dict]:
        """Act as the Job controller and kube-scheduler together: each pod of the job's template is
        refused over a ResourceQuota (an Event ``FailedCreate`` on the Job, no pod), else created and
        bound to a node where it fits (GPUs free, taints tolerated), else left Pending with the
        scheduler's ``Unschedulable`` condition and a ``FailedScheduling`` Event, as the real ones do."""
        spec = self.store["jobs"][(namespace, job)]["spec"]
        pods = []
        for _ in range(spec.get("parallelism") or 1):
            template = copy.deepcopy(spec["template"])
            meta = template.setdefault("metadata", {})
            meta["name"] = f"{job}-{uuid.uuid4().hex[:5]}"
            meta["namespace"] = namespace
            meta.setdefault("labels", {}).update({"job-name": job, "batch.kubernetes.io/job-name": job})
            meta["ownerReferences"] = [
                {"apiVersion": "batch/v1", "kind": "Job", "name": job, "controller": True,
                 "uid": self.store["jobs"][(namespace, job)]["metadata"]["uid"]}
            ]  # fmt: skip
            refused = self.quota_refusal(namespace, template)
            if refused:
                self.event(namespace, "Job", job, "FailedCreate", f"Error creating: {refused}")
                continue
            node, why = self._fit(template)
            template["spec"]["nodeName"] = node
            template["status"] = pod_status("Running" if node else "Pending", unschedulable=why or None)
            pods.append(self.put("pods", template))
            if not node:
                self.event(namespace, "Pod", meta["name"], "FailedScheduling", why)
        self.patch("jobs", namespace, job, {"status": {"active": len(pods), "startTime": now_text()}})
        return pods

    def _fit(self, pod: dict) -> tuple[str | None, str]:
        """(the first node ``pod`` fits on, "") or (None, the scheduler's message why none does)."""
        nodes = sorted(self.store["nodes"].values(), key=lambda n: n["metadata"]["name"])
        wants = _pod_requests(pod).get("requests.nvidia.com/gpu", 0)
        tolerations = pod["spec"].get("tolerations") or []
        why: dict[str, int] = defaultdict(int)
        for node in nodes:
            name = node["metadata"]["name"]
            taint = next((t for t in node["spec"].get("taints") or () if not _tolerated(t, tolerations)), None)
            if taint is not None:
                why[f"node(s) had untolerated taint {{{taint['key']}: {taint.get('value', '')}}}"] += 1
                continue
            if node["spec"].get("unschedulable"):
                why["node(s) were unschedulable"] += 1
                continue
            total = _quantity(node["status"]["allocatable"].get("nvidia.com/gpu", "0"))
            busy = sum(
                _pod_requests(p).get("requests.nvidia.com/gpu", 0)
                for p in self.store["pods"].values()
                if p["spec"].get("nodeName") == name
                and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            )
            if wants and busy + wants > total:
                why["Insufficient nvidia.com/gpu"] += 1
                continue
            return name, ""
        parts = ", ".join(f"{count} {text}" for text, count in sorted(why.items()))
        total = len(nodes)
        return None, (
            f"0/{total} nodes are available: {parts}. preemption: 0/{total} nodes are available: "
            f"{total} Preemption is not helpful for scheduling."
        )

    # -- internals -----------------------------------------------------------------------------------
    async def _aput(self, resource: str, obj: dict, notify: bool = True) -> dict:
        meta = obj.setdefault("metadata", {})
        namespaced = RESOURCES[resource][2]
        if namespaced:
            meta.setdefault("namespace", "default")
        key = (meta.get("namespace", "") if namespaced else "", meta["name"])
        existed = key in self.store[resource]
        if existed:
            old = self.store[resource][key]["metadata"]
            meta.setdefault("uid", old.get("uid"))
            meta.setdefault("creationTimestamp", old.get("creationTimestamp"))
        else:
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", now_text())
        self.rv += 1
        meta["resourceVersion"] = str(self.rv)
        if resource in ("pods", "jobs", "nodes"):
            obj.setdefault("status", {})
        self.store[resource][key] = obj
        self._record(resource, "MODIFIED" if existed else "ADDED", obj, notify)
        return copy.deepcopy(obj)

    async def _aremove(self, resource: str, namespace: str, name: str) -> dict | None:
        obj = self.store[resource].pop((namespace if RESOURCES[resource][2] else "", name), None)
        if obj is None:
            return None
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self._record(resource, "DELETED", obj, True)
        return obj

    def _record(self, resource: str, kind: str, obj: dict, notify: bool) -> None:
        item = dict(obj, kind=RESOURCES[resource][3], apiVersion=API_VERSION[resource])
        line = json.dumps({"type": kind, "object": item}, separators=(",", ":")).encode() + b"\n"
        self.history.append((self.rv, resource, line, obj))
        if len(self.history) > self.history_limit:
            drop = len(self.history) - self.history_limit
            self.compacted = self.history[drop][0]
            del self.history[:drop]
        if notify:
            self._wake_watchers()

    def _wake_watchers(self) -> None:
        for queue in list(self._watchers):
            queue.put_nowait(True)

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((request.method, request.path_qs))
        self.raw_requests.append((request.method, request.raw_path))
        self.authorizations.add(request.headers.get("Authorization", ""))
        parts = [p for p in request.path.split("/") if p]
        # /api/v1/... or /apis/batch/v1/...
        if parts[:2] == ["api", "v1"]:
            rest = parts[2:]
        elif parts[:3] == ["apis", "batch", "v1"]:
            rest = parts[3:]
        elif "/" + "/".join(parts[:3]) == KUEUE and self.kueue:
            rest = parts[3:]
        elif parts == ["version"]:
            return web.json_response({"major": "1", "minor": "31", "gitVersion": "v1.31.0-emulated"})
        elif parts[:3] == ["apis", "metrics.k8s.io", "v1beta1"] and self.metrics_server:
            return self._metrics(request, parts[3:])
        else:
            return _status(404, "NotFound", f"the server could not find the requested resource ({request.path})")
        namespace = None
        if len(rest) >= 2 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        if rest == ["namespaces"] and namespace is None and request.method == "GET":
            if "namespaces" in self.forbidden:
                return _forbidden("namespaces", None)
            return web.json_response(self._namespace_list())
        if not rest or rest[0] not in RESOURCES:
            return _status(404, "NotFound", f"the server could not find the requested resource ({request.path})")
        resource, name, sub = rest[0], (rest[1] if len(rest) > 1 else None), (rest[2] if len(rest) > 2 else None)
        if resource in self.forbidden or (resource in self.forbidden_cluster_wide and namespace is None):
            return _forbidden(resource, namespace, request.method)
        group = "/" + "/".join(parts[:3]) if parts[0] == "apis" else "/api/v1"
        if RESOURCES[resource][0] != group:
            return _status(404, "NotFound", f"the server could not find the requested resource ({request.path})")
        if name is None:
            if request.method == "GET":
                q = request.query
                if q.get("watch", "").lower() in ("true", "1"):
                    return await self._watch(request, resource, namespace)
                return self._list(resource, namespace, q)
            if request.method == "POST" and namespace is not None:
                return await self._create(request, resource, namespace)
            return _status(405, "MethodNotAllowed", f"{request.method} not supported here")
        key = (namespace or "", name)
        if sub == "log" and resource == "pods" and request.method == "GET":
            return await self._log(request, namespace, name)
        if sub in ("exec", "portforward") and resource == "pods" and request.method in ("GET", "POST"):
            pod = self.store["pods"].get(key)
            if pod is None:
                return _not_found(resource, name)
            if sub == "exec":
                return await self.streams.exec(request, namespace or "", name, pod)
            return await self.streams.portforward(request, namespace or "", name, pod)
        if sub is not None:
            return _status(404, "NotFound", f"subresource {sub} not emulated")
        if request.method == "GET":
            obj = self.store[resource].get(key)
            if obj is None:
                return _not_found(resource, name)
            return web.json_response(_with_kind(resource, obj))
        if request.method == "DELETE":
            return await self._delete(request, resource, namespace or "", name)
        return _status(405, "MethodNotAllowed", f"{request.method} not emulated")

    def _metrics(self, request: web.Request, rest: list[str]) -> web.Response:
        """metrics.k8s.io/v1beta1: its resource list, and PodMetrics listed (by namespace or all, with
        ``labelSelector``) or read one by one, for the existing pods that have metrics."""
        if not rest:
            resources = [
                {"name": plural, "namespaced": plural == "pods", "kind": kind, "verbs": ["get", "list"]}
                for plural, kind in (("nodes", "NodeMetrics"), ("pods", "PodMetrics"))
            ]
            return web.json_response(
                {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "metrics.k8s.io/v1beta1",
                 "resources": resources}
            )  # fmt: skip
        namespace = None
        if len(rest) >= 2 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        if request.method != "GET" or not rest or rest[0] != "pods" or len(rest) > 2:
            return _status(404, "NotFound", f"the server could not find the requested resource ({request.path})")
        if "pods.metrics.k8s.io" in self.forbidden:
            return _forbidden("pods.metrics.k8s.io", namespace)
        items = [
            self._pod_metrics(pod, *self.pod_metrics[key])
            for key, pod in sorted(self.store["pods"].items())
            if key in self.pod_metrics and (namespace is None or key[0] == namespace)
        ]
        if len(rest) == 2:
            found = [m for m in items if m["metadata"]["name"] == rest[1]]
            return web.json_response(found[0]) if found else _not_found("pods.metrics.k8s.io", rest[1])
        if request.query.get("labelSelector"):
            items = [m for m in items if label_match(m, request.query["labelSelector"])]
        return web.json_response(
            {"kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "metadata": {}, "items": items}
        )

    def _pod_metrics(self, pod: dict, window: str, usage: list[tuple[str, dict[str, str]]]) -> dict:
        meta = pod.get("metadata") or {}
        return {
            "kind": "PodMetrics",
            "apiVersion": "metrics.k8s.io/v1beta1",
            "metadata": {
                "name": meta.get("name"),
                "namespace": meta.get("namespace"),
                "creationTimestamp": now_text(self.clock_skew),
                "labels": dict(meta.get("labels") or {}),
            },
            "timestamp": now_text(self.clock_skew),
            "window": window,
            "containers": [{"name": name, "usage": dict(values)} for name, values in usage],
        }

    def _namespace_list(self) -> dict:
        names = set(self.namespaces) | {ns for store in self.store.values() for ns, _ in store if ns}
        items = [{"metadata": {"name": n}, "status": {"phase": "Active"}} for n in sorted(names)]
        return {
            "kind": "NamespaceList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": str(self.rv)},
            "items": items,
        }

    def _list(self, resource: str, namespace: str | None, q) -> web.Response:
        items = [o for (ns, _), o in self.store[resource].items() if namespace is None or ns == namespace]
        if q.get("labelSelector"):
            items = [o for o in items if label_match(o, q["labelSelector"])]
        if q.get("fieldSelector"):
            items = [o for o in items if field_match(o, q["fieldSelector"])]
        body = {
            "kind": RESOURCES[resource][3] + "List",
            "apiVersion": API_VERSION[resource],
            "metadata": {"resourceVersion": str(self.rv)},
            "items": items,
        }
        return web.Response(body=json.dumps(body, separators=(",", ":")).encode(), content_type="application/json")

    async def _watch(self, request: web.Request, resource: str, namespace: str | None) -> web.StreamResponse:
        q = request.query
        rv_text = q.get("resourceVersion") or ""
        timeout = float(q.get("timeoutSeconds") or 1800)
        labels, fields = q.get("labelSelector"), q.get("fieldSelector")

        def wanted(obj: dict) -> bool:
            if namespace is not None and (obj.get("metadata") or {}).get("namespace") != namespace:
                return False
            return (not labels or label_match(obj, labels)) and (not fields or field_match(obj, fields))

        if self.gone_as_http and rv_text not in ("", "0") and int(rv_text) < self.compacted - 1:
            return _status(410, "Expired", f"too old resource version: {rv_text} ({self.compacted - 1})")
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        self._streams[id(request)] = request
        queue: asyncio.Queue = asyncio.Queue()
        self._watchers.add(queue)
        try:
            if rv_text in ("", "0"):
                lines = []
                for obj in self.store[resource].values():
                    if wanted(obj):
                        item = dict(obj, kind=RESOURCES[resource][3], apiVersion=API_VERSION[resource])
                        lines.append(json.dumps({"type": "ADDED", "object": item}).encode() + b"\n")
                position = self.rv
                if lines:
                    await response.write(b"".join(lines))
            else:
                position = int(rv_text)
                if position < self.compacted - 1:
                    gone = status(410, "Expired", f"too old resource version: {position} ({self.compacted - 1})")
                    await response.write(json.dumps({"type": "ERROR", "object": gone}).encode() + b"\n")
                    return response
            deadline = time.monotonic() + timeout
            while self.running:
                batch = []
                for rv, res, line, obj in self._history_after(position):
                    position = rv
                    if res == resource and wanted(obj):
                        batch.append(line)
                if batch:
                    await response.write(b"".join(batch))
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                try:
                    item = await asyncio.wait_for(queue.get(), left)
                except (TimeoutError, asyncio.TimeoutError):
                    break
                while item is not None and not queue.empty():
                    item = queue.get_nowait()
                if item is None:  # stop, or end_watches()
                    break
            return response
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        finally:
            self._watchers.discard(queue)
            self._streams.pop(id(request), None)

    def _history_after(self, position: int):
        history = self.history
        lo, hi = 0, len(history)
        while lo < hi:  # first entry with rv > position
            mid = (lo + hi) // 2
            if history[mid][0] <= position:
                lo = mid + 1
            else:
                hi = mid
        return history[lo:]

    async def _create(self, request: web.Request, resource: str, namespace: str) -> web.Response:
        try:
            obj = await request.json()
        except ValueError:
            return _status(400, "BadRequest", "request body is not JSON")
        meta = obj.setdefault("metadata", {})
        name = meta.get("name")
        if not name:
            return _status(422, "Invalid", f"{RESOURCES[resource][3]} is invalid: metadata.name: Required value")
        if meta.get("namespace", namespace) != namespace:
            return _status(400, "BadRequest", "the namespace of the object does not match the request")
        meta["namespace"] = namespace
        if (namespace, name) in self.store[resource]:
            return _status(
                409, "AlreadyExists", f'{resource} "{name}" already exists', {"name": name, "kind": resource}
            )
        if resource == "pods":
            refused = self.quota_refusal(namespace, obj)
            if refused:
                return _status(403, "Forbidden", refused, {"name": name, "kind": "pods"})
        if resource == "jobs":
            template = obj.setdefault("spec", {}).setdefault("template", {}).setdefault("metadata", {})
            labels = template.setdefault("labels", {})
            labels.setdefault("job-name", name)
            labels.setdefault("batch.kubernetes.io/job-name", name)
            obj["spec"].setdefault("selector", {"matchLabels": {"batch.kubernetes.io/job-name": name}})
        stored = await self._aput(resource, obj)
        delay = self.create_delay.pop(resource, 0.0)
        if delay:
            await asyncio.sleep(delay)  # stored, but the client gives up waiting
        return web.Response(
            status=201, body=json.dumps(_with_kind(resource, stored)).encode(), content_type="application/json"
        )

    async def _delete(self, request: web.Request, resource: str, namespace: str, name: str) -> web.Response:
        obj = await self._aremove(resource, namespace, name)
        if obj is None:
            return _not_found(resource, name)
        policy = request.query.get("propagationPolicy")
        if resource == "jobs" and policy in ("Background", "Foreground"):
            for (ns, pod_name), pod in list(self.store["pods"].items()):
                labels = (pod.get("metadata") or {}).get("labels") or {}
                if ns == namespace and any(labels.get(k) == name for k in JOB_NAME_LABELS):
                    await self._aremove("pods", ns, pod_name)
        body = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": {"name": name, "kind": resource, "uid": obj["metadata"].get("uid")},
        }
        return web.json_response(body)

    async def _log(self, request: web.Request, namespace: str, name: str) -> web.StreamResponse:
        pod = self.store["pods"].get((namespace, name))
        if pod is None:
            return _not_found("pods", name)
        q = request.query
        previous = q.get("previous", "").lower() in ("true", "1")
        follow = q.get("follow", "").lower() in ("true", "1")
        stamps = q.get("timestamps", "").lower() in ("true", "1")
        containers = _containers(pod)
        container = q.get("container") or ""
        if not container and len(containers) > 1:
            return _status(
                400,
                "BadRequest",
                f"a container name must be specified for pod {name}, choose one of: [{' '.join(containers)}]",
            )
        container = container or containers[0]
        if container not in containers:
            return _status(400, "BadRequest", f"container {container} is not valid for pod {name}")
        key = (namespace, name, container, previous)
        if previous and not self.logs.get(key):
            return _status(400, "BadRequest", f'previous terminated container "{container}" in pod "{name}" not found')
        if not previous and (pod.get("status") or {}).get("phase", "Pending") == "Pending":
            return _status(
                400, "BadRequest", f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating'
            )
        since = None
        if q.get("sinceSeconds"):
            since = _nano(self.now() - timedelta(seconds=int(q["sinceSeconds"])))
        if q.get("sinceTime"):  # RFC 3339, whole seconds, as the API server takes it
            since = _nano(datetime.fromisoformat(q["sinceTime"].replace("Z", "+00:00")).replace(microsecond=0))
        tail = int(q["tailLines"]) if q.get("tailLines") else None  # of what is there now, after since
        response = web.StreamResponse(
            headers={"Content-Type": "text/plain", "Date": email.utils.format_datetime(self.now(), usegmt=True)}
        )
        response.enable_chunked_encoding()
        await response.prepare(request)
        self._streams[id(request)] = request
        sent = 0
        try:
            while True:
                lines = self.logs.get(key, [])
                chunk = []
                for stamp, text in lines[sent:]:
                    if since is None or stamp >= since:
                        chunk.append(f"{stamp} {text}\n" if stamps else f"{text}\n")
                if tail is not None:
                    chunk, tail = chunk[-tail:] if tail else [], None
                sent = len(lines)
                if chunk:
                    data = "".join(chunk).encode()
                    if self.log_cut is not None:  # the fault switch: part of it, then the connection drops
                        data, self.log_cut = data[: self.log_cut], None
                        await response.write(data)
                        await asyncio.sleep(0.05)  # the part before the drop reaches the client first
                        request.transport.abort()
                        return response
                    await response.write(data)
                current = self.store["pods"].get((namespace, name))
                phase = ((current or {}).get("status") or {}).get("phase")
                if not follow or previous or current is None or phase in ("Succeeded", "Failed") or not self.running:
                    if follow and current is not None and phase in ("Succeeded", "Failed"):
                        rest = self.logs.get(key, [])[sent:]
                        if rest:
                            await response.write(
                                "".join(f"{s} {t}\n" if stamps else f"{t}\n" for s, t in rest).encode()
                            )
                    break
                waiter = asyncio.Event()
                self._log_waiters.add(waiter)
                try:
                    await asyncio.wait_for(waiter.wait(), 0.5)
                except (TimeoutError, asyncio.TimeoutError):
                    pass
                finally:
                    self._log_waiters.discard(waiter)
            return response
        finally:
            self._streams.pop(id(request), None)

    def set_pod_phase(
        self, namespace: str, name: str, phase: str, exit_code: int | None = None, reason: str = "", finished: str = ""
    ) -> dict:
        """``reason``: the terminated container's (``OOMKilled``, as the kubelet reports the OOM killer);
        ``finished``: its ``finishedAt`` (default now)."""
        changes: dict[str, Any] = {"status": pod_status(phase, exit_code, reason=reason, finished=finished)}
        obj = self.patch("pods", namespace, name, changes)

        async def wake():
            for waiter in list(self._log_waiters):
                waiter.set()

        self._call(wake())
        return obj


def _containers(pod: dict | None) -> list[str]:
    """A pod's container names, in spec order ("main" for a pod not there yet)."""
    return [c.get("name", "main") for c in ((pod or {}).get("spec") or {}).get("containers") or ()] or ["main"]


def _nano(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond:06d}000Z"


def _merge(target: dict, changes: dict) -> None:
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


def _with_kind(resource: str, obj: dict) -> dict:
    return dict(obj, kind=RESOURCES[resource][3], apiVersion=API_VERSION[resource])


def _status(code: int, reason: str, message: str, details: dict | None = None) -> web.Response:
    return web.json_response(status(code, reason, message, details), status=code)


def _forbidden(resource: str, namespace: str | None, method: str = "GET") -> web.Response:
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    return _status(
        403,
        "Forbidden",
        f'{resource} is forbidden: User "alice" cannot {method.lower()} resource "{resource}" in API group "" {scope}',
    )


def _not_found(resource: str, name: str) -> web.Response:
    return _status(404, "NotFound", f'{resource} "{name}" not found', {"name": name, "kind": resource})


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def make_node(
    name: str,
    gpus: int = 8,
    product: str = "NVIDIA-A100-SXM4-80GB",
    ready: bool = True,
    unschedulable: bool = False,
    taints: list | None = None,
    labels: dict | None = None,
) -> dict:
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "nvidia.com/gpu.product": product,
                "node.kubernetes.io/instance-type": "p4d.24xlarge",
                **(labels or {}),
            },
        },
        "spec": {},
        "status": {
            "capacity": {"cpu": "96", "memory": "1152Gi", "nvidia.com/gpu": str(gpus), "pods": "110"},
            "allocatable": {"cpu": "95500m", "memory": "1140Gi", "nvidia.com/gpu": str(gpus), "pods": "110"},
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady" if ready else "KubeletNotReady",
                    "message": "kubelet is posting ready status" if ready else "container runtime is down",
                    "lastHeartbeatTime": now_text(),
                    "lastTransitionTime": now_text(),
                }
            ],
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": "",
                "containerRuntimeVersion": "containerd://1.7.0",
                "kernelVersion": "6.1.0",
                "kubeProxyVersion": "v1.31.0",
                "kubeletVersion": "v1.31.0",
                "machineID": "",
                "operatingSystem": "linux",
                "osImage": "Debian",
                "systemUUID": "",
            },
        },
    }
    if unschedulable:
        node["spec"]["unschedulable"] = True
    if taints:
        node["spec"]["taints"] = taints
    return node


def pod_status(
    phase: str,
    exit_code: int | None = None,
    waiting: str | None = None,
    unschedulable: str | None = None,
    reason: str = "",
    finished: str = "",
) -> dict:
    st: dict[str, Any] = {"phase": phase}
    if phase == "Pending" and unschedulable:
        st["conditions"] = [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": unschedulable,
                "lastTransitionTime": now_text(),
            }
        ]
    if phase == "Running" or waiting:
        st["startTime"] = now_text()
        state = (
            {"waiting": {"reason": waiting, "message": f"Back-off: {waiting}"}}
            if waiting
            else {"running": {"startedAt": now_text()}}
        )
        st["containerStatuses"] = [
            {"name": "main", "image": "img", "imageID": "", "ready": not waiting, "restartCount": 0, "state": state}
        ]
    if phase in ("Succeeded", "Failed"):
        st["startTime"] = now_text(-60)
        code = exit_code if exit_code is not None else (0 if phase == "Succeeded" else 1)
        st["containerStatuses"] = [
            {
                "name": "main",
                "image": "img",
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "state": {
                    "terminated": {
                        "exitCode": code,
                        "reason": reason or ("Completed" if code == 0 else "Error"),
                        "startedAt": now_text(-60),
                        "finishedAt": finished or now_text(),
                    }
                },
            }
        ]
    return st


def _quantity(text: str) -> int:
    """A whole quantity (GPUs, pods); CPUs in millicores end in ``m`` and count as a fraction rounded up."""
    text = str(text)
    return -(-int(text[:-1]) // 1000) if text.endswith("m") else int(float(text))


def _pod_requests(pod: dict) -> dict[str, int]:
    """A pod's requests, summed over its containers, as quota keys (``requests.nvidia.com/gpu``...);
    an extended resource's limit stands for its request, as Kubernetes defaults it."""
    out: dict[str, int] = defaultdict(int)
    for container in (pod.get("spec") or {}).get("containers") or ():
        resources = container.get("resources") or {}
        asked = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        for key, value in asked.items():
            if key == "nvidia.com/gpu":
                out[f"requests.{key}"] += _quantity(value)
    return dict(out)


def _tolerated(taint: dict, tolerations: list[dict]) -> bool:
    if taint.get("effect") not in ("NoSchedule", "NoExecute"):
        return True
    for tol in tolerations:
        if tol.get("operator") == "Exists" and tol.get("key") in (None, taint.get("key")):
            return True
        if tol.get("key") == taint.get("key") and tol.get("value") == taint.get("value"):
            return True
    return False


def make_pod(
    name: str,
    namespace: str = "default",
    node: str | None = None,
    gpus: int = 1,
    phase: str = "Running",
    job: str | None = None,
    index: int | None = None,
    **status_kw,
) -> dict:
    labels = {"app": "bench"}
    annotations = {}
    if job:
        labels.update({"job-name": job, "batch.kubernetes.io/job-name": job})
    if index is not None:
        annotations["batch.kubernetes.io/job-completion-index"] = str(index)
    limits = {"nvidia.com/gpu": str(gpus)} if gpus else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels, "annotations": annotations},
        "spec": {
            "nodeName": node,
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime",
                    "command": ["/bin/sh", "-c", "python train.py"],
                    "resources": {
                        "limits": {**limits, "cpu": "8", "memory": "64Gi"},
                        "requests": {**limits, "cpu": "8", "memory": "64Gi"},
                    },
                }
            ],
        },
        "status": pod_status(phase, **status_kw),
    }


def make_job(
    name: str,
    namespace: str = "default",
    parallelism: int = 1,
    indexed: bool = False,
    gpus: int = 1,
    status_: dict | None = None,
) -> dict:
    spec: dict[str, Any] = {
        "parallelism": parallelism,
        "completions": parallelism,
        "backoffLimit": 0,
        "template": {
            "metadata": {"labels": {"job-name": name}},
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {"name": "main", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
                ],
            },
        },
    }
    if indexed:
        spec["completionMode"] = "Indexed"
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": status_ or {},
    }


def make_workload(
    job: dict, queue: str, conditions: list[dict], cluster_queue: str | None = None, name: str | None = None
) -> dict:
    """Kueue's Workload for ``job`` (a ``make_job``), as its job controller makes it: owned by the Job,
    in LocalQueue ``queue``, one pod set of the Job's template; ``conditions`` as Kueue sets them
    (``QuotaReserved``, ``Admitted``...); ``status.admission`` names ``cluster_queue`` once quota is reserved."""
    meta = job["metadata"]
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": meta["name"], "uid": meta.get("uid", "")}
    status: dict[str, Any] = {"conditions": conditions}
    if cluster_queue:
        status["admission"] = {"clusterQueue": cluster_queue, "podSetAssignments": []}
    return {
        "metadata": {
            "name": name or f"job-{meta['name']}-{uuid.uuid5(uuid.NAMESPACE_DNS, meta['name']).hex[:5]}",
            "namespace": meta.get("namespace", "default"),
            "labels": {"kueue.x-k8s.io/job-uid": meta.get("uid", "")},
            "ownerReferences": [dict(owner, controller=True)],
        },
        "spec": {
            "queueName": queue,
            "podSets": [{"name": "main", "count": job["spec"]["parallelism"], "template": job["spec"]["template"]}],
        },
        "status": status,
    }


def make_local_queue(name: str, namespace: str, cluster_queue: str) -> dict:
    """Kueue's LocalQueue ``name`` in ``namespace``, pointing at ClusterQueue ``cluster_queue``."""
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"clusterQueue": cluster_queue}}


def _main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--nodes", type=int, default=0)
    parser.add_argument("--pods", type=int, default=0)
    args = parser.parse_args(argv)
    emu = K8sEmulator(args.port).start()
    nodes = [make_node(f"node-{i:05d}") for i in range(args.nodes)]
    emu.bulk("nodes", nodes)
    per_node = 8
    emu.bulk("jobs", [make_job(f"job-{i:05d}") for i in range(args.pods)])
    emu.bulk(
        "pods",
        [
            make_pod(f"job-{i:05d}-x", node=f"node-{(i // per_node) % max(1, args.nodes):05d}", job=f"job-{i:05d}")
            for i in range(args.pods)
        ],
    )
    print(emu.url, flush=True)
    churn = 0
    for line in sys.stdin:  # "churn N": N pod MODIFIED events in one burst; "phase I PHASE": job I's pod; "quit"
        words = line.split()
        if not words or words[0] == "quit":
            break
        if words[0] == "phase":
            emu.set_pod_phase("default", f"job-{int(words[1]):05d}-x", words[2])
        if words[0] == "churn":
            count = int(words[1])
            pods = []
            for i in range(count):
                churn += 1
                pod = make_pod(
                    f"job-{i % max(1, args.pods):05d}-x",
                    node=f"node-{(i // per_node) % max(1, args.nodes):05d}",
                    job=f"job-{i % max(1, args.pods):05d}",
                )
                pod["metadata"]["annotations"]["churn"] = str(churn)
                pods.append(pod)
            emu.bulk("pods", pods)
            print(f"rv {emu.rv}", flush=True)
    emu.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))


def make_quota(name: str, namespace: str, hard: dict[str, str], used: dict[str, str] | None = None) -> dict:
    """A ResourceQuota as the API server serves it: ``spec.hard``, and ``status.hard`` / ``status.used``
    as the quota controller keeps them (``used``: every key of ``hard`` at 0 unless given)."""
    used = {key: "0" for key in hard} | dict(used or {})
    return {
        "metadata": {"name": name, "namespace": namespace, "uid": str(uuid.uuid4()), "resourceVersion": "1"},
        "spec": {"hard": dict(hard)},
        "status": {"hard": dict(hard), "used": used},
    }
