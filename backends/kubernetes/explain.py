"""Why a Kubernetes Job waits, from what the cluster already says: its pods' scheduling condition and
``FailedScheduling`` events (``0/3 nodes are available: 3 Insufficient nvidia.com/gpu.`` -> resources
with the counts; untolerated taints; node affinity; unbound volumes; cordoned nodes), a container that
cannot start (an image that cannot be pulled -> "cannot start: image"), and the Job controller's
``FailedCreate`` events (a ResourceQuota refusal: ``exceeded quota``). Pure functions over the pods and
events the backend read (GETs only)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from yanflow_tui.backends.kubernetes.extract import PodInfo
from yanflow_tui.explain import Category, Explanation
from yanflow_tui.model import Job, JobState

IMAGE_REASONS = ("ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull")
START_REASONS = ("CreateContainerConfigError", "CreateContainerError", "CrashLoopBackOff", "RunContainerError")
_AVAILABLE = re.compile(r"0/(?P<total>\d+) nodes are available: (?P<body>.*?)(?:\.\s*preemption:.*|\.?\s*)$", re.S)
_ITEM = re.compile(r"(\d+) (.+?)(?=, \d+ |$)")
_QUOTA = re.compile(
    r"exceeded quota: (?P<quota>[^,]+), requested: (?P<req>\S+), used: (?P<used>\S+), limited: (?P<limit>\S+)"
)
# why a pod cannot start -> (what, what to do, when it starts, the short phrase)
CANNOT_START = {
    "image": (
        "its image cannot be pulled",
        "fix the image name or the registry's credentials (imagePullSecrets), then submit it again",
        "not until the image can be pulled",
        "cannot start: image",
    ),
    "container": (
        "its container cannot start",
        "press l for its logs; the job detail (Enter) shows its events",
        "not until the container can start",
        "cannot start",
    ),
}
TOLERATE = "add a toleration for it to the job's pod template (s submits a changed job), or ask for other nodes"


@dataclass(frozen=True)
class Unschedulable:
    """The scheduler's message read: how many nodes there are and why each group of them was refused."""

    total: int
    reasons: tuple[tuple[int, str], ...]  # (nodes, why), as the scheduler said them

    def category(self) -> Category:
        texts = [why for _, why in self.reasons]
        if any(why.startswith("Insufficient") or "Too many pods" in why for why in texts):
            return Category.RESOURCES
        if any("taint" in why or "unschedulable" in why or "not ready" in why.lower() for why in texts):
            return Category.NODE_STATE
        return Category.CONFIGURATION if texts else Category.UNKNOWN


def read_scheduler(message: str) -> Unschedulable | None:
    """``0/3 nodes are available: 1 node(s) had untolerated taint {gpu: a100}, 2 Insufficient
    nvidia.com/gpu. preemption: ...`` -> Unschedulable(3, ((1, "node(s) had untolerated taint {gpu:
    a100}"), (2, "Insufficient nvidia.com/gpu"))); None for any other message."""
    match = _AVAILABLE.search(" ".join(message.split()))
    if match is None:
        return None
    items = tuple((int(n), why.strip().rstrip(".")) for n, why in _ITEM.findall(match["body"]))
    return Unschedulable(int(match["total"]), items)


def _plain(count: int, why: str, total: int) -> str:
    """One group of refused nodes, said plainly."""
    of = f"{count} of {total} node{'s' if total != 1 else ''}"
    if why.startswith("Insufficient "):
        return f"{of} have too little free {why.removeprefix('Insufficient ')}"
    taint = re.search(r"taint (\{[^}]*\})", why)
    if taint:
        return f"{of} have a taint the pod does not tolerate {taint.group(1)}"
    if "affinity" in why or "selector" in why:
        return f"{of} do not match the pod's node selector or affinity"
    if "unbound" in why.lower() or "PersistentVolumeClaim" in why:
        return f"{of}: the pod's volume claims are not bound"
    if "unschedulable" in why:
        return f"{of} are cordoned (unschedulable)"
    return f"{of}: {why}"


