"""Field extraction from raw Kubernetes JSON (decoded with ``json.loads``, never the client's model
classes): each Node, Pod and batch/v1 Job becomes a small frozen record holding only what we show.

Pure functions, no I/O, cheap enough for tens of thousands of watch events per second.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

GPU_SUFFIX = "/gpu"
INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")
POOL_LABELS = ("yanflow.io/pool", "node.kubernetes.io/instance-type", "nvidia.com/gpu.product")
# Our own annotations on Jobs we create.
ANN_NAME = "yanflow.io/name"
ANN_KIND = "yanflow.io/kind"
ANN_USER = "yanflow.io/user"
ANN_COMMAND = "yanflow.io/command"
ANN_SUBMIT_ID = "yanflow.io/submit-id"
ANN_LOGDIR = "yanflow.io/tb-logdir"  # the spec's ``tensorboard.logdir`` (``tbfiles``)
ANN_OUTPUTS = "yanflow.io/outputs"  # the spec's ``outputs:`` (the folder the Files view opens)
DEFAULT_CONTAINER_ANNOTATION = "kubectl.kubernetes.io/default-container"  # kubectl logs' default container
WAITING_REASONS = (
    "ImagePullBackOff",
    "ErrImagePull",
    "CrashLoopBackOff",
    "CreateContainerConfigError",
    "InvalidImageName",
    "CreateContainerError",
    "RunContainerError",
)


@dataclass(frozen=True, slots=True)
class NodeInfo:
    name: str
    ready: bool
    unschedulable: bool
    taints: tuple[str, ...]
    gpus: int
    gpu_resource: str
    gpu_product: str | None
    pool: str
    cpus_milli: int
    memory_mb: int
    not_ready_reason: str = ""


@dataclass(frozen=True, slots=True)
class PodInfo:
    namespace: str
    name: str
    phase: str
    node: str
    job: str  # name of the owning batch/v1 Job ("" if none)
    index: int | None  # completion index of an Indexed Job's pod
    gpus: int
    cpus_milli: int
    memory_mb: int
    reason: str  # pending or failure reason, e.g. Unschedulable, ImagePullBackOff
    message: str
    restarts: int
    exit_code: int | None
    created: str
    started: str
    deleting: bool
    containers: tuple[str, ...] = ()  # container names, in spec order
    default_container: str = ""  # the one kubectl logs reads: the annotation's, else the first
    container_restarts: tuple[tuple[str, int], ...] = ()  # (name, restartCount) from the statuses
    tb_logdir: str = ""  # the ``yanflow.io/tb-logdir`` annotation: where its TensorBoard event files go
    finished: str = ""  # the terminated container's finishedAt (the one whose exit code is kept)
    ended_reason: str = ""  # that container's terminated reason (OOMKilled, Error, Completed)

    @property
    def terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    def restarts_of(self, container: str) -> int:
        return sum(count for name, count in self.container_restarts if name == container)


@dataclass(frozen=True, slots=True)
class JobInfo:
    namespace: str
    name: str
    uid: str
    indexed: bool
    ours: bool  # created by yanflow (carries our annotations)
    display_name: str
    kind: str  # our yanflow.io/kind annotation, "" for foreign jobs
    user: str
    command: str
    submit_id: str
    parallelism: int
    completions: int | None
    active: int
    succeeded: int
    failed: int
    condition: str  # Complete, Failed, Suspended, FailureTarget, SuccessCriteriaMet or ""
    condition_reason: str
    condition_message: str
    created: str
    started: str
    finished: str
    deleting: bool
    image: str
    gpus_per_pod: int
    outputs: str = ""  # our yanflow.io/outputs annotation: the job's output folder in its pods


def parse_time(value: str) -> datetime | None:
    """RFC 3339 timestamps as the API writes them (``2026-11-29T12:00:00Z``)."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(timezone.utc)
    except ValueError:
        return None


def quantity(value) -> float:
    """A Kubernetes quantity (``8``, ``500m``, ``64Gi``, ``1e3``) as a plain number."""
    if value is None:
        return 0.0
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip()
    for suffix, factor in _SUFFIXES:
        if text.endswith(suffix):
            try:
                return float(text[: -len(suffix)]) * factor
            except ValueError:
                return 0.0
    try:
        return float(text)
    except ValueError:
        return 0.0


_SUFFIXES = (
    ("Ki", 2**10),
    ("Mi", 2**20),
    ("Gi", 2**30),
    ("Ti", 2**40),
    ("Pi", 2**50),
    ("Ei", 2**60),
    ("m", 1e-3),
    ("u", 1e-6),  # metrics-server writes CPU use in nano- and microcores
    ("n", 1e-9),
    ("k", 1e3),
    ("M", 1e6),
    ("G", 1e9),
    ("T", 1e12),
    ("P", 1e15),
    ("E", 1e18),
)


def gpu_count(resources: dict) -> tuple[int, str]:
    """The GPUs in a resource map (``nvidia.com/gpu`` and any other ``*/gpu``) and the resource name."""
    total, name = 0, ""
    for key, value in resources.items():
        if key.endswith(GPU_SUFFIX):
            total += int(quantity(value))
            if not name or key == "nvidia.com/gpu":
                name = key
    return total, name


