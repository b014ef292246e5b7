"""Is a running job using what it holds: its live efficiency per allocated GPU (utilisation, memory
used) and its CPU and memory, from data already gathered (the nodes' GPUs with their job ids, read by
NVML or a DCGM exporter behind Prometheus with its job mapping; the backend's running figures, e.g.
Slurm's ``sstat``). ``JobHealth`` says which source gave each figure and, where one is missing, which
source would give it. Pure functions over domain objects; read-only: nothing here starts a job step
or an exec. The detail and ``yanflow-tui health`` show what these return."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from yanflow_tui.efficiency import Efficiency
from yanflow_tui.liveuse import ONE_CORE, LiveUse
from yanflow_tui.model import Job, Node

MISSING = "(missing) "
PROMETHEUS = "DCGM exporter via Prometheus"


@dataclass(frozen=True)
class GpuUse:
    """One GPU the job holds, as the source read it (None: not read)."""

    node: str
    index: int
    utilization: float | None = None  # percent
    memory_used_mb: int | None = None
    memory_total_mb: int | None = None
    idle_seconds: float | None = None  # under the idle threshold for this long (the idle tracker), else None

    def as_json(self) -> dict:
        return {
            "node": self.node,
            "index": self.index,
            "utilization_percent": self.utilization,
            "memory_used_mb": self.memory_used_mb,
            "memory_total_mb": self.memory_total_mb,
            "idle_seconds": None if self.idle_seconds is None else round(self.idle_seconds),
        }


@dataclass(frozen=True)
class JobHealth:
    """A running job's live figures. ``source`` names where each kind of figure came from;
    ``missing_source`` the source that would give each one missing."""

    cluster: str
    job_id: str
    gpus: tuple[GpuUse, ...] = ()
    gpus_held: int = 0  # the job's GPU count (the scheduler's word), whether or not read per GPU
    cpu_percent: float | None = None  # of cores x wall time
    memory_used_kb: float | None = None
    memory_kb: float | None = None  # allocated; None: unknown
    source: tuple[tuple[str, str], ...] = ()  # (what, source): ("gpu", "NVML"), ("cpu", "sstat")
    missing_source: tuple[tuple[str, str], ...] = ()  # (what, the source that would give it)
    # From a live source (``yanflow_tui.liveuse``): CPU summed over its processes (100: one core busy)
    # over ``cpu_window_seconds``.
    cpu_busy_percent: float | None = None
    cpu_window_seconds: float | None = None
    cpu_busy_of: str = ONE_CORE  # what 100 % of ``cpu_busy_percent`` is

    @property
    def gpu_utilization(self) -> float | None:
        """The mean utilisation of the GPUs read, or None."""
        read = [g.utilization for g in self.gpus if g.utilization is not None]
        return sum(read) / len(read) if read else None

    @property
    def gpu_memory_used_mb(self) -> int | None:
        read = [g.memory_used_mb for g in self.gpus if g.memory_used_mb is not None]
        return sum(read) if read else None

    def lines(self) -> list[tuple[str, str]]:
        """(label, text) rows for the detail and the CLI."""
        rows: list[tuple[str, str]] = []
        for gpu in self.gpus:
            parts = ["util " + ("-" if gpu.utilization is None else f"{gpu.utilization:.0f}%")]
            if gpu.memory_used_mb is not None:
                parts.append(
                    f"memory {gpu.memory_used_mb} MiB" + (f" of {gpu.memory_total_mb}" if gpu.memory_total_mb else "")
                )
            if gpu.idle_seconds is not None:
                parts.append(f"IDLE for {gpu.idle_seconds / 60:.0f} min")
            rows.append((f"GPU {gpu.node}:{gpu.index}", ", ".join(parts)))
        if self.gpus_held and not self.gpus:
            rows.append(("GPUs", f"{self.gpus_held} held, not read per GPU"))
        if self.cpu_percent is not None:
            rows.append(("CPU", f"{self.cpu_percent:.1f}% of its cores"))
        if self.cpu_busy_percent is not None:
            window = f" over {self.cpu_window_seconds:.1f} s" if self.cpu_window_seconds else ""
            rows.append(("CPU busy", f"{self.cpu_busy_percent:.0f}% (100% is {self.cpu_busy_of}){window}"))
        if self.memory_used_kb is not None:
            of = f" of {self.memory_kb / 1024:.0f} MiB" if self.memory_kb else ""
            rows.append(("Memory", f"{self.memory_used_kb / 1024:.0f} MiB{of}"))
        for what, where in self.source:
            rows.append((f"{what} from", where))
        for what, where in self.missing_source:
            rows.append((f"{what} not read", f"would come from {where}"))
        return rows

    def as_json(self) -> dict:
        return {
            "cluster": self.cluster,
            "id": self.job_id,
            "gpus_held": self.gpus_held,
            "gpus": [g.as_json() for g in self.gpus],
            "gpu_utilization_percent": self.gpu_utilization,
            "gpu_memory_used_mb": self.gpu_memory_used_mb,
            "cpu_percent": None if self.cpu_percent is None else round(self.cpu_percent, 2),
            "memory_used_kb": self.memory_used_kb,
            "memory_kb": self.memory_kb,
            "source": dict(self.source),
            "missing_source": dict(self.missing_source),
            "cpu_busy_percent": None if self.cpu_busy_percent is None else round(self.cpu_busy_percent, 2),
            "cpu_window_seconds": self.cpu_window_seconds,
            "cpu_busy_of": self.cpu_busy_of,
        }


def job_gpus(job: Job, nodes: Iterable[Node]) -> list[tuple[Node, int]]:
    """The (node, position in ``node.gpus``) of each GPU the nodes say the job holds."""
    return [(node, pos) for node in nodes for pos, gpu in enumerate(node.gpus) if gpu.job_id == job.id]


def job_health(
    job: Job,
    nodes: Iterable[Node],
    gpu_source: str,
    cpu_source: str,
    usage: Efficiency | None = None,
    idle_since: dict[tuple[str, int], float] | None = None,
    now: float = 0.0,
    live: LiveUse | None = None,
) -> JobHealth:
    """The job's figures from its nodes' GPUs and the backend's running ``usage``. ``gpu_source`` and
    ``cpu_source`` name the sources (``MISSING``-prefixed: the one that would give it, none read);
    ``idle_since`` gives (node, index) -> since when under the idle threshold, by the clock ``now`` reads.
    ``live``: the job's figures from a live source (``cpu_source`` names it), taken where ``usage`` is
    not given; a GPU it reports fills in one the nodes did not read."""
    gpus = []
    for node, pos in job_gpus(job, nodes):
        gpu = node.gpus[pos]
        since = (idle_since or {}).get((node.name, gpu.index))
        gpus.append(
            GpuUse(
                node.name,
                gpu.index,
                gpu.utilization,
                gpu.memory_used_mb,
                gpu.memory_total_mb,
                None if since is None else max(0.0, now - since),
            )
        )
    source: list[tuple[str, str]] = []
    missing: list[tuple[str, str]] = []
    if job.gpus or gpus:
        read = any(g.utilization is not None or g.memory_used_mb is not None for g in gpus)
        if read and not gpu_source.startswith(MISSING):
            source.append(("GPU use", gpu_source))
        else:
            missing.append(("GPU use", gpu_source.removeprefix(MISSING)))
    if usage is None and live is not None:
        gpus = _with_live_gpus(gpus, live)
        read = any(g.utilization is not None for g in gpus)
        if read and ("GPU use", gpu_source.removeprefix(MISSING)) in missing:
            missing.remove(("GPU use", gpu_source.removeprefix(MISSING)))
            source.append(("GPU use", live.source))
        source.append(("CPU and memory", live.source))
    elif usage is not None:
        source.append(("CPU and memory", cpu_source.removeprefix(MISSING)))
    else:
        missing.append(("CPU and memory", cpu_source.removeprefix(MISSING)))
    return JobHealth(
        cluster=job.cluster,
        job_id=job.id,
        gpus=tuple(gpus),
        gpus_held=max(job.gpus, len(gpus)),
        cpu_percent=None if usage is None else usage.cpu_percent,
        memory_used_kb=usage.memory_used_kb if usage is not None else live.memory_used_kb if live else None,
        memory_kb=(usage.memory_kb or None) if usage is not None else live.memory_limit_kb if live else None,
        source=tuple(source),
        missing_source=tuple(missing),
        cpu_busy_percent=None if usage is not None or live is None else live.cpu_percent,
        cpu_window_seconds=None if usage is not None or live is None else live.window_seconds,
        cpu_busy_of=live.cpu_of if usage is None and live is not None else ONE_CORE,
    )


def _with_live_gpus(gpus: list[GpuUse], live: LiveUse) -> list[GpuUse]:
    """The GPUs with the live source's readings where the nodes gave none (by position among the job's
    GPUs, the order the source lists them); a GPU the nodes did not list is added (node unknown)."""
    out = list(gpus)
    for pos, reading in enumerate(live.gpus):
        if pos < len(out):
            if out[pos].utilization is None and out[pos].memory_used_mb is None:
                out[pos] = replace(out[pos], utilization=reading.utilization, memory_used_mb=reading.memory_used_mb)
        else:
            out.append(GpuUse("", reading.index, reading.utilization, reading.memory_used_mb))
    return out


def running(job: Job) -> bool:
    """Started and not ended: the jobs whose live figures mean something."""
    return job.start_time is not None and not job.state.terminal


def gpu_source_of(backend_source: str, prometheus: bool) -> str:
    """The cluster's Prometheus (DCGM) where one is configured: the hub copies its readings onto the
    GPUs over the backend's own; else the backend's own source (or the one that would give it)."""
    return PROMETHEUS if prometheus else backend_source
