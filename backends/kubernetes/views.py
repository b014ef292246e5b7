"""Turns the cached Kubernetes records into domain rows: Jobs (with the pods of multi-node jobs as
children), Nodes with a notional per-index GPU map, and normalised job states. Pure functions."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from yanflow_tui.backends.kubernetes.extract import WAITING_REASONS, JobInfo, NodeInfo, PodInfo, parse_time
from yanflow_tui.model import Gpu, GpuState, Job, JobKind, JobState, Node

# Pod reasons that keep a job from running; they are shown in the job's reason column.
BLOCKING = ("Unschedulable", *WAITING_REASONS)


def job_id(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def pod_job_id(pod: PodInfo) -> str:
    """The id of a pod's row: ``namespace/job/pod`` (three parts, so never a job id)."""
    return f"{pod.namespace}/{pod.job}/{pod.name}"


def rank_label(pod: PodInfo) -> str:
    return f"rank {pod.index}" if pod.index is not None else pod.name


def pod_state(pod: PodInfo) -> JobState:
    if pod.deleting and not pod.terminal:
        return JobState.COMPLETING
    return {
        "Pending": JobState.PENDING,
        "Running": JobState.RUNNING,
        "Succeeded": JobState.COMPLETED,
        "Failed": JobState.FAILED,
    }.get(pod.phase, JobState.UNKNOWN)


def job_state(job: JobInfo, pods: list[PodInfo]) -> tuple[JobState, str, str]:
    """(state, raw state, reason) from the Job's conditions and its pods' phases."""
    if job.condition == "Complete":
        return JobState.COMPLETED, "Complete", job.condition_reason
    if job.condition in ("Failed", "FailureTarget"):
        return JobState.FAILED, "Failed", job.condition_reason or job.condition_message
    if job.deleting:
        return JobState.CANCELLED, "Deleting", "deleted"
    if job.condition == "Suspended":
        return JobState.PENDING, "Suspended", job.condition_reason or "Suspended"
    live = [p for p in pods if not p.terminal]
    blocked = next((p for p in live if p.reason in BLOCKING), None)
    running = [p for p in live if p.phase == "Running"]
    if running and len(running) >= max(1, min(job.parallelism, len(live))) and blocked is None:
        return JobState.RUNNING, "Running", ""
    if blocked is not None:
        state = JobState.RUNNING if running else JobState.PENDING
        return state, blocked.phase, blocked.reason
    if running:
        return JobState.RUNNING, "Running", ""
    if not pods and job.active == 0 and job.succeeded + job.failed == 0:
        return JobState.PENDING, "Pending", "no pods yet"
    if live:
        first = live[0]
        return JobState.PENDING, "Pending", first.reason or ("ContainerCreating" if first.node else "Pending")
    return JobState.RUNNING if job.active else JobState.PENDING, "Active" if job.active else "Pending", ""


def pods_by_job(pods: Iterable[PodInfo]) -> dict[tuple[str, str], list[PodInfo]]:
    """The pods owned by a Job, by the Job's (namespace, name), in the order given."""
    by_job: dict[tuple[str, str], list[PodInfo]] = defaultdict(list)
    for pod in pods:
        if pod.job:
            by_job[(pod.namespace, pod.job)].append(pod)
    return by_job


def _pod_order(pod: PodInfo) -> tuple[int, str, str]:
    return (pod.index if pod.index is not None else -1, pod.created, pod.name)