def node_info(obj: dict) -> NodeInfo:
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    allocatable = status.get("allocatable") or {}
    gpus, resource = gpu_count(allocatable)
    ready, reason = False, "no Ready condition"
    for cond in status.get("conditions") or ():
        if cond.get("type") == "Ready":
            ready = cond.get("status") == "True"
            reason = "" if ready else (cond.get("reason") or cond.get("message") or "NotReady")
            break
    taints = tuple(
        f"{t.get('key', '')}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect', '')}"
        for t in spec.get("taints") or ()
        if t.get("effect") in ("NoSchedule", "NoExecute") and t.get("key") != "node.kubernetes.io/unschedulable"
    )
    pool = next((labels[k] for k in POOL_LABELS if labels.get(k)), "")
    return NodeInfo(
        name=meta.get("name", ""),
        ready=ready,
        unschedulable=bool(spec.get("unschedulable")),
        taints=taints,
        gpus=gpus,
        gpu_resource=resource,
        gpu_product=labels.get("nvidia.com/gpu.product"),
        pool=pool,
        cpus_milli=int(quantity(allocatable.get("cpu")) * 1000),
        memory_mb=int(quantity(allocatable.get("memory")) // 2**20),
        not_ready_reason=reason,
    )


def pod_info(obj: dict) -> PodInfo:
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    job = next((labels[k] for k in JOB_NAME_LABELS if labels.get(k)), "")
    if not job:
        for ref in meta.get("ownerReferences") or ():
            if ref.get("kind") == "Job":
                job = ref.get("name", "")
                break
    index_text = annotations.get(INDEX_ANNOTATION) or labels.get(INDEX_ANNOTATION)
    try:
        index = int(index_text) if index_text is not None else None
    except ValueError:
        index = None
    gpus = cpus = memory = 0
    for container in spec.get("containers") or ():
        res = container.get("resources") or {}
        wanted = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        gpus += gpu_count(wanted)[0]
        cpus += int(quantity(wanted.get("cpu")) * 1000)
        memory += int(quantity(wanted.get("memory")) // 2**20)
    containers = tuple(c.get("name") or "" for c in spec.get("containers") or ())
    named = annotations.get(DEFAULT_CONTAINER_ANNOTATION) or ""
    # As kubectl: the annotation's container when the pod has it, else the first one.
    default_container = named if named in containers else (containers[0] if containers else "")
    reason, message = status.get("reason") or "", status.get("message") or ""
    phase = status.get("phase") or "Pending"
    restarts, exit_code = 0, None
    finished = ended_reason = ""
    container_restarts = []
    for cs in status.get("containerStatuses") or ():
        restarts += cs.get("restartCount") or 0
        container_restarts.append((cs.get("name") or "", cs.get("restartCount") or 0))
        state = cs.get("state") or {}
        if "waiting" in state:
            waiting = state["waiting"] or {}
            if waiting.get("reason") in WAITING_REASONS:
                reason, message = waiting["reason"], waiting.get("message") or ""
        elif "terminated" in state:
            term = state["terminated"] or {}
            if exit_code is None or term.get("exitCode"):
                exit_code = term.get("exitCode")
                finished, ended_reason = term.get("finishedAt") or "", term.get("reason") or ""
            if phase == "Failed" and not reason:
                reason = term.get("reason") or ""
    if phase == "Pending" and not reason:
        for cond in status.get("conditions") or ():
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                reason, message = cond.get("reason") or "Unschedulable", cond.get("message") or ""
                break
    return PodInfo(
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        phase=phase,
        node=spec.get("nodeName") or "",
        job=job,
        index=index,
        gpus=gpus,
        cpus_milli=cpus,
        memory_mb=memory,
        reason=reason,
        message=message,
        restarts=restarts,
        exit_code=exit_code,
        created=meta.get("creationTimestamp") or "",
        started=status.get("startTime") or "",
        deleting=bool(meta.get("deletionTimestamp")),
        containers=containers,
        finished=finished,
        ended_reason=ended_reason,
        default_container=default_container,
        container_restarts=tuple(container_restarts),
        tb_logdir=str(annotations.get(ANN_LOGDIR) or ""),
    )


def job_info(obj: dict) -> JobInfo:
    meta = obj.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    condition = reason = message = ""
    for cond in status.get("conditions") or ():
        if cond.get("status") == "True" and cond.get("type") in ("Complete", "Failed", "Suspended", "FailureTarget"):
            condition, reason, message = cond["type"], cond.get("reason") or "", cond.get("message") or ""
            if condition in ("Complete", "Failed"):
                break
    pod_spec = (spec.get("template") or {}).get("spec") or {}
    containers = pod_spec.get("containers") or [{}]
    gpus = 0
    for container in containers:
        res = container.get("resources") or {}
        gpus += gpu_count({**(res.get("limits") or {}), **(res.get("requests") or {})})[0]
    name = meta.get("name", "")
    return JobInfo(
        namespace=meta.get("namespace", ""),
        name=name,
        uid=meta.get("uid", ""),
        indexed=spec.get("completionMode") == "Indexed",
        ours=ANN_SUBMIT_ID in annotations,
        display_name=annotations.get(ANN_NAME) or name,
        kind=annotations.get(ANN_KIND, ""),
        user=annotations.get(ANN_USER, ""),
        command=annotations.get(ANN_COMMAND, ""),
        submit_id=annotations.get(ANN_SUBMIT_ID, ""),
        parallelism=int(spec.get("parallelism") or 0) if spec.get("parallelism") is not None else 1,
        completions=spec.get("completions"),
        active=status.get("active") or 0,
        succeeded=status.get("succeeded") or 0,
        failed=status.get("failed") or 0,
        condition=condition,
        condition_reason=reason,
        condition_message=message,
        created=meta.get("creationTimestamp") or "",
        started=status.get("startTime") or "",
        finished=status.get("completionTime") or "",
        deleting=bool(meta.get("deletionTimestamp")),
        image=containers[0].get("image") or "",
        gpus_per_pod=gpus,
        outputs=annotations.get(ANN_OUTPUTS, ""),
    )


EXTRACTORS = {"nodes": node_info, "pods": pod_info, "jobs": job_info}
