"""The Kubernetes backend: clusters from kubeconfig (several files merged as kubectl does, see
``kubeconfig``), the context and namespace switched live (``scopes``), live data from list+watch
caches (Nodes, Pods, batch/v1 Jobs), submits as batch/v1 Jobs (Indexed Job + headless Service for multi-node), cancel,
describe with events, per-rank merged logs, and inside a running pod by exec and port-forward (a job's
files listed and downloaded, a shell, a port, its TensorBoard event files and a TensorBoard server:
``podexec``, ``files``, ``podshell``, ``podforward``, ``tbfiles``).

The official client is synchronous: every call runs in a thread with a ``_request_timeout``. It is
imported lazily (it costs about a second of CPU) when a Kubernetes cluster is first used.
"""

from __future__ import annotations

import asyncio
import functools
import getpass
import importlib.util
import json
import logging
import os
import posixpath
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from yanflow_tui import formfields as ff
from yanflow_tui import keyfiles, lazyimports
from yanflow_tui.backends import tbserver
from yanflow_tui.backends.base import (
    SCOPE_ALL,
    Backend,
    Capabilities,
    Download,
    FileListing,
    Forward,
    Shell,
    TensorBoardTask,
    describe_job,
)
from yanflow_tui.backends.kubernetes import (
    files,
    kubeconfig,
    kueue,
    manifests,
    podexec,
    podmetrics,
    podshell,
    quota,
    tbfiles,
    tls,
)
from yanflow_tui.backends.kubernetes.cache import ChangeThrottle, Reflector, error_text
from yanflow_tui.backends.kubernetes.explain import explain_pods
from yanflow_tui.backends.kubernetes.extract import EXTRACTORS, PodInfo, parse_time
from yanflow_tui.backends.kubernetes.ids import guard_paths, parse_id
from yanflow_tui.backends.kubernetes.jobrows import JobRows
from yanflow_tui.backends.kubernetes.logs import container_streams, log_limits, merged_logs
from yanflow_tui.backends.kubernetes.podforward import PodForward
from yanflow_tui.backends.kubernetes.views import build_nodes, job_id, rank_label
from yanflow_tui.config import ClusterConfig
from yanflow_tui.curves import EventListing
from yanflow_tui.errors import BackendError, SubmitUnknown
from yanflow_tui.explain import Explanation
from yanflow_tui.firstfailure import RankEvidence
from yanflow_tui.liveuse import LiveUse
from yanflow_tui.model import Job, JobKind, JobList, JobSpec, JobState, LogLine, Node
from yanflow_tui.placement_rank import NEVER, NOW, Placement, judged_from_nodes
from yanflow_tui.share import Share

# The client is the ``kubernetes`` extra: without it, making a backend fails at once, and the registry
# says which extra to install (looked up, not imported: the import costs about a second).
if importlib.util.find_spec("kubernetes") is None:
    raise ModuleNotFoundError("No module named 'kubernetes'", name="kubernetes")

log = logging.getLogger(__name__)

REQUEST_TIMEOUT = 10.0
SUBMIT_BUDGET = 25.0  # every create and retry of one submit fits in the hub's 30 s call timeout
CONNECT_TIMEOUT = 5.0
SYNC_WAIT = 20.0  # first read waits this long for the initial lists (the hub allows 30 s)
CREATE_ATTEMPTS = 3
RESOURCES = ("nodes", "pods", "jobs")
EXEC_NEEDS = "exec or port-forward in the job's pods (create on pods/exec, pods/portforward), which a viewer may not do"
NAMESPACE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")  # a DNS-1123 label


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return str(os.getuid())


