"""GPU utilisation and memory from a cluster's Prometheus (the DCGM exporter's series), for any kind.

A cluster's ``metrics: {prometheus: URL}`` (checked by ``check_option``) names the server. Each refresh
asks it ONE instant query for the whole cluster (``QUERY``), through urllib in a worker thread with a
timeout; ``enrich`` then copies each series onto the node and GPU it names (the ``Hostname`` label,
or ``kubernetes_node``/``node``, matched case-insensitively and by short hostname; the ``gpu``
index, or the ``UUID`` where the backend knows it). The hub calls ``MetricsSource.read`` beside the
backend's own refresh, so the data arrives in the model and no screen knows where it came from.
A Prometheus that is down, slow or answers nonsense gives a note, never an exception.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import ssl
import urllib.error
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from yanflow_tui import applog
from yanflow_tui.fieldtable import METRICS_FIELDS, keys, required
from yanflow_tui.model import ClusterConfig, Gpu, GpuState, Node
from yanflow_tui.yamldoc import Checker

if TYPE_CHECKING:
    import urllib.request

log = logging.getLogger(__name__)

OPTION = "metrics"  # the cluster key, allowed on every kind
KEYS = keys(METRICS_FIELDS)  # the declarative table the config's JSON Schema is made from
UTIL = "DCGM_FI_DEV_GPU_UTIL"
FB_USED = "DCGM_FI_DEV_FB_USED"  # MiB
FB_FREE = "DCGM_FI_DEV_FB_FREE"  # MiB
QUERY = f'{{__name__=~"{UTIL}|{FB_USED}|{FB_FREE}"}}'
TIMEOUT = 5.0
JOB_LABEL = "hpc_job"  # dcgm-exporter's HPC job mapping (--hpc-job-mapping-dir): the job on the GPU
HOST_LABELS = ("kubernetes_node", "node", "Hostname", "hostname")  # the first that names a known node wins


@dataclass(frozen=True)
class PrometheusConfig:
    url: str
    bearer_token_file: str = ""
    username: str = ""
    password_file: str = ""
    verify_tls: bool = True
    ca_file: str = ""
    timeout: float = TIMEOUT


@dataclass(frozen=True)
class GpuReading:
    """What the series say of one GPU."""

    hosts: tuple[str, ...]  # the host label values, in HOST_LABELS order
    index: int | None
    uuid: str = ""
    model: str = ""
    utilization: float | None = None
    memory_used_mb: int | None = None
    memory_free_mb: int | None = None
    pod: str = ""  # the pod using the GPU, where the exporter runs with Kubernetes pod mapping
    namespace: str = ""
    job: str = ""  # the HPC job using the GPU, where the exporter runs with its job mapping (``hpc_job``)


def check_option(check: Checker, path: str, value: Any) -> dict[str, Any] | None:
    """The ``metrics:`` mapping of a cluster entry, its problems reported through ``check``; None when
    absent or wrong."""
    if value is None:
        return None
    entry = check.mapping(path, value, KEYS, required=required(METRICS_FIELDS))
    url = check.string(f"{path}.prometheus", entry.get("prometheus"))
    if url is not None and urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        check.error(f"{path}.prometheus", "expected an http:// or https:// URL")
        return None
    for key in ("bearer_token_file", "username", "password_file", "ca_file"):
        check.string(f"{path}.{key}", entry.get(key))
    check.boolean(f"{path}.verify_tls", entry.get("verify_tls"))
    check.number(f"{path}.timeout", entry.get("timeout"), minimum=0.1)
    return dict(entry) if url else None


def config_of(cluster: ClusterConfig) -> PrometheusConfig | None:
    raw = cluster.options.get(OPTION)
    if not isinstance(raw, dict) or not raw.get("prometheus"):
        return None
    url = str(raw["prometheus"]).rstrip("/")
    applog.add_secret(urllib.parse.urlsplit(url).password)  # a password written in the URL
    return PrometheusConfig(
        url=url,
        bearer_token_file=str(raw.get("bearer_token_file") or ""),
        username=str(raw.get("username") or ""),
        password_file=str(raw.get("password_file") or ""),
        verify_tls=raw.get("verify_tls") is not False,
        ca_file=str(raw.get("ca_file") or ""),
        timeout=float(raw.get("timeout") or TIMEOUT),
    )


def _secret_file(path: str) -> str:
    value = Path(path).expanduser().read_text().strip()
    applog.add_secret(value)
    return value


def request_for(config: PrometheusConfig, query: str = QUERY) -> urllib.request.Request:
    import urllib.request  # with http.client and email: imported at the first query, not at start-up

    url = f"{config.url}/api/v1/query?{urllib.parse.urlencode({'query': query})}"
    headers = {"Accept": "application/json"}
    if config.bearer_token_file:
        headers["Authorization"] = "Bearer " + _secret_file(config.bearer_token_file)
    elif config.username:
        password = _secret_file(config.password_file) if config.password_file else ""
        pair = base64.b64encode(f"{config.username}:{password}".encode()).decode()
        applog.add_secret(pair)
        headers["Authorization"] = "Basic " + pair
    return urllib.request.Request(url, headers=headers)


def _context(config: PrometheusConfig) -> ssl.SSLContext | None:
    if not config.url.startswith("https:"):
        return None
    if not config.verify_tls:
        return ssl._create_unverified_context()
    return ssl.create_default_context(cafile=config.ca_file or None)


def query_blocking(config: PrometheusConfig) -> dict[str, Any]:
    """One instant query (blocking; run in a thread): the decoded JSON answer."""
    import urllib.request

    with urllib.request.urlopen(request_for(config), timeout=config.timeout, context=_context(config)) as answer:
        return json.loads(answer.read(16 * 2**20))


class MetricsError(Exception):
    """Why there are no metrics this refresh, as the note says it."""


def parse_answer(payload: Any) -> list[GpuReading]:
    """The readings in a ``/api/v1/query`` answer (a vector), one per GPU; raises ``MetricsError``."""
    if not isinstance(payload, dict) or payload.get("status") != "success":
        error = payload.get("error") if isinstance(payload, dict) else None
        raise MetricsError(f"prometheus error: {error}" if error else "prometheus gave a bad answer")
    data = payload.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "vector" or not isinstance(data.get("result"), list):
        raise MetricsError("prometheus gave a bad answer")
    merged: dict[tuple, dict[str, Any]] = {}
    for series in data["result"]:
        try:
            labels, (_, text) = series["metric"], series["value"]
            value = float(text)
        except (KeyError, TypeError, ValueError):
            continue
        if not isinstance(labels, dict) or value != value:  # NaN
            continue
        hosts = tuple(str(labels.get(k) or "") for k in HOST_LABELS)
        gpu = str(labels.get("gpu", ""))
        index = int(gpu) if gpu.isdigit() else None
        uuid = str(labels.get("UUID") or labels.get("uuid") or "")
        pod = (str(labels.get("pod") or ""), str(labels.get("namespace") or ""))
        key = (hosts, index, uuid, pod, str(labels.get(JOB_LABEL) or ""))
        entry = merged.setdefault(key, {"model": str(labels.get("modelName") or "")})
        entry[str(labels.get("__name__"))] = value
    return [
        GpuReading(
            hosts,
            index,
            uuid,
            entry["model"],
            utilization=entry.get(UTIL),
            memory_used_mb=int(entry[FB_USED]) if FB_USED in entry else None,
            memory_free_mb=int(entry[FB_FREE]) if FB_FREE in entry else None,
            pod=pod,
            namespace=namespace,
            job=job,
        )
        for (hosts, index, uuid, (pod, namespace), job), entry in merged.items()
    ]


def host_keys(name: str) -> tuple[str, str]:
    """A node or host name as compared: lowercased, and its short form (up to the first dot)."""
    low = name.strip().lower()
    return low, low.split(".", 1)[0]


def enrich(nodes: Iterable[Node], readings: Iterable[GpuReading]) -> tuple[Node, ...]:
    """``nodes`` with each GPU that a reading names given its utilisation and memory (and the
    reading's UUID and model where the backend had none). Unmatched readings are dropped."""
    nodes = tuple(nodes)
    exact = {host_keys(n.name)[0]: n.name for n in nodes}
    short: dict[str, str] = {}
    for n in nodes:
        short.setdefault(host_keys(n.name)[1], n.name)

    def node_of(hosts: tuple[str, ...]) -> str | None:
        for host in hosts:
            if host:
                full, brief = host_keys(host)
                found = exact.get(full) or exact.get(brief) or short.get(brief)
                if found:
                    return found
        return None

    by_node: dict[str, list[GpuReading]] = {}
    for reading in readings:
        name = node_of(reading.hosts)
        if name is not None:
            by_node.setdefault(name, []).append(reading)
    out = []
    for node in nodes:
        mine = by_node.get(node.name)
        if not mine:
            out.append(node)
            continue
        out.append(replace(node, gpus=_match(node.gpus, mine)))
    return tuple(out)


def owns(job_id: str, namespace: str, pod: str) -> bool:
    """The job ``namespace/name`` (a Kubernetes job id) owns the pod: it is the pod, or its pods'
    names start with ``name-`` as a Job's, JobSet's or PyTorchJob's do."""
    if not namespace or not job_id.startswith(namespace + "/"):
        return False
    name = job_id.split("/")[1]
    return pod == name or pod.startswith(name + "-")


def _match(gpus: tuple[Gpu, ...], readings: list[GpuReading]) -> tuple[Gpu, ...]:
    """Each GPU with its reading: by UUID where the backend knows it; where the readings name the pod
    on the device and the backend counts GPUs per job without knowing the devices (Kubernetes), the
    job's GPUs take its pods' readings in order; the rest by index."""
    out = list(gpus)
    used: set[int] = set()
    done: set[int] = set()
    by_uuid = {r.uuid: i for i, r in enumerate(readings) if r.uuid}
    for pos, gpu in enumerate(gpus):
        if gpu.uuid and gpu.uuid in by_uuid:
            out[pos] = _with(gpu, readings[by_uuid[gpu.uuid]])
            used.add(by_uuid[gpu.uuid])
            done.add(pos)
    for i, reading in sorted(enumerate(readings), key=lambda p: (p[1].index is None, p[1].index or 0)):
        if i in used or not reading.pod:
            continue
        slot = next(
            (
                p
                for p, g in enumerate(gpus)
                if p not in done and g.job_id and owns(g.job_id, reading.namespace, reading.pod)
            ),
            None,
        )
        if slot is not None:
            out[slot] = _with(gpus[slot], reading)
            used.add(i)
            done.add(slot)
    by_index = {r.index: r for i, r in enumerate(readings) if i not in used and r.index is not None}
    for pos, gpu in enumerate(gpus):
        if pos not in done and gpu.index in by_index:
            out[pos] = _with(gpu, by_index[gpu.index])
    return tuple(out)


def _with(gpu: Gpu, reading: GpuReading) -> Gpu:
    total = gpu.memory_total_mb
    if reading.memory_used_mb is not None and reading.memory_free_mb is not None:
        total = reading.memory_used_mb + reading.memory_free_mb
    return replace(
        gpu,
        utilization=reading.utilization if reading.utilization is not None else gpu.utilization,
        memory_used_mb=reading.memory_used_mb if reading.memory_used_mb is not None else gpu.memory_used_mb,
        memory_total_mb=total,
        uuid=gpu.uuid or reading.uuid or None,
        name=gpu.name or reading.model or None,
        # the exporter's job mapping names the job where the backend did not
        job_id=gpu.job_id or reading.job or None,
        state=GpuState.ALLOCATED if reading.job and gpu.state is GpuState.FREE else gpu.state,
    )


class MetricsSource:
    """One cluster's Prometheus: ``read`` asks it once and never raises; ``note`` says what failed."""

    def __init__(self, cluster: str, config: PrometheusConfig):
        self.cluster = cluster
        self.config = config
        self.note = ""
        self.queries = 0  # how many queries were sent (tests and --debug read it)
        self._failing = False

    async def read(self) -> list[GpuReading] | None:
        """This refresh's readings, or None (and ``note`` set) when Prometheus could not give them."""
        self.queries += 1
        try:
            payload = await asyncio.wait_for(asyncio.to_thread(query_blocking, self.config), self.config.timeout + 1)
            readings = parse_answer(payload)
        except Exception as exc:
            self.note = "metrics: " + _why(exc)
            if not self._failing:
                log.warning("cluster %s: %s (%s)", self.cluster, self.note, applog.redact(str(exc)))
            self._failing = True
            return None
        if self._failing:
            log.info("cluster %s: metrics from prometheus again", self.cluster)
        self._failing = False
        self.note = ""
        return readings


def _why(exc: BaseException) -> str:
    if isinstance(exc, MetricsError):
        return str(exc)
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return "prometheus timed out"
    if isinstance(exc, urllib.error.HTTPError):
        return f"prometheus answered HTTP {exc.code}"
    if isinstance(exc, urllib.error.URLError) and isinstance(exc.reason, (TimeoutError, ssl.SSLError)):
        return "prometheus timed out" if isinstance(exc.reason, TimeoutError) else "prometheus TLS failed"
    if isinstance(exc, (urllib.error.URLError, ConnectionError)):
        return "prometheus unreachable"
    if isinstance(exc, (ValueError, UnicodeDecodeError)):
        return "prometheus gave a bad answer"
    if isinstance(exc, OSError):
        return f"cannot read a prometheus secret file: {exc.strerror or exc}"
    return f"prometheus failed ({type(exc).__name__})"


def source_for(cluster: ClusterConfig) -> MetricsSource | None:
    config = config_of(cluster)
    return None if config is None else MetricsSource(cluster.name, config)
