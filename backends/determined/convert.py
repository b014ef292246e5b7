"""Pure functions from Determined API objects (``bindings`` classes) to the domain model: agents to
nodes, experiments and trials to grouped jobs, commands/notebooks/shells/TensorBoards to jobs, log
entries, metric reports and checkpoints. No I/O; tested on objects built like the master's answers.

Job ids: ``exp-<id>``, ``trial-<id>`` (parent ``exp-<id>``), and ``cmd-``/``nb-``/``shell-``/``tb-``
followed by the first 8 characters of the task id (the full id is kept in ``details``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from determined.common import util as det_util
from determined.common.api import bindings

from yanflow_tui.model import Checkpoint, Gpu, GpuState, Image, Job, JobKind, JobState, LogLine, MetricPoint, Node

TASK_PREFIX = {"command": "cmd", "notebook": "nb", "shell": "shell", "tensorboard": "tb"}
SHORT_TASK = 8
SUBMIT_TAG = re.compile(r" #yf-[0-9a-f]{12,64}$")

_EXP_STATES = {
    "QUEUED": (JobState.PENDING, "queued"),
    "PULLING": (JobState.PENDING, "pulling the image"),
    "STARTING": (JobState.PENDING, "starting"),
    "PAUSED": (JobState.PENDING, "paused"),
    "ACTIVE": (JobState.RUNNING, ""),
    "RUNNING": (JobState.RUNNING, ""),
    "STOPPING_COMPLETED": (JobState.COMPLETING, "stopping"),
    "STOPPING_CANCELED": (JobState.COMPLETING, "stopping (cancelled)"),
    "STOPPING_KILLED": (JobState.COMPLETING, "stopping (killed)"),
    "STOPPING_ERROR": (JobState.COMPLETING, "stopping (error)"),
    "COMPLETED": (JobState.COMPLETED, ""),
    "CANCELED": (JobState.CANCELLED, ""),
    "ERROR": (JobState.FAILED, ""),
    "DELETING": (JobState.COMPLETING, "deleting"),
    "DELETED": (JobState.CANCELLED, "deleted"),
    "DELETE_FAILED": (JobState.FAILED, "delete failed"),
}
_TASK_STATES = {
    "QUEUED": (JobState.PENDING, "queued"),
    "WAITING": (JobState.PENDING, "waiting for resources"),
    "PULLING": (JobState.PENDING, "pulling the image"),
    "STARTING": (JobState.PENDING, "starting"),
    "RUNNING": (JobState.RUNNING, ""),
    "TERMINATING": (JobState.COMPLETING, "terminating"),
}
_EXIT_CODE = re.compile(r"exit code:? (-?\d+)")


def present(value: Any) -> Any:
    """``None`` for the SDK's ``Unset`` marker."""
    return None if value is None or isinstance(value, bindings.Unset) else value


def when(stamp: Any) -> datetime | None:
    stamp = present(stamp)
    if not stamp:
        return None
    try:
        return det_util.parse_protobuf_timestamp(stamp)
    except (ValueError, TypeError):
        return None


