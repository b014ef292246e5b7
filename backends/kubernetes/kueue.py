"""Why a Job that Kueue holds suspended waits: its ``Workload`` (``kueue.x-k8s.io/v1beta1``, owned by
the Job) not admitted yet — its ``QuotaReserved`` condition (``Admitted`` on Kueue before 0.5) false,
with Kueue's message (``couldn't assign flavors to pod set main: insufficient unused quota for
nvidia.com/gpu in flavor default, 1 more needed``) — in the ClusterQueue its LocalQueue points at.
Pure functions over the objects as the API serves them; the backend reads them (GETs, through the
official client's ``CustomObjectsApi``) where the CRD exists."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from yanflow_tui.explain import Category, Explanation
from yanflow_tui.model import Job

GROUP = "kueue.x-k8s.io"
VERSION = "v1beta1"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"  # the Job's label naming its LocalQueue


def workload_of(items: Iterable[dict[str, Any]], job_name: str) -> dict[str, Any] | None:
    """The Workload the Job ``job_name`` owns (its controller reference), or None."""
    for item in items:
        for owner in (item.get("metadata") or {}).get("ownerReferences") or ():
            if owner.get("kind") == "Job" and owner.get("name") == job_name:
                return item
    return None


def condition(workload: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for cond in (workload.get("status") or {}).get("conditions") or ():
        if cond.get("type") == kind:
            return cond
    return None


def admitted(workload: dict[str, Any]) -> bool:
    return (condition(workload, "Admitted") or {}).get("status") == "True"


def local_queue(workload: dict[str, Any]) -> str:
    return str((workload.get("spec") or {}).get("queueName") or "")


def admission_queue(workload: dict[str, Any]) -> str:
    """The ClusterQueue named in the Workload's admission (once quota is reserved), else ""."""
    return str(((workload.get("status") or {}).get("admission") or {}).get("clusterQueue") or "")


def explain_workload(job: Job, workload: dict[str, Any], cluster_queue: str) -> Explanation | None:
    """Why ``job`` waits for Kueue (``cluster_queue``: the ClusterQueue its LocalQueue points at, "" when
    unknown); None once the Workload is admitted (then the pods say the rest)."""
    if admitted(workload):
        return None
    name = str((workload.get("metadata") or {}).get("name") or "")
    queue = local_queue(workload)
    cluster_queue = admission_queue(workload) or cluster_queue
    reserved = condition(workload, "QuotaReserved")
    said = reserved if reserved is not None and reserved.get("status") != "True" else condition(workload, "Admitted")
    said = said or {}
    message = str(said.get("message") or "").strip().rstrip(".")
    code = str(said.get("reason") or "Pending")
    where = f"ClusterQueue {cluster_queue}" if cluster_queue else f"the ClusterQueue of LocalQueue {queue}"
    if reserved is not None and reserved.get("status") == "True":
        message = message or "its quota is reserved; its admission checks have not passed yet"
    inadmissible = code == "Inadmissible"
    action = (
        f"submit it to a LocalQueue that exists and may use a ClusterQueue (the Job's label {QUEUE_LABEL})"
        if inadmissible
        else "wait for quota to free up in the ClusterQueue, or ask for fewer GPUs (s submits a changed job)"
    )
    return Explanation(
        job_id=job.id,
        cluster=job.cluster,
        state=job.state.value.upper(),
        category=Category.CONFIGURATION if inadmissible else Category.LIMITS,
        reason=(
            f"It is suspended, waiting for Kueue admission in {where} (LocalQueue {queue or '?'}, "
            f"Workload {name})" + (f": {message}." if message else ".")
        ),
        action=action,
        expected_start_why=f"Kueue gives no estimate: it admits the Workload when {where} has quota for it",
        short=f"waits for Kueue: {cluster_queue}" if cluster_queue else "waits for Kueue",
        code=code,
        details=(("Kueue workload", name), ("LocalQueue", queue or "?"), ("ClusterQueue", cluster_queue or "?")),
    )
