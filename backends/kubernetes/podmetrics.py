"""Running pods' CPU and memory through the metrics API (``metrics.k8s.io/v1beta1`` PodMetrics, served
by metrics-server where it is installed): one list per namespace through the official client's
``CustomObjectsApi`` (a read: ``list`` on ``pods.metrics.k8s.io``; never an exec), summed over a job's
running pods and their containers. Where the API group is absent (404) or metrics-server does not
answer (503), ``NotOffered`` says so. The parsing is pure; ``list_pod_metrics`` blocks (a thread)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from yanflow_tui.backends.kubernetes.cache import error_text
from yanflow_tui.backends.kubernetes.extract import PodInfo, quantity
from yanflow_tui.errors import BackendError, NotOffered
from yanflow_tui.liveuse import LiveUse

GROUP, VERSION, PLURAL = "metrics.k8s.io", "v1beta1", "pods"
SOURCE = "the metrics API (metrics.k8s.io)"
NOT_INSTALLED = f"{SOURCE}: metrics-server not installed"
NOT_ANSWERING = f"{SOURCE}: metrics-server installed but not answering"
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|ms|us|µs|ns|m|s)")
_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def list_pod_metrics(api_client: Any, namespace: str, timeouts: tuple[float, float]) -> dict[str, dict]:
    """The namespace's PodMetrics by pod name (blocking)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    api = client.CustomObjectsApi(api_client)
    try:
        response = api.list_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, _preload_content=False, _request_timeout=timeouts
        )
    except ApiException as exc:
        if exc.status == 404:
            raise NotOffered(NOT_INSTALLED) from None
        if exc.status == 503:
            raise NotOffered(NOT_ANSWERING) from None
        raise BackendError(f"metrics API: {error_text(exc)}") from None
    except Exception as exc:  # the connection (urllib3): a note, never a crash of the figures
        raise BackendError(f"metrics API: {error_text(exc)}") from None
    try:
        data = json.loads(response.data or b"{}")
    finally:
        response.release_conn()
    items = data.get("items") if isinstance(data, dict) else None
    return {str((m.get("metadata") or {}).get("name")): m for m in items or () if isinstance(m, dict)}


def duration_seconds(text: Any) -> float | None:
    """A Go duration as metrics-server writes ``window`` (``30s``, ``1m0.5s``, ``500ms``), or None."""
    parts = _DURATION.findall(str(text or ""))
    if not parts or "".join(n + u for n, u in parts) != str(text):
        return None
    return sum(float(number) * _SECONDS[unit] for number, unit in parts)


def job_use(pods: Iterable[PodInfo], metrics: Mapping[str, dict]) -> LiveUse | None:
    """The job's figures summed over its pods that have metrics (None: none has): CPU in percent of
    one core (``cpu`` is in cores), memory the working set, its allocation the pods' requests."""
    measured = [(pod, metrics[pod.name]) for pod in pods if pod.name in metrics]
    if not measured:
        return None
    containers = [c for _, m in measured for c in m.get("containers") or () if isinstance(c, dict)]
    usage = [c.get("usage") or {} for c in containers]
    windows = [w for _, m in measured if (w := duration_seconds(m.get("window"))) is not None]
    allocated = sum(pod.memory_mb for pod, _ in measured) * 1024.0
    return LiveUse(
        SOURCE,
        cpu_percent=sum(quantity(u.get("cpu")) for u in usage) * 100,
        memory_used_kb=sum(quantity(u.get("memory")) for u in usage) / 1024,
        memory_limit_kb=allocated or None,
        window_seconds=max(windows) if windows else None,
        parts=len(containers),
    )
