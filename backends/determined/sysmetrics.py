"""A running trial's system metrics as Determined's profiler reports them to the master (the SDK's
``core._profiler``): metrics groups ``cpu`` (``{agent: {"cpu_util_simple": percent}}``: psutil's
percent of ALL the host's cores) and ``gpu`` (``{agent: {uuid: {"gpu_util": percent,
"gpu_free_memory": bytes}}}``), read through ``bindings.get_GetMetrics`` (a read) and the latest
report of each taken. A trial that reports none (profiling off in its experiment config) is not
measured, and the figures name that source. The reading of reports is pure."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from yanflow_tui.liveuse import LiveGpu, LiveUse

GROUPS = ("cpu", "gpu")
SOURCE = "the trial's system metrics (Determined's profiler)"
WANTS = "the trial's system metrics (Determined's profiler: profiling enabled in its experiment config)"
HOST_CORES = "every core of its hosts"


def latest(reports: Iterable[Any]) -> dict[str, Any]:
    """The ``avg_metrics`` of the newest report (by end time, then id); {} where none has them."""
    newest = None
    for report in reports:
        values = (report.metrics or {}).get("avg_metrics")
        if isinstance(values, dict) and (newest is None or (report.endTime, report.id) >= newest[0]):
            newest = ((report.endTime, report.id), values)
    return newest[1] if newest else {}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def use_of(by_group: dict[str, list[dict[str, Any]]]) -> LiveUse | None:
    """One job's figures from the latest ``cpu`` and ``gpu`` metrics of each of its trials: the hosts'
    CPU averaged (100: every core of its hosts busy), each GPU's utilisation by agent, then UUID."""
    cpus = [
        value
        for metrics in by_group.get("cpu", [])
        for agent in sorted(metrics)
        if isinstance(metrics[agent], dict) and (value := _number(metrics[agent].get("cpu_util_simple"))) is not None
    ]
    gpus: list[LiveGpu] = []
    for metrics in by_group.get("gpu", []):
        for agent in sorted(metrics):
            devices = metrics[agent] if isinstance(metrics[agent], dict) else {}
            for uuid in sorted(devices):
                device = devices[uuid] if isinstance(devices[uuid], dict) else {}
                gpus.append(LiveGpu(len(gpus), _number(device.get("gpu_util"))))
    if not cpus and not gpus:
        return None
    return LiveUse(
        SOURCE,
        cpu_percent=sum(cpus) / len(cpus) if cpus else None,
        parts=len(cpus),
        gpus=tuple(gpus),
        cpu_of=HOST_CORES,
    )