class KubernetesBackend(Backend):
    kind = "kubernetes"
    cpu_use_source = podmetrics.SOURCE
    capabilities = Capabilities(
        submit=True,
        cancel=True,
        logs=True,
        job_kinds=frozenset({JobKind.SINGLE, JobKind.MULTI_NODE}),
        history=True,
        rank_logs=True,
        raw_spec=True,
        submit_tags=True,
        scopes=True,
        native_files=frozenset({"kubernetes"}),
        files=True,
        shell=True,
        forward=True,
        event_files=True,
        tensorboard=True,
        explain=True,
        rank_evidence=True,  # each pod's terminated state (exit code, OOMKilled, finishedAt), from the watch cache
        needs_write=frozenset({"files", "event_files", "forward"}),
        needs_write_why=EXEC_NEEDS,
        placement=True,
        share=True,
        live_use=True,  # running pods' CPU and memory through the metrics API (``podmetrics``), where installed
        resubmission=True,  # a Job not made here: a new Job from its template (``resubmission``)
    )

    def __init__(
        self,
        config: ClusterConfig,
        request_timeout: float = REQUEST_TIMEOUT,
        connect_timeout: float = CONNECT_TIMEOUT,
        watch_seconds: int | None = None,
    ):
        super().__init__(config)
        opts = config.options
        # One file or a KUBECONFIG-style list (``a:b``, merged as kubectl does); None: $KUBECONFIG, else ~/.kube/config
        self.kubeconfig: str | None = str(opts["kubeconfig"]) if opts.get("kubeconfig") else None
        self.context: str | None = opts.get("context") or None
        self.all_namespaces = bool(opts.get("all_namespaces"))
        self._namespace: str | None = opts.get("namespace") or None
        self.request_timeout = request_timeout
        self.connect_timeout = connect_timeout
        self.watch_seconds = watch_seconds
        self.log_limits = log_limits(opts, config.name)
        self._api = None
        # kubernetes.client.CoreV1Api / BatchV1Api once connected (the client is untyped and imported lazily)
        self._core: Any = None
        self._batch: Any = None
        self._reflectors: dict[str, Reflector] = {}
        self._connect_lock: asyncio.Lock | None = None
        self._throttle: ChangeThrottle | None = None
        self._memo: dict[str, tuple[Any, list]] = {}
        self._job_rows = JobRows(config.name)  # the job rows, kept per Job, and the changes between answers
        self._active_context = self.context or ""  # the context in use, once the kubeconfig is read
        self._context_users: dict[str, str] = {}  # each context's kubeconfig user, once the kubeconfig is read
        self._logdirs: dict[tuple[str, str], str] = {}  # (job, pod) -> its log directory in that pod
        self.tensorboard_command = tbserver.remote_command(opts.get("tensorboard"), config.name)

    # -- connection ------------------------------------------------------------------------------
    @property
    def namespace(self) -> str:
        """The configured namespace, else the kubeconfig context's, else ``default``."""
        if self._namespace is None:
            self._namespace = self._context_namespace()
        return self._namespace

    def _files(self) -> list[Path]:
        """The kubeconfig files kubectl would read for this cluster, in merge order."""
        return kubeconfig.paths(os.environ, self.kubeconfig)

    def _context_namespace(self) -> str:
        try:
            merged = kubeconfig.merge(self._files())
            self._active_context = self.context or merged["current-context"]
            self._context_users = kubeconfig.context_users(merged)
            return kubeconfig.context_namespace(merged, self.context)
        except BackendError:
            return "default"  # the client reports the broken file when it loads

    def _load_client(self) -> None:
        """Build the API client from the merged kubeconfig (exec and OIDC plugins included). Runs in a thread."""
        lazyimports.lazy_kubernetes()  # the client's API classes and models imported as used, not all
        from kubernetes import client
        from kubernetes import config as kconfig
        from kubernetes.config.kube_config import KubeConfigLoader, KubeConfigMerger

        configuration = type.__call__(client.Configuration)
        configuration.retries = False  # we retry ourselves, with backoff, and never a create blindly
        files = self._files()
        where = self.kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
        try:
            if not files:
                raise BackendError(f"kubeconfig: no such file: {where}")
            merged = kubeconfig.merge(files)
            self._context_users = kubeconfig.context_users(merged)
            if not merged["contexts"]:
                raise BackendError(f"kubeconfig: no context in {where}")
            if not (self.context or merged["current-context"]):
                raise BackendError(f"kubeconfig: no current-context in {where}; set the cluster's context")
            # The client's merger keeps each file's path (for relative certificate paths) and the first
            # definition of each name, as kubectl does; current-context is kubectl's (the first file's).
            merger = KubeConfigMerger(os.pathsep.join(map(str, kubeconfig.nonempty(files))))
            merger.config.value["current-context"] = merged["current-context"]
            # Key and certificate data the client copies to files go to our private directory,
            # which is removed at exit and on SIGHUP/SIGTERM (see yanflow_tui.keyfiles).
            KubeConfigLoader(
                config_dict=merger.config,
                active_context=self.context,
                config_base_path=None,
                temp_file_path=keyfiles.private_dir(),
            ).load_and_set(configuration)
            api = client.ApiClient(configuration=configuration)
        except kconfig.ConfigException as exc:
            raise BackendError(f"kubeconfig: {exc}") from None
        except OSError as exc:
            raise BackendError(f"kubeconfig: {exc.strerror or exc}: {exc.filename or where}") from None
        guard_paths(api)  # no request path with an empty, dot or encoded-slash segment
        tls.accept_cluster_ca(api)  # a CA without keyUsage, as kubectl (Python 3.13 refuses it by default)
        self.namespace  # resolve once, off the event loop  # noqa: B018
        self._core = client.CoreV1Api(api)
        self._batch = client.BatchV1Api(api)
        self._api = api

    async def _ensure_started(self) -> None:
        if self._reflectors and all(r.synced.is_set() for r in self._reflectors.values()):
            return
        if self._connect_lock is None:
            self._connect_lock = asyncio.Lock()
        async with self._connect_lock:
            if not self._reflectors:
                await self._start_reflectors()
        await self._wait_synced()

    async def _start_reflectors(self) -> None:
        if self._api is None:
            await asyncio.to_thread(self._load_client)
        loop = asyncio.get_running_loop()
        self._throttle = ChangeThrottle(loop, self.notify_changed)
        core, batch, ns = self._core, self._batch, self.namespace
        calls = {
            "nodes": core.list_node,
            "pods": core.list_pod_for_all_namespaces
            if self.all_namespaces
            else functools.partial(core.list_namespaced_pod, ns),
            "jobs": batch.list_job_for_all_namespaces
            if self.all_namespaces
            else functools.partial(batch.list_namespaced_job, ns),
        }
        extra = {"watch_seconds": self.watch_seconds} if self.watch_seconds else {}
        for name in RESOURCES:
            self._reflectors[name] = Reflector(
                name,
                calls[name],
                EXTRACTORS[name],
                self._throttle.signal,
                connect_timeout=self.connect_timeout,
                **extra,
            )
        for reflector in self._reflectors.values():
            reflector.start()

    async def _wait_synced(self) -> None:
        deadline = asyncio.get_running_loop().time() + SYNC_WAIT
        while not all(r.synced.is_set() for r in self._reflectors.values()):
            for r in self._reflectors.values():
                if not r.synced.is_set() and r.error and not self._tolerated(r):
                    self._raise_for(r)
                if not r.synced.is_set() and self._tolerated(r):
                    r.synced.set()
            if asyncio.get_running_loop().time() > deadline:
                raise BackendError("API server did not answer the first lists in time")
            await asyncio.sleep(0.02)

    @staticmethod
    def _tolerated(reflector: Reflector) -> bool:
        """Users without cluster-scope rights may not list nodes: show jobs anyway."""
        return reflector.resource == "nodes" and (reflector.error or "").startswith("HTTP 403")

    def _raise_for(self, reflector: Reflector) -> None:
        if reflector.connection_lost:
            raise BackendError(f"API server unreachable: {reflector.error}")
        hint = (
            " (all_namespaces needs cluster-wide list rights)"
            if self.all_namespaces and (reflector.error or "").startswith("HTTP 403")
            else ""
        )
        raise BackendError(f"listing {reflector.resource}: {reflector.error}{hint}")

    def _check_health(self, *names: str) -> None:
        for reflector in self._reflectors.values():  # a lost connection shows whatever is read
            if reflector.error and reflector.connection_lost:
                self._raise_for(reflector)
        for name in names:
            reflector = self._reflectors[name]
            if reflector.error and not self._tolerated(reflector):
                self._raise_for(reflector)

    def _memoised(self, what: str, key: Any, build) -> list:
        cached = self._memo.get(what)
        if cached is None or cached[0] != key:
            cached = (key, build())
            self._memo[what] = cached
        return cached[1]

    # -- reads -------------------------------------------------------------------------------------
    async def list_jobs(self) -> JobList:
        """The jobs of the caches, with what changed since the previous answer where that is sure
        (``JobRows``: only the Jobs whose records moved are built again)."""
        await self._ensure_started()
        self._check_health("jobs", "pods")
        return self._job_rows.answer(self._reflectors["jobs"], self._reflectors["pods"])

    async def list_nodes(self) -> list[Node]:
        await self._ensure_started()
        self._check_health("nodes", "pods")
        nodes, pods = self._reflectors["nodes"], self._reflectors["pods"]
        if self._tolerated(nodes):
            return []
        return list(
            self._memoised(
                "nodes", (nodes.version, pods.version), lambda: build_nodes(self.name, nodes.values(), pods.values())
            )
        )

    async def get_job(self, job_id_: str) -> Job:
        self.check_id(job_id_)
        await self._ensure_started()
        self._check_health("jobs", "pods")
        # (the rows, not an answer: the next list_jobs still says what changed since the previous one)
        for job in self._job_rows.rows(self._reflectors["jobs"], self._reflectors["pods"]):
            if job.id == job_id_:
                return job
        raise BackendError(f"no job {job_id_!r} on cluster {self.name!r} (ids are namespace/name)")

    def check_id(self, job_id_: str) -> None:
        parse_id(job_id_)

    def _split(self, job_id_: str) -> tuple[str, str, str | None]:
        return parse_id(job_id_)

    def _job_pods(self, namespace: str, name: str, pod: str | None = None) -> list[PodInfo]:
        reflector = self._reflectors.get("pods")
        if reflector is None:  # closed
            return []
        found = [
            p
            for p in reflector.values()
            if p.job == name and p.namespace == namespace and (pod is None or p.name == pod)
        ]
        found.sort(key=lambda p: (p.index if p.index is not None else -1, p.created, p.name))
        return found

    async def describe(self, job_id_: str) -> str:
        namespace, name, pod = self._split(job_id_)
        job = await self.get_job(job_id_)
        objects = [pod] if pod else [name] + [p.name for p in self._job_pods(namespace, name)]
        text = describe_job(job)
        try:
            events = await asyncio.to_thread(self._events, namespace, objects)
        except Exception as exc:
            return text + f"\n\nEvents: unavailable ({error_text(exc)})"
        if not events:
            return text + "\n\nEvents: none"
        lines = [f"{'LAST SEEN':<20} {'TYPE':<8} {'REASON':<20} {'OBJECT':<40} MESSAGE"]
        for when, kind, reason, obj, message in events:
            lines.append(f"{when:<20} {kind:<8} {reason:<20} {obj:<40} {message}")
        return text + "\n\nEvents:\n" + "\n".join(lines)

    async def explain(self, job_id_: str) -> Explanation:
        """Why the Job waits: its pods' scheduling condition and the events about it and them (GETs)."""
        namespace, name, pod = self._split(job_id_)
        job = await self.get_job(job_id_)
        pods = self._job_pods(namespace, name, pod)
        if job.state is JobState.PENDING and not pods and pod is None:  # suspended by Kueue?
            held = await asyncio.to_thread(self._kueue_explain, job, namespace, name)
            if held is not None:
                return held
        objects = [pod] if pod else [name] + [p.name for p in pods]
        try:
            events = await asyncio.to_thread(self._events, namespace, objects)
        except Exception as exc:  # the pods' own condition still says the most
            events = [("", "", "", "", f"events unavailable: {error_text(exc)}")]
        return explain_pods(job, pods, events)

    def _kueue_explain(self, job: Job, namespace: str, name: str) -> Explanation | None:
        """Kueue's word on a Job with no pods: its Workload's admission, in the ClusterQueue its LocalQueue
        points at (GETs; in a thread). None where Kueue is not installed (404) or not ours to read, where
        no Workload owns the Job, or once it is admitted: then the pods and events say the rest."""
        from kubernetes import client

        custom = client.CustomObjectsApi(self._api)
        try:
            found = self._call_json(
                custom.list_namespaced_custom_object, kueue.GROUP, kueue.VERSION, namespace, "workloads"
            )
        except Exception as exc:
            log.debug("no Kueue workloads in %s: %s", namespace, error_text(exc))
            return None
        workload = kueue.workload_of(found.get("items") or (), name)
        if workload is None:
            return None
        cluster_queue, queue = kueue.admission_queue(workload), kueue.local_queue(workload)
        if not cluster_queue and queue:
            try:
                local = self._call_json(
                    custom.get_namespaced_custom_object, kueue.GROUP, kueue.VERSION, namespace, "localqueues", queue
                )
                cluster_queue = str((local.get("spec") or {}).get("clusterQueue") or "")
            except Exception as exc:  # the Workload still says the most
                log.debug("LocalQueue %s/%s not read: %s", namespace, queue, error_text(exc))
        return kueue.explain_workload(job, workload, cluster_queue)

    async def raw_spec(self, job_id_: str) -> str:
        namespace, name, pod = self._split(job_id_)
        if self._api is None:
            await asyncio.to_thread(self._load_client)

        def read() -> str:
            try:
                if pod:
                    obj = self._call_json(self._core.read_namespaced_pod, pod, namespace)
                else:
                    obj = self._call_json(self._batch.read_namespaced_job, name, namespace)
            except Exception as exc:
                raise BackendError(f"cannot read {job_id_}: {error_text(exc)}") from None
            obj.get("metadata", {}).pop("managedFields", None)  # noise, as kubectl get -o yaml hides it
            return yaml.safe_dump(obj, sort_keys=False, allow_unicode=True)

        return await asyncio.to_thread(read)

    async def native_resubmission(self, job_id_: str, env: Mapping[str, str]) -> JobSpec:
        """A new Job from the Job's template, under the first ``<name>-resume-<n>`` not taken (reads only)."""
        from yanflow_tui.backends.kubernetes import nativefile, resubmission
        from yanflow_tui.yamldoc import load_yaml

        namespace, name, pod = self._split(job_id_)
        if pod:
            raise BackendError(f"{job_id_!r} is one pod of {namespace}/{name}; resume the whole job")
        if self._api is None:
            await asyncio.to_thread(self._load_client)

        def read() -> tuple[dict, str]:
            try:
                job = self._call_json(self._batch.read_namespaced_job, name, namespace)
            except Exception as exc:
                raise BackendError(f"cannot read {job_id_}: {error_text(exc)}") from None
            for n in range(1, resubmission.MAX_TRIES + 1):
                candidate = resubmission.resumed_name(name, n)
                try:
                    self._call_json(self._batch.read_namespaced_job, candidate, namespace)
                except Exception as exc:
                    if getattr(exc, "status", None) == 404:
                        return job, candidate
                    raise BackendError(f"cannot check for Job {namespace}/{candidate}: {error_text(exc)}") from None
            raise BackendError(f"Jobs {resubmission.resumed_name(name, 1)} to -{resubmission.MAX_TRIES} all exist")

        job, new_name = await asyncio.to_thread(read)
        job.setdefault("metadata", {}).setdefault("namespace", namespace)
        created = resubmission.new_job(job, new_name, env)
        file = f"{namespace}-{new_name}.yaml"
        text = resubmission.manifest_text(created, job_id_)
        spec = nativefile.read_manifest(load_yaml(text, file), text)
        assert spec.native is not None and spec.native.written is not None
        native = replace(spec.native, written=replace(spec.native.written, env=dict(env)))
        return replace(spec, env=dict(env), native=native)

    def _events(self, namespace: str, names: list[str]) -> list[tuple[str, str, str, str, str]]:
        rows = []
        for name in names:
            response = self._core.list_namespaced_event(
                namespace,
                field_selector=f"involvedObject.name={name}",
                _preload_content=False,
                _request_timeout=(self.connect_timeout, self.request_timeout),
            )
            try:
                data = json.loads(response.data)
            finally:
                response.release_conn()
            for ev in data.get("items") or ():
                obj = ev.get("involvedObject") or {}
                stamp = (
                    ev.get("lastTimestamp")
                    or ev.get("eventTime")
                    or (ev.get("metadata") or {}).get("creationTimestamp")
                    or ""
                )
                when = parse_time(stamp)
                rows.append(
                    (
                        when.strftime("%Y-%m-%d %H:%M:%S") if when else "-",
                        ev.get("type") or "",
                        ev.get("reason") or "",
                        f"{(obj.get('kind') or '').lower()}/{obj.get('name', '')}",
                        " ".join((ev.get("message") or "").split()),
                    )
                )
        rows.sort(key=lambda r: r[0])
        return rows

    async def stream_logs(self, job_id_: str, follow: bool = False, stream: str = "") -> AsyncIterator[LogLine]:
        namespace, name, pod = self._split(job_id_)
        await self._ensure_started()
        jobs = self._reflectors["jobs"]
        info = jobs.items.get((namespace, name))
        if info is None and not self._job_pods(namespace, name, pod):
            raise BackendError(f"no job {job_id_!r} on cluster {self.name!r}")
        multi = bool(info and info.indexed)
        rank_of = rank_label if multi else (lambda p: "")
        containers = dict.fromkeys(c for p in self._job_pods(namespace, name, pod) for c in p.containers)
        if stream and containers and stream not in containers:  # no pod yet: it may come with it
            raise BackendError(f"no container {stream!r} in job {job_id_!r} (its containers: {', '.join(containers)})")

        def finished() -> bool:
            current = jobs.items.get((namespace, name))
            return current is None or current.condition in ("Complete", "Failed") or current.deleting

        async for line in merged_logs(
            self._core,
            job_id_,
            lambda: self._job_pods(namespace, name, pod),
            rank_of,
            follow,
            finished,
            stream,
            self.log_limits,
        ):
            yield line

    async def rank_evidence(self, job_id_: str) -> list[RankEvidence]:
        """Each pod of the job as its status says it ended (the watch cache: no request of its own)."""
        namespace, name, pod = self._split(job_id_)
        await self._ensure_started()
        info = self._reflectors["jobs"].items.get((namespace, name))
        multi = bool(info and info.indexed)
        return [
            RankEvidence(
                str(p.index) if p.index is not None else p.name,
                p.node,
                rank_label(p) if multi else "",
                exit_code=p.exit_code,
                oom=p.ended_reason == "OOMKilled",
                reason=p.ended_reason if p.terminal else "",
                ended=parse_time(p.finished),
            )
            for p in self._job_pods(namespace, name, pod)
        ]

    async def live_use(self, job_ids: Sequence[str]) -> dict[str, LiveUse]:
        """The jobs' running pods through the metrics API: one list per namespace (a read)."""
        wanted: dict[str, list[tuple[str, str, str | None]]] = {}
        for job in job_ids:
            namespace, name, pod = self._split(job)
            wanted.setdefault(namespace, []).append((job, name, pod))
        await self._ensure_started()
        if self._api is None:
            await asyncio.to_thread(self._load_client)
        out = {}
        for namespace, jobs in wanted.items():
            timeouts = (self.connect_timeout, self.request_timeout)
            metrics = await asyncio.to_thread(podmetrics.list_pod_metrics, self._api, namespace, timeouts)
            for job, name, pod in jobs:
                running = [p for p in self._job_pods(namespace, name, pod) if p.phase == "Running"]
                use = podmetrics.job_use(running, metrics)
                if use is not None:
                    out[job] = use
        return out

    async def log_streams(self, job_id_: str) -> tuple[str, ...]:
        """The main stream ("": each pod's default container), then every other container of the job's pods."""
        namespace, name, pod = self._split(job_id_)
        await self._ensure_started()
        return container_streams(self._job_pods(namespace, name, pod))

    # -- inside a running pod: files, shell, port-forward ------------------------------------------------
    async def _running_pod(self, job_id_: str, rank: str = "") -> PodInfo:
        """The job's pod of ``rank`` (its index, rank label or pod name; "": the first) that is running."""
        namespace, name, pod = self._split(job_id_)
        await self._ensure_started()
        pods = self._job_pods(namespace, name, pod)
        if rank:
            pods = [p for p in pods if rank in (p.name, str(p.index), rank_label(p))]
        running = [p for p in pods if p.phase == "Running"]
        if not running:
            which = f" of rank {rank!r}" if rank else ""
            raise BackendError(
                f"job {job_id_} has no running pod{which} to reach"
                + (f" (its pods: {', '.join(f'{p.name} {p.phase}' for p in pods)})" if pods else "")
            )
        return running[0]

    def _starter(self, pod: PodInfo) -> podexec.Runner:
        """How to run commands in ``pod`` by exec: every exec but the shell's starts here, behind the gate
        (exec is ``create`` on ``pods/exec``, which read-only mode never asks for)."""
        self.gate.check_read(f"exec in pod {pod.namespace}/{pod.name}", "create on pods/exec")
        container = pod.default_container or (pod.containers[0] if pod.containers else "")

        def start(argv) -> podexec.ExecStream:
            return podexec.ExecStream(podexec.open_exec(self._core, pod.namespace, pod.name, container, argv))

        return start

    def _outputs(self, job_id_: str, path: str) -> str:
        """``path`` in the job's output folder (its ``yanflow.io/outputs``, relative to the pod's workdir)."""
        namespace, name, _ = self._split(job_id_)
        info = self._reflectors["jobs"].items.get((namespace, name)) if "jobs" in self._reflectors else None
        base = info.outputs if info is not None else ""
        if not base or path.startswith("/"):
            return path
        return posixpath.join(base, path) if path else base

    async def list_files(self, job_id_: str, path: str = "") -> FileListing:
        pod = await self._running_pod(job_id_)
        return await asyncio.to_thread(files.list_dir, self._starter(pod), self._outputs(job_id_, path))

    async def download(self, job_id_: str, path: str, target: Path, progress=None) -> Download:
        pod = await self._running_pod(job_id_)
        stop = threading.Event()
        where = self._outputs(job_id_, path)
        try:
            return await asyncio.to_thread(files.download, self._starter(pod), where, target, progress, stop)
        except asyncio.CancelledError:
            stop.set()  # the thread ends at its next read; the partial file stays for a resume
            raise

    async def _shell(self, job_id_: str, rank: str) -> Shell:
        pod = await self._running_pod(job_id_, rank)
        container = pod.default_container or (pod.containers[0] if pod.containers else "")
        core = self._core

        def run() -> int:
            client = podexec.open_exec(
                core, pod.namespace, pod.name, container, podshell.SHELL_COMMAND, tty=True, stdin=True
            )
            return podshell.interact(client)

        return Shell(f"pod {pod.namespace}/{pod.name} (container {container or 'default'})", run)

    async def forward(self, job_id_: str, port: int, rank: str = "", local_port: int = 0) -> Forward:
        if not 0 < port < 65536 or not 0 <= local_port < 65536:
            raise BackendError(f"not a port: {port}")
        pod = await self._running_pod(job_id_, rank)
        local, close = await self._pod_forward(pod, port, local_port)
        return Forward(f"pod {pod.namespace}/{pod.name}", port, local, close)

    async def _pod_forward(
        self, pod: PodInfo, port: int, local_port: int = 0
    ) -> tuple[int, Callable[[], Awaitable[None]]]:
        """A local port (``local_port``, or a free one) forwarded to ``port`` of ``pod``, and its close."""
        self.gate.check_read(f"port-forward to pod {pod.namespace}/{pod.name}", "create on pods/portforward")
        forwarder = await asyncio.to_thread(PodForward(self._core, pod.namespace, pod.name, port, local_port).start)

        async def close() -> None:
            await asyncio.to_thread(forwarder.close)

        return forwarder.local_port, close

    # -- TensorBoard event files and server, by exec in the job's first running pod (rank 0) -----------------
    async def _logdir(self, job_id_: str) -> tuple[PodInfo, str]:
        pod = await self._running_pod(job_id_)
        key = (job_id_, pod.name)
        if key not in self._logdirs:
            self._logdirs[key] = await asyncio.to_thread(tbfiles.resolve_logdir, self._starter(pod), pod.tb_logdir)
        return pod, self._logdirs[key]

    async def event_files(self, job_id_: str) -> EventListing:
        pod, logdir = await self._logdir(job_id_)
        return EventListing(
            logdir, tuple(await asyncio.to_thread(tbfiles.list_event_files, self._starter(pod), logdir))
        )

    async def read_event_bytes(self, job_id_: str, path: str, offset: int, limit: int) -> tuple[int, bytes]:
        pod, logdir = await self._logdir(job_id_)
        return await asyncio.to_thread(tbfiles.read_range, self._starter(pod), logdir, path, offset, limit)

    async def _tensorboard(self, job_id_: str) -> TensorBoardTask:
        """The real server in the pod (``tensorboard: {command: [...]}`` in the cluster config, default
        ``tensorboard``), started by exec, detached, and a local port forwarded to it."""
        pod, logdir = await self._logdir(job_id_)
        start = self._starter(pod)

        async def run(argv: list[str]) -> tuple[int, str, str]:
            return await asyncio.to_thread(tbfiles.run_text, start, argv)

        return await tbserver.serve_remote(
            run,
            functools.partial(self._pod_forward, pod),
            self.tensorboard_command,
            logdir,
            f"pod {pod.namespace}/{pod.name}",
        )

    # -- scopes: the context and the namespace, switched live (k9s's :ctx and :ns) -------------------
    def about(self) -> tuple[tuple[str, str], ...]:
        """The kubeconfig user of the context in use, then the context and the namespace (as read: no I/O)."""
        return (("user", self._context_users.get(self._active_context, "")), *super().about()[1:])

    def scope(self, kind: str) -> str:
        if kind == "context":
            return self._active_context
        if kind == "namespace":
            return SCOPE_ALL if self.all_namespaces else (self._namespace or "")
        return ""

    async def scopes(self, kind: str) -> list[str]:
        if kind == "context":
            return await asyncio.to_thread(lambda: kubeconfig.contexts(kubeconfig.merge(self._files())))
        if kind != "namespace":
            return await super().scopes(kind)
        if self._api is None:
            await asyncio.to_thread(self._load_client)

        def names() -> list[str]:
            try:
                listed = self._call_json(self._core.list_namespace)
                return sorted((item.get("metadata") or {}).get("name", "") for item in listed.get("items") or ())
            except Exception as exc:
                if getattr(exc, "status", None) != 403:
                    raise BackendError(f"listing namespaces: {error_text(exc)}") from None
            # may not list namespaces: those the kubeconfig's contexts name, and the one in use
            merged = kubeconfig.merge(self._files())
            return sorted(
                {self.namespace} | {kubeconfig.context_namespace(merged, c) for c in kubeconfig.contexts(merged)}
            )

        return [SCOPE_ALL, *[n for n in await asyncio.to_thread(names) if n]]

    async def set_scope(self, kind: str, value: str) -> str:
        if kind == "context":
            known = await self.scopes("context")
            if value not in known:
                raise BackendError(f"no context {value!r} in the kubeconfig (contexts: {', '.join(known) or 'none'})")
            self.context, self._namespace, self.all_namespaces = value, None, False
            await self._reset(client=True)
        elif kind == "namespace" and value == SCOPE_ALL:
            if self._api is None:
                await asyncio.to_thread(self._load_client)
            await asyncio.to_thread(self._check_cluster_wide)
            self.all_namespaces = True
            await self._reset(client=False)
        elif kind == "namespace":
            if not NAMESPACE_NAME.fullmatch(value or ""):
                raise BackendError(f"not a namespace name: {value!r}")
            self._namespace, self.all_namespaces = value, False
            await self._reset(client=False)
        else:
            return await super().set_scope(kind, value)
        namespace = await asyncio.to_thread(lambda: self.namespace)
        return f"context {self._active_context}, " + (
            "all namespaces" if self.all_namespaces else f"namespace {namespace}"
        )

    def _check_cluster_wide(self) -> None:
        """All namespaces needs cluster-wide list rights on Jobs and Pods: ask before switching."""
        for what, method in (
            ("jobs", self._batch.list_job_for_all_namespaces),
            ("pods", self._core.list_pod_for_all_namespaces),
        ):
            try:
                self._call_json(method, limit=1)
            except Exception as exc:
                if getattr(exc, "status", None) == 403:
                    raise BackendError(
                        f"all namespaces: you may not list {what} cluster-wide ({error_text(exc)}); "
                        f"still namespace {self.namespace}"
                    ) from None
                raise BackendError(f"all namespaces: listing {what}: {error_text(exc)}") from None

    async def _reset(self, client: bool) -> None:
        """Drop the watches and caches (and with ``client``, the connection): the next read lists anew."""
        if self._connect_lock is None:
            self._connect_lock = asyncio.Lock()
        async with self._connect_lock:
            await self.close()
            self._memo = {}
            self._job_rows = JobRows(self.name)
            if client:
                self._api = self._core = self._batch = None
        self.notify_changed()

    def invalidate(self) -> None:
        for reflector in self._reflectors.values():
            reflector.wake()

    async def close(self) -> None:
        reflectors = list(self._reflectors.values())
        for reflector in reflectors:
            reflector.stop()

        def join() -> None:
            for reflector in reflectors:
                reflector.join(2.0)
            if self._api is not None:
                self._api.rest_client.pool_manager.clear()

        await asyncio.to_thread(join)
        self._reflectors = {}

    # -- where a job would start, and my share: the nodes and the namespace's ResourceQuotas (reads) --------
    async def _quotas(self, namespace: str) -> dict:
        """The namespace's ResourceQuotas as the API serves them (``status.hard`` / ``status.used``)."""
        if self._api is None:
            await asyncio.to_thread(self._load_client)
        try:
            return await asyncio.to_thread(self._call_json, self._core.list_namespaced_resource_quota, namespace)
        except Exception as exc:
            raise BackendError(f"cannot read the ResourceQuotas of namespace {namespace}: {error_text(exc)}") from None

    async def placement(self, spec: JobSpec, nodes: Sequence[Node]) -> Placement:
        """The nodes' verdict (``capacity``), then the namespace's quotas: a job over a quota's hard
        limit never starts; one over what it leaves now waits. Quotas that cannot be read are said."""
        judged = judged_from_nodes(self, spec, nodes)
        if judged.verdict == NEVER:
            return judged
        namespace = str(spec.section("kubernetes").get("namespace") or self.namespace)
        try:
            found = quota.check(await self._quotas(namespace), spec.resources, namespace)
        except BackendError as exc:
            return replace(judged, reason=f"{judged.reason}; quotas not checked: {exc}")
        if found is None:
            return judged
        if found.verdict == NEVER or judged.verdict == NOW:
            return Placement(self.name, found.verdict, found.reason)
        return replace(judged, reason=f"{judged.reason}; {found.reason}")

    async def share(self) -> Share:
        namespace = self.namespace
        lines = quota.share_lines(await self._quotas(namespace), namespace)
        note = "" if lines else f"no ResourceQuota in namespace {namespace}: no share is set"
        return Share(self.name, tuple(lines), note)

    # -- writes (reached only through the gate) -----------------------------------------------------
    def check_spec(self, spec: JobSpec) -> None:
        super().check_spec(spec)
        if spec.native is not None:
            return  # a manifest is created as written; the cluster says what it refuses
        try:
            manifests.check(spec)
        except BackendError as exc:
            if spec.source and not spec.source.startswith("<"):
                raise BackendError(f"{spec.source}: {exc}") from None
            raise

    def form_fields(self, kind: JobKind) -> tuple[ff.FormField, ...]:
        fields = [
            ff.NAME,
            replace(ff.IMAGE, placeholder=manifests.DEFAULT_IMAGE),
            ff.COMMAND_FIELD,
            ff.WORKDIR,
            ff.OUTPUTS,
        ]
        if kind is JobKind.MULTI_NODE:
            fields.append(ff.launcher(manifests.LAUNCHERS))
        fields += ff.resources(kind)
        fields += [
            replace(
                ff.MOUNTS_FIELD,
                help="One source:target[:ro] a line; source is pvc:CLAIM[/SUBPATH], "
                "nfs://SERVER/PATH or a path on the node",
            ),
            ff.FormField(
                "kubernetes.namespace",
                "Namespace",
                "Where the Job is created",
                default=str(self.config.options.get("namespace") or ""),
                placeholder="the kubeconfig's",
            ),
            ff.FormField(
                "kubernetes.node_selector",
                "Node selector",
                "label: value lines (the pods' nodeSelector)",
                kind=ff.MAPPING,
                lines=2,
            ),
            ff.FormField("kubernetes.priority_class", "Priority", "priorityClassName"),
            ff.ENV_FIELD,
        ]
        return tuple(fields)

    def _render(self, spec: JobSpec) -> str:
        namespace = spec.section("kubernetes").get("namespace") or self.namespace
        objects = manifests.manifests(spec, manifests.content_token(spec), namespace, _user())
        return (
            "# metadata.name gets a fresh random suffix at each submit; a retried submit reuses it\n"
            + manifests.to_yaml(objects)
        )

    @property
    def submit_budget(self) -> float:
        return SUBMIT_BUDGET + 2 * self.request_timeout + 5  # the Job's budget, then its Service's

    async def _submit_tagged(self, spec: JobSpec, tag: str, retry: bool) -> str:
        # The tag names the Job and marks it: every create below, and a later retry with the same
        # tag, sends the same name, so a conflict with our own mark is the earlier attempt's job.
        if self._api is None:
            await asyncio.to_thread(self._load_client)
        token = tag
        namespace = spec.section("kubernetes").get("namespace") or self.namespace
        objects = manifests.manifests(spec, token, namespace, _user())
        job = objects[0]
        deadline = asyncio.get_running_loop().time() + SUBMIT_BUDGET
        created = await self._create(
            "Job", self._batch.create_namespaced_job, self._batch.read_namespaced_job, namespace, job, token, deadline
        )
        for extra in objects[1:]:
            uid = (created.get("metadata") or {}).get("uid")
            if uid:
                extra["metadata"]["ownerReferences"] = [
                    {"apiVersion": "batch/v1", "kind": "Job", "name": job["metadata"]["name"], "uid": uid}
                ]
            try:
                await self._create(
                    "Service",
                    self._core.create_namespaced_service,
                    self._core.read_namespaced_service,
                    namespace,
                    extra,
                    token,
                    max(deadline, asyncio.get_running_loop().time() + 2 * self.request_timeout),
                )
            except BackendError as exc:
                raise BackendError(
                    f"job {namespace}/{job['metadata']['name']} was created but its Service "
                    f"failed ({exc}); cancel it and submit again"
                ) from None
        return job_id(namespace, job["metadata"]["name"])

    async def _create(self, kind: str, create, read, namespace: str, body: dict, token: str, deadline: float) -> dict:
        """Create ``body``, retrying timeouts and 5xx with the same name until ``deadline``; a 409 on
        an object carrying our submit id means an earlier attempt got through."""
        loop = asyncio.get_running_loop()
        name = body["metadata"]["name"]
        last = ""
        sent = False  # some attempt may have reached the server
        for attempt in range(CREATE_ATTEMPTS):
            if attempt:
                pause = min(4.0, 0.5 * 2**attempt)
                if loop.time() + pause + 1.0 > deadline:
                    break
                await asyncio.sleep(pause)
            timeout = max(1.0, min(self.request_timeout, deadline - loop.time()))
            try:
                return await asyncio.to_thread(self._call_json, create, namespace, body, timeout=timeout)
            except Exception as exc:
                status = getattr(exc, "status", None)
                if status == 409:
                    try:
                        existing = await asyncio.to_thread(self._call_json, read, name, namespace)
                    except Exception as read_exc:
                        raise SubmitUnknown(
                            self.name,
                            token,
                            f"{kind} {namespace}/{name} exists but cannot be read: {error_text(read_exc)}",
                        ) from None
                    annotations = (existing.get("metadata") or {}).get("annotations") or {}
                    if annotations.get(manifests.ANN_SUBMIT_ID) == token:
                        return existing  # our earlier attempt got through: not a second job
                    raise BackendError(f"a {kind} named {name!r} already exists in namespace {namespace!r}") from None
                if status and status < 500 and status != 429:
                    raise BackendError(f"Kubernetes refused the {kind}: {error_text(exc)}") from None
                last = error_text(exc)
                sent = sent or not _never_sent(exc)
        if sent:  # a timeout or a server error after sending: that attempt may have created it
            raise SubmitUnknown(self.name, token, f"{kind} {namespace}/{name} not confirmed: {last}")
        raise BackendError(f"could not create {kind} {namespace}/{name}: {last}")

    # -- manifests created as written -----------------------------------------------------------------
    def _native_target(self, spec: JobSpec) -> tuple[dict, str, str, str]:
        """(the object as written, its kind, name and namespace): the file's namespace, else the form's,
        else the context's."""
        assert spec.native is not None
        obj = spec.native.data
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") or spec.section("kubernetes").get("namespace") or self.namespace
        return obj, str(obj["kind"]), str(meta["name"]), str(namespace)

    def _render_native(self, spec: JobSpec) -> str:
        assert spec.native is not None
        _, kind, name, namespace = self._native_target(spec)
        return (
            f"# {kind} {namespace}/{name}, created as written in {spec.native.file}\n"
            "# (an object of that name that exists already is reported, never replaced)\n" + spec.native.text
        )

    def _native_calls(self, obj: dict, kind: str) -> tuple[Any, Any]:
        """(create(namespace, body), read(name, namespace)) for the object's kind. A Kubeflow job
        needs its CRD on the cluster: without it, a clear refusal. Runs in a thread."""
        if kind == "Job":
            return self._batch.create_namespaced_job, self._batch.read_namespaced_job
        if kind == "Pod":
            return self._core.create_namespaced_pod, self._core.read_namespaced_pod
        from kubernetes import client

        group, _, version = str(obj.get("apiVersion") or "").rpartition("/")
        plural = kind.lower() + "s"
        crd = f"{plural}.{group}"
        try:
            self._call_json(client.ApiextensionsV1Api(self._api).read_custom_resource_definition, crd)
        except Exception as exc:
            if getattr(exc, "status", None) == 404:
                raise BackendError(
                    f"cluster {self.name!r} has no {kind} resource (CRD {crd}); install its operator "
                    "(e.g. the Kubeflow training operator) or submit a Job"
                ) from None
            raise BackendError(f"cannot check for the {kind} CRD {crd}: {error_text(exc)}") from None
        custom = client.CustomObjectsApi(self._api)

        def create(namespace: str, body: dict, **kw: Any) -> Any:
            return custom.create_namespaced_custom_object(group, version, namespace, plural, body, **kw)

        def read(name: str, namespace: str, **kw: Any) -> Any:
            return custom.get_namespaced_custom_object(group, version, namespace, plural, name, **kw)

        return create, read

    async def _submit_native(self, spec: JobSpec, tag: str | None, retry: bool) -> str:
        """Create the manifest as written. A name that exists is reported, never replaced (the name is
        what a retry or a lost answer looks the object up by: before the send it was not there)."""
        if self._api is None:
            await asyncio.to_thread(self._load_client)
        obj, kind, name, namespace = self._native_target(spec)
        create, read = await asyncio.to_thread(self._native_calls, obj, kind)

        async def exists() -> bool:
            try:
                await asyncio.to_thread(self._call_json, read, name, namespace)
            except Exception as exc:
                if getattr(exc, "status", None) == 404:
                    return False
                raise BackendError(f"cannot check for {kind} {namespace}/{name}: {error_text(exc)}") from None
            return True

        if await exists():
            if retry:
                return job_id(namespace, name)  # the submit that ended unknown got through
            raise BackendError(f"a {kind} named {name!r} already exists in namespace {namespace!r}; not replaced")
        try:
            await asyncio.to_thread(self._call_json, create, namespace, manifests.quantities_as_text(obj))
        except Exception as exc:
            status = getattr(exc, "status", None)
            if status == 409:
                raise BackendError(
                    f"a {kind} named {name!r} already exists in namespace {namespace!r}; not replaced"
                ) from None
            if status and status < 500 and status != 429:
                raise BackendError(f"Kubernetes refused the {kind}: {error_text(exc)}") from None
            if await exists():  # the answer was lost, but the object is there: ours (it was not before)
                return job_id(namespace, name)
            if tag is None or _never_sent(exc):
                raise BackendError(f"could not create {kind} {namespace}/{name}: {error_text(exc)}") from None
            raise SubmitUnknown(self.name, tag, f"{kind} {namespace}/{name} not confirmed: {error_text(exc)}") from None
        return job_id(namespace, name)

    def _call_json(self, method, *args, timeout: float | None = None, **kwargs) -> dict:
        response = method(
            *args,
            **kwargs,
            _preload_content=False,
            _request_timeout=(self.connect_timeout, timeout or self.request_timeout),
        )
        try:
            return json.loads(response.data or b"{}")
        finally:
            response.release_conn()

    async def _cancel(self, job_id_: str) -> None:
        namespace, name, pod = self._split(job_id_)
        if pod:
            raise BackendError(f"{job_id_!r} is one pod of {namespace}/{name}; cancel the whole job")
        if self._api is None:
            await asyncio.to_thread(self._load_client)

        def delete() -> None:
            try:
                self._call_json(self._batch.delete_namespaced_job, name, namespace, propagation_policy="Background")
            except Exception as exc:
                if getattr(exc, "status", None) == 404:
                    raise BackendError(f"no job {job_id_!r} on cluster {self.name!r}") from None
                raise BackendError(f"cancel {job_id_}: {error_text(exc)}") from None
            try:
                self._call_json(self._core.delete_namespaced_service, name, namespace)
            except Exception as exc:
                if getattr(exc, "status", None) != 404:
                    raise BackendError(f"job deleted, but its Service: {error_text(exc)}") from None

        await asyncio.to_thread(delete)


def _never_sent(exc: BaseException) -> bool:
    """The request cannot have reached the server: the connection itself failed (refused,
    unresolvable, connect timeout)."""
    from urllib3.exceptions import ConnectTimeoutError, MaxRetryError, NewConnectionError

    reason = exc.reason if isinstance(exc, MaxRetryError) else exc
    return isinstance(reason, (NewConnectionError, ConnectTimeoutError))


__all__ = ["KubernetesBackend"]