SHORTS = {
    Category.RESOURCES: "waits for {what}",
    Category.NODE_STATE: "no node it tolerates",
    Category.CONFIGURATION: "no node matches",
}


def explain_pods(job: Job, pods: Sequence[PodInfo], events: Sequence[tuple[str, str, str, str, str]]) -> Explanation:
    """The explanation of ``job`` from its pods and the events about it and them (``(when, type, reason,
    object, message)``, oldest first, as ``KubernetesBackend._events`` gives them)."""
    state = job.state.value.upper()
    base = partial(Explanation, job_id=job.id, cluster=job.cluster, state=state, code=job.reason)
    if job.state is JobState.RUNNING:
        nodes = ", ".join(sorted({p.node for p in pods if p.node})) or "its nodes"
        return base(category=Category.RUNNING, reason=f"It is running on {nodes}.")
    if job.state.terminal:
        said = f"It ended {job.state.value}" + (f" (exit code {job.exit_code})" if job.exit_code is not None else "")
        return base(category=Category.FINISHED, reason=said + ".")
    for pod in pods:  # a container that cannot start says the most
        kind = "image" if pod.reason in IMAGE_REASONS else "container" if pod.reason in START_REASONS else ""
        if kind:
            what, action, why, short = CANNOT_START[kind]
            return base(
                category=Category.LAUNCH_FAILURE,
                reason=f"Pod {pod.name} cannot start: {what} ({pod.reason}: {pod.message}).",
                action=action,
                expected_start_why=why,
                short=short,
                code=pod.reason,
            )
    messages = [m for _, _, reason, _, m in events if reason == "FailedScheduling"]
    messages += [p.message for p in pods if p.reason == "Unschedulable" and p.message]
    for message in reversed(messages):  # the latest first
        read = read_scheduler(message)
        if read is None:
            continue
        category = read.category()
        groups = "; ".join(_plain(n, why, read.total) for n, why in read.reasons)
        lacking = [why.removeprefix("Insufficient ") for _, why in read.reasons if why.startswith("Insufficient")]
        what = lacking[0] if lacking else ""
        asks = pods[0].gpus if pods else 0
        gpus = f" (each pod asks for {asks} GPU{'s' if asks != 1 else ''})" if asks else ""
        action = TOLERATE if category is Category.NODE_STATE else ""
        if category is Category.CONFIGURATION:
            action = "change the job's node selector, affinity or volumes (s submits a changed job)"
        return base(
            category=category,
            reason=f"No node can take it: {groups}{gpus}.",
            action=action,
            expected_start_why="the scheduler gives no estimate: it starts when a node fits",
            short=SHORTS.get(category, "unschedulable").format(what=what.replace("nvidia.com/gpu", "GPUs")),
            details=(("Scheduler", message),),
            code="Unschedulable",
        )
    for _, _, reason, obj, message in reversed(events):
        quota = _QUOTA.search(message)
        if reason == "FailedCreate" and quota:
            return base(
                category=Category.LIMITS,
                reason=(
                    f"Its pods are refused by ResourceQuota {quota['quota']}: it asks for {quota['req']}, "
                    f"{quota['used']} is in use, the quota allows {quota['limit']}."
                ),
                action="wait for the namespace's other pods to end, or ask for fewer resources",
                expected_start_why="once the quota has room: the Job controller retries",
                short="over quota",
                details=(("Event", f"{obj}: {message}"),),
                code="FailedCreate",
            )
    if not pods:
        return base(
            category=Category.UNKNOWN,
            reason="It has no pods yet, and no event says why.",
            expected_start_why="not known",
            short="no pods yet",
        )
    return base(
        category=Category.UNKNOWN,
        reason=f"Its pods are {', '.join(sorted({p.phase for p in pods}))}"
        + (f" ({job.reason})" if job.reason else "")
        + ".",
        expected_start_why="not known",
        short=job.reason or "",
    )