def job_rows(cluster: str, info: JobInfo, pods: Iterable[PodInfo]) -> list[Job]:
    """One Job's rows: the job, then (multi-node) one row per pod by rank. They depend on ``info``,
    ``pods`` and ``cluster`` only (no clock, no nodes), so the same records give equal rows."""
    job_pods = sorted(pods, key=_pod_order)
    state, raw, reason = job_state(info, job_pods)
    multi = info.indexed and (info.kind == JobKind.MULTI_NODE.value or (not info.ours and info.parallelism > 1))
    kind = JobKind.MULTI_NODE if multi else JobKind.SINGLE
    jid = job_id(info.namespace, info.name)
    live = [p for p in job_pods if not p.terminal]
    exit_code = next((p.exit_code for p in job_pods if p.exit_code), None)
    if exit_code is None and state is JobState.COMPLETED:
        exit_code = 0
    pods_text = ", ".join(p.name for p in job_pods) or "-"
    details = (
        ("Namespace", info.namespace),
        ("Kubernetes name", info.name),
        ("Pods", f"{info.active} active, {info.succeeded} succeeded, {info.failed} failed"),
        ("Pod names", pods_text),
    ) + ((("Message", info.condition_message),) if info.condition_message else ())
    out = [
        Job(
            id=jid,
            cluster=cluster,
            name=info.display_name,
            user=info.user,
            state=state,
            raw_state=raw,
            reason=reason,
            nodes=tuple(sorted({p.node for p in live if p.node})),
            gpus=info.gpus_per_pod * max(1, info.parallelism if multi else 1),
            submit_time=parse_time(info.created),
            start_time=parse_time(info.started),
            end_time=parse_time(info.finished),
            kind=kind,
            exit_code=exit_code,
            command=info.command,
            details=details,
            image=info.image,
        )
    ]
    if multi:
        for pod in job_pods:
            pstate = pod_state(pod)
            out.append(
                Job(
                    id=pod_job_id(pod),
                    cluster=cluster,
                    name=f"{info.display_name} [{rank_label(pod)}]",
                    user=info.user,
                    state=pstate,
                    raw_state=pod.phase,
                    reason=pod.reason,
                    nodes=(pod.node,) if pod.node else (),
                    gpus=pod.gpus,
                    submit_time=parse_time(pod.created),
                    start_time=parse_time(pod.started),
                    kind=JobKind.MULTI_NODE,
                    exit_code=pod.exit_code,
                    command=info.command,
                    image=info.image,
                    parent=jid,
                    details=(("Pod", pod.name), ("Namespace", pod.namespace), ("Restarts", str(pod.restarts)))
                    + ((("Message", pod.message),) if pod.message else ()),
                )
            )
    return out


def build_jobs(cluster: str, jobs: Iterable[JobInfo], pods: Iterable[PodInfo]) -> list[Job]:
    """Every Job's rows (``job_rows``), in the order of ``jobs``."""
    by_job = pods_by_job(pods)
    out: list[Job] = []
    for info in jobs:
        out += job_rows(cluster, info, by_job.get((info.namespace, info.name), ()))
    return out


def node_state(node: NodeInfo) -> tuple[str, str]:
    if not node.ready:
        return "notready", node.not_ready_reason
    if node.unschedulable:
        return "cordoned", "cordoned (unschedulable)"
    if node.taints:
        return "tainted", "taints: " + ", ".join(node.taints)
    return "ready", ""


def build_nodes(cluster: str, nodes: Iterable[NodeInfo], pods: Iterable[PodInfo]) -> list[Node]:
    on_node: dict[str, list[PodInfo]] = defaultdict(list)
    for pod in pods:
        if pod.node and not pod.terminal:
            on_node[pod.node].append(pod)
    out: list[Node] = []
    for info in sorted(nodes, key=lambda n: n.name):
        state, reason = node_state(info)
        pods_here = on_node.get(info.name, ())
        gpus: list[Gpu] = []
        for pod in sorted(pods_here, key=lambda p: (p.created, p.name)):
            owner = job_id(pod.namespace, pod.job) if pod.job else job_id(pod.namespace, pod.name)
            for _ in range(pod.gpus):
                if len(gpus) < info.gpus:
                    gpus.append(Gpu(len(gpus), GpuState.ALLOCATED, owner, name=info.gpu_product))
        allocated = len(gpus)
        free_state = GpuState.FREE if state in ("ready", "tainted") else GpuState.UNAVAILABLE
        while len(gpus) < info.gpus:
            gpus.append(
                Gpu(len(gpus), free_state, name=info.gpu_product, reason="" if free_state is GpuState.FREE else state)
            )
        out.append(
            Node(
                cluster=cluster,
                name=info.name,
                state=state,
                partitions=(info.pool,) if info.pool else (),
                cpus_total=info.cpus_milli // 1000,
                cpus_allocated=sum(p.cpus_milli for p in pods_here) // 1000,
                memory_mb=info.memory_mb,
                memory_allocated_mb=sum(p.memory_mb for p in pods_here),
                gpu_type=info.gpu_product,
                gpus_total=info.gpus,
                gpus_allocated=allocated,
                gpus=tuple(gpus),
                reason=reason,
            )
        )
    return out
