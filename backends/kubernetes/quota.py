"""A namespace's ResourceQuotas (their ``status.hard`` and ``status.used``, as the API server keeps
them): my share of the cluster (GPUs, CPUs, memory, pods, used of hard) and whether a job of a spec
fits under them now, later (once others' use goes down) or never (it asks more than a quota allows).
Pure functions over the API's JSON; ``backend.py`` lists the quotas."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from yanflow_tui.backends.kubernetes.extract import quantity
from yanflow_tui.model import Resources
from yanflow_tui.placement_rank import NEVER, WAITS
from yanflow_tui.share import ShareLine

# What a Job's pods ask, per quota key (requests and limits count alike: the manifests set both).
GPU_KEYS = ("requests.nvidia.com/gpu", "limits.nvidia.com/gpu", "nvidia.com/gpu")
CPU_KEYS = ("requests.cpu", "limits.cpu", "cpu")
MEMORY_KEYS = ("requests.memory", "limits.memory", "memory")
POD_KEYS = ("pods", "count/pods")
SHOWN = {**dict.fromkeys(GPU_KEYS, "GPUs"), **dict.fromkeys(CPU_KEYS, "CPUs"), **dict.fromkeys(MEMORY_KEYS, "memory")}
SHOWN.update(dict.fromkeys(POD_KEYS, "pods"))


@dataclass(frozen=True)
class QuotaCheck:
    verdict: str  # placement_rank's WAITS or NEVER
    reason: str


def _items(quotas: Mapping) -> list[dict]:
    return [q for q in quotas.get("items") or [] if isinstance(q, dict)]


def share_lines(quotas: Mapping, namespace: str) -> list[ShareLine]:
    """Each quota's figures, used of hard, GPUs/CPUs/memory/pods first, then the rest it sets."""
    out = []
    for item in _items(quotas):
        name = (item.get("metadata") or {}).get("name", "?")
        status = item.get("status") or {}
        hard = status.get("hard") or (item.get("spec") or {}).get("hard") or {}
        used = status.get("used") or {}
        keys = sorted(hard, key=lambda k: (k not in SHOWN, k))
        for key in keys:
            what = f"{key} ({SHOWN[key]})" if key in SHOWN else key
            out.append(ShareLine(f"quota {name} in {namespace}", what, str(used.get(key, "0")), str(hard[key])))
    return out


def asks(res: Resources) -> dict[str, float]:
    """What a job of ``res`` asks in all, per quota key (its pods together)."""
    pods = max(1, res.nodes)
    demand: dict[str, float] = dict.fromkeys(POD_KEYS, float(pods))
    if res.gpus:
        demand.update(dict.fromkeys(GPU_KEYS, float(res.gpus * pods)))
    if res.cpus:
        demand.update(dict.fromkeys(CPU_KEYS, float(res.cpus * pods)))
    if res.memory_mb:
        demand.update(dict.fromkeys(MEMORY_KEYS, float(res.memory_mb * 2**20 * pods)))
    return demand


def _figure(key: str, value: float) -> str:
    if key in MEMORY_KEYS:
        return f"{value / 2**30:g} GiB"
    return f"{value:g}"


def check(quotas: Mapping, res: Resources, namespace: str) -> QuotaCheck | None:
    """Never: the job asks more than a quota's hard limit; waits: the quota's use now leaves too
    little. None: every quota leaves room (or there is none)."""
    demand = asks(res)
    waits: QuotaCheck | None = None
    for item in _items(quotas):
        name = (item.get("metadata") or {}).get("name", "?")
        status = item.get("status") or {}
        hard = status.get("hard") or (item.get("spec") or {}).get("hard") or {}
        used = status.get("used") or {}
        for key, wanted in demand.items():
            if key not in hard:
                continue
            limit, now = quantity(hard[key]), quantity(used.get(key, 0))
            label = SHOWN.get(key, key)
            if wanted > limit:
                return QuotaCheck(
                    NEVER,
                    f"ResourceQuota {name} in namespace {namespace} allows {_figure(key, limit)} {label} "
                    f"({key}); the job asks {_figure(key, wanted)}",
                )
            if now + wanted > limit and waits is None:
                waits = QuotaCheck(
                    WAITS,
                    f"ResourceQuota {name} in namespace {namespace}: {_figure(key, now)} of "
                    f"{_figure(key, limit)} {label} in use ({key}); the job asks {_figure(key, wanted)}",
                )
    return waits