def _num(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def exp_state(state: Any) -> tuple[JobState, str, str]:
    raw = getattr(state, "name", str(state)).replace("STATE_", "")
    norm, reason = _EXP_STATES.get(raw, (JobState.UNKNOWN, ""))
    return norm, raw, reason


def task_state(state: Any, exit_status: str | None) -> tuple[JobState, str, str, int | None]:
    raw = getattr(state, "name", str(state)).replace("STATE_", "")
    code = None
    if exit_status:
        match = _EXIT_CODE.search(exit_status)
        code = int(match.group(1)) if match else None
    if raw != "TERMINATED":
        norm, reason = _TASK_STATES.get(raw, (JobState.UNKNOWN, ""))
        return norm, raw, reason, code
    text = (exit_status or "").lower()
    if not text or "success" in text or code == 0:
        return JobState.COMPLETED, raw, exit_status or "", 0 if code is None and not text else code
    if "kill" in text or "stopped" in text or "cancel" in text:
        return JobState.CANCELLED, raw, exit_status or "", code
    return JobState.FAILED, raw, exit_status or "", code


# -- nodes -------------------------------------------------------------------------------------
def agent_node(cluster: str, agent: bindings.v1Agent, holders: dict[str, str]) -> Node:
    """An agent as a node. ``holders`` maps container ids to our job ids (where known)."""
    enabled = present(agent.enabled) is not False
    draining = bool(present(agent.draining))
    slots = sorted((present(agent.slots) or {}).items(), key=lambda kv: _slot_order(kv[1], kv[0]))
    gpus: list[Gpu] = []
    cpus_total = cpus_used = 0
    gpu_type = None
    for position, (_slot_id, slot) in enumerate(slots):
        device = present(slot.device)
        dtype = getattr(present(device.type) if device else None, "name", "")
        container = present(slot.container)
        if dtype == "CPU":
            cpus_total += 1
            cpus_used += 1 if container else 0
            continue
        slot_enabled = present(slot.enabled) is not False and enabled
        slot_draining = bool(present(slot.draining)) or draining
        job_id = holders.get(container.id) if container else None
        if container:
            state = GpuState.ALLOCATED
            reason = "" if job_id else f"container {container.id[:12]}"
        elif not slot_enabled:
            state, reason = GpuState.UNAVAILABLE, "disabled"
        elif slot_draining:
            state, reason = GpuState.UNAVAILABLE, "draining"
        else:
            state, reason = GpuState.FREE, ""
        name = present(device.brand) if device else None
        gpu_type = gpu_type or name
        index = present(device.id) if device else None
        gpus.append(
            Gpu(
                index=index if isinstance(index, int) else position,
                state=state,
                job_id=job_id,
                uuid=present(device.uuid) if device else None,
                name=name,
                reason=reason,
            )
        )
    node_state = "disabled" if not enabled else "draining" if draining else "up"
    return Node(
        cluster=cluster,
        name=agent.id,
        state=node_state,
        partitions=tuple(present(agent.resourcePools) or ()),
        cpus_total=cpus_total,
        cpus_allocated=cpus_used,
        gpu_type=gpu_type,
        gpus_total=len(gpus),
        gpus_allocated=sum(1 for g in gpus if g.state is GpuState.ALLOCATED),
        gpus=tuple(gpus),
        reason="" if node_state == "up" else node_state,
    )


def _slot_order(slot: bindings.v1Slot, slot_id: str) -> tuple[int, str]:
    device = present(slot.device)
    index = present(device.id) if device else None
    return (index if isinstance(index, int) else 1 << 30, slot_id)


# -- experiments and trials ----------------------------------------------------------------------
def slots_per_trial(config: dict[str, Any] | None) -> int:
    try:
        return int(((config or {}).get("resources") or {}).get("slots_per_trial") or 0)
    except (TypeError, ValueError):
        return 0


def searcher_of(config: dict[str, Any] | None) -> tuple[str, bool]:
    searcher = (config or {}).get("searcher") or {}
    return str(searcher.get("metric") or ""), searcher.get("smaller_is_better", True) is not False


def config_image(config: dict[str, Any] | None) -> str:
    """``environment.image`` of an experiment (or command) config: one name, or the ``cpu``/``cuda``/
    ``rocm`` map the master fills in (shown as ``cuda: NAME, cpu: NAME``)."""
    image = ((config or {}).get("environment") or {}).get("image")
    if isinstance(image, dict):
        return ", ".join(f"{k}: {image[k]}" for k in ("cuda", "cpu", "rocm") if image.get(k))
    return str(image) if image else ""


IMAGE_KINDS = {"cuda": "the master's default for GPU tasks", "cpu": "the master's default for CPU tasks"}
IMAGE_KINDS["rocm"] = "the master's default for ROCm tasks"


def default_images(master_config: dict[str, Any]) -> tuple[Image, ...]:
    """The default images in the master's config (``GET /api/v1/master/config``):
    ``task_container_defaults.image`` ({cpu, cuda, rocm}), then each resource pool's own."""
    found: list[Image] = []
    pools = [("", master_config)] + [
        (str(p.get("pool_name") or ""), p) for p in master_config.get("resource_pools") or () if isinstance(p, dict)
    ]
    for pool, holder in pools:
        image = ((holder.get("task_container_defaults") or {}) if isinstance(holder, dict) else {}).get("image")
        if isinstance(image, str):
            image = {"cuda": image}
        for kind, what in IMAGE_KINDS.items():
            name = image.get(kind) if isinstance(image, dict) else None
            if isinstance(name, str) and name and all(i.name != name for i in found):
                where = f" (pool {pool})" if pool else ""
                found.append(Image(name, what + where, (), source="master default"))
    return tuple(found)


def experiment_job(cluster: str, exp: bindings.v1Experiment, trials: list[bindings.trialv1Trial]) -> Job:
    norm, raw, reason = exp_state(exp.state)
    metric, smaller = searcher_of(exp.config)
    best_value = present(exp.bestTrialSearcherMetric)
    best_trial = present(exp.bestTrialId)
    progress = present(exp.progress)
    running = [t for t in trials if exp_state(t.state)[0] is JobState.RUNNING]
    if best_value is not None and metric:
        reason = reason or f"best {metric}={_num(best_value)}" + (f" (trial {best_trial})" if best_trial else "")
    elif progress is not None and not reason:
        reason = f"{progress * 100:.0f}% done"
    details: list[tuple[str, str]] = [
        ("Experiment", str(exp.id)),
        ("Searcher", str(exp.searcherType or "-")),
        ("Metric", f"{metric} ({'smaller' if smaller else 'larger'} is better)" if metric else "-"),
        ("Progress", f"{progress * 100:.1f}%" if progress is not None else "-"),
        ("Best trial", f"trial-{best_trial}" if best_trial else "-"),
        ("Best value", _num(best_value) if best_value is not None else "-"),
        ("Trials", str(exp.numTrials)),
        ("Resource pool", str(present(exp.resourcePool) or "-")),
        ("Project", str(present(exp.projectName) or exp.projectId)),
    ]
    labels = [label for label in (present(exp.labels) or ()) if not str(label).startswith("yanflow:")]
    if labels:
        details.append(("Labels", ", ".join(map(str, labels))))
    if present(exp.description):
        details.append(("Description", str(exp.description)))
    return Job(
        id=f"exp-{exp.id}",
        cluster=cluster,
        name=exp.name,
        user=exp.username,
        state=norm,
        raw_state=raw,
        reason=reason,
        gpus=slots_per_trial(exp.config) * max(1, len(running)) if running else 0,
        submit_time=when(exp.startTime),
        start_time=when(exp.startTime),
        end_time=when(exp.endTime),
        kind=JobKind.EXPERIMENT,
        command=str((exp.config or {}).get("entrypoint") or ""),
        details=tuple(details),
        image=config_image(exp.config),
    )


def _best_validation(trial: bindings.trialv1Trial, metric: str) -> float | None:
    best = present(trial.bestValidation)
    if best is None:
        return None
    metrics = present(best.metrics)
    values = (present(metrics.avgMetrics) if metrics is not None else None) or {}
    value = values.get(metric)
    return float(value) if isinstance(value, (int, float)) else None


def trial_job(cluster: str, exp: bindings.v1Experiment, trial: bindings.trialv1Trial) -> Job:
    norm, raw, reason = exp_state(trial.state)
    metric, _ = searcher_of(exp.config)
    value = present(trial.searcherMetricValue)
    best = _best_validation(trial, metric) if metric else None
    shown = best if best is not None else value
    if shown is not None and not reason:
        reason = f"{metric}={_num(shown)}"
    details: list[tuple[str, str]] = [("Trial", str(trial.id)), ("Experiment", f"exp-{exp.id}")]
    for key, hp in sorted((trial.hparams or {}).items()):
        details.append((f"hp.{key}", _num(hp) if not isinstance(hp, (dict, list)) else str(hp)))
    details += [
        ("Searcher metric", f"{metric}={_num(value)}" if metric and value is not None else "-"),
        ("Best validation", f"{metric}={_num(best)}" if metric and best is not None else "-"),
        ("Batches", str(trial.totalBatchesProcessed)),
        ("Restarts", str(trial.restarts)),
        ("Checkpoints", str(present(trial.checkpointCount) or 0)),
        ("Task ID", task_of_trial(trial) or "-"),
    ]
    return Job(
        id=f"trial-{trial.id}",
        cluster=cluster,
        name=f"{exp.name} #{trial.id}",
        user=exp.username,
        state=norm,
        raw_state=raw,
        reason=reason,
        gpus=slots_per_trial(exp.config) if norm is JobState.RUNNING else 0,
        submit_time=when(trial.startTime),
        start_time=when(trial.startTime),
        end_time=when(trial.endTime),
        kind=JobKind.EXPERIMENT,
        parent=f"exp-{exp.id}",
        details=tuple(details),
        image=config_image(exp.config),
    )


def task_of_trial(trial: bindings.trialv1Trial) -> str | None:
    ids = present(trial.taskIds)
    return present(trial.taskId) or (ids[-1] if ids else None)


# -- commands, notebooks, shells, TensorBoards --------------------------------------------------
def task_job_id(kind: str, task_id: str) -> str:
    return f"{TASK_PREFIX[kind]}-{task_id[:SHORT_TASK]}"


def task_name(description: str) -> str:
    """The description without the submit tag (see ``det_submit.tag_description``)."""
    return SUBMIT_TAG.sub("", description or "")


def task_job(cluster: str, kind: str, task: Any) -> Job:
    exit_status = present(task.exitStatus)
    norm, raw, reason, code = task_state(task.state, exit_status)
    container = present(task.container)
    devices = present(container.devices) if container else None
    gpus = sum(1 for d in devices or () if getattr(present(d.type), "name", "") in ("CUDA", "ROCM"))
    details = [("Task ID", task.id), ("Type", kind), ("Resource pool", task.resourcePool or "-")]
    if exit_status:
        details.append(("Exit status", exit_status))
    return Job(
        id=task_job_id(kind, task.id),
        cluster=cluster,
        name=task_name(task.description),
        user=task.username,
        state=norm,
        raw_state=raw,
        reason=reason,
        gpus=gpus,
        submit_time=when(task.startTime),
        start_time=when(task.startTime) if norm is not JobState.PENDING else None,
        kind=JobKind.SINGLE,
        exit_code=code,
        details=tuple(details),
    )


def container_holders(tasks: Iterable[tuple[str, Any]]) -> dict[str, str]:
    """Container id -> our job id, for the GPU map."""
    out: dict[str, str] = {}
    for kind, task in tasks:
        container = present(task.container)
        if container:
            out[container.id] = task_job_id(kind, task.id)
    return out


def allocation_holders(summaries: Iterable[Any], task_jobs: dict[str, str]) -> dict[str, str]:
    """Container id -> our job id, from ``/api/v1/tasks`` allocation summaries (trials included)."""
    out: dict[str, str] = {}
    for summary in summaries:
        job_id = task_jobs.get(present(summary.taskId) or "")
        for resources in present(summary.resources) or ():
            container = present(resources.containerId)
            if job_id and container:
                out[container] = job_id
    return out


# -- logs, metrics, checkpoints ----------------------------------------------------------------------
def log_line(job_id: str, entry: bindings.v1TaskLogsResponse) -> LogLine:
    rank = present(entry.rankId)
    return LogLine(job_id, (entry.log or "").rstrip("\r\n"), f"rank {rank}" if rank is not None else "")


def metric_points(report: bindings.v1MetricsReport, group: str) -> list[MetricPoint]:
    metrics = report.metrics or {}
    values = metrics.get("validation_metrics") if group == "validation" else None
    values = values or metrics.get("avg_metrics") or {}
    return [
        MetricPoint(name=str(name), step=int(report.totalBatches), value=float(value), group=group)
        for name, value in sorted(values.items())
        if isinstance(value, (int, float)) and not isinstance(value, bool)
    ]


def checkpoint(job_id: str, ckpt: bindings.v1Checkpoint) -> Checkpoint:
    training = ckpt.training
    metrics: dict[str, float] = {}
    validation = present(training.validationMetrics) if training else None
    avg = (present(validation.avgMetrics) if validation else None) or {}
    for name, value in avg.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            metrics[str(name)] = float(value)
    steps = (ckpt.metadata or {}).get("steps_completed")
    sizes = [int(v) for v in (ckpt.resources or {}).values() if str(v).isdigit()]
    return Checkpoint(
        uuid=ckpt.uuid,
        job_id=job_id,
        steps=int(steps) if isinstance(steps, (int, float)) else None,
        state=getattr(ckpt.state, "name", str(ckpt.state)).replace("STATE_", ""),
        size_bytes=sum(sizes) if sizes else None,
        metrics=tuple(sorted(metrics.items())),
        time=when(ckpt.reportTime),
    )
