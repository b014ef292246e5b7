"""The answer to "why is my job waiting / not running", the same on every backend: an ``Explanation``
(its state, a ``Category``, a sentence with the concrete values, what the user can do with the key or
command, and the expected start with why), built by each backend's ``explain`` and shown by the job
detail's "Why" block, the Queue's REASON column (``short``) and ``yanflow-tui explain``. No UI here."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from typing import Any


class Category(str, enum.Enum):
    """What keeps a job from running, grouped the same way for every scheduler."""

    RESOURCES = "resources"  # waits for GPUs, CPUs, memory or nodes in use by other jobs
    PRIORITY = "priority"  # other jobs come first
    DEPENDENCY = "dependency"  # waits for another job
    LIMITS = "limits"  # a QoS, association, account or quota limit
    HELD = "held"  # held by its user or an administrator
    BEGIN_TIME = "begin_time"  # asked not to start before a time
    RESERVATION = "reservation"  # a reservation or maintenance window
    NODE_STATE = "node_state"  # the nodes or partition it needs are down, drained or inactive
    CONFIGURATION = "configuration"  # the request cannot be met as written (constraints, account, partition)
    LAUNCH_FAILURE = "launch_failure"  # it was given resources and could not start (image, prolog, launch)
    RUNNING = "running"
    FINISHED = "finished"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Explanation:
    """One job's answer. ``reason`` is a sentence naming the values (the job depended on and its state,
    the limit with its value and use, the nodes and why); ``action`` says what the user can do, with the
    console's key or the command ("" when waiting is all there is); ``expected_start`` is when the
    scheduler expects it to start (None: see ``expected_start_why``); ``short`` is a few words for the
    Queue's REASON column; ``details`` are extra (label, value) facts, e.g. the jobs ahead."""

    job_id: str
    cluster: str
    state: str
    category: Category
    reason: str
    action: str = ""
    expected_start: datetime | None = None
    expected_start_why: str = ""
    short: str = ""
    code: str = ""  # the scheduler's own reason, as it said it (e.g. Slurm's ``QOSGrpGRES``)
    details: tuple[tuple[str, str], ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "job": self.job_id,
            "cluster": self.cluster,
            "state": self.state,
            "category": self.category.value,
            "reason": self.reason,
            "action": self.action,
            "expected_start": self.expected_start.isoformat() if self.expected_start else None,
            "expected_start_why": self.expected_start_why,
            "short": self.short,
            "code": self.code,
            "details": {label: value for label, value in self.details},
        }

    def lines(self) -> list[str]:
        """The answer as plain text lines (the CLI's output, the detail's Why block)."""
        out = [f"{self.state}: {self.reason}"]
        if self.action:
            out.append(f"What to do: {self.action}")
        if self.expected_start is not None:
            when = self.expected_start.astimezone().strftime("%Y-%m-%d %H:%M:%S")
            out.append(f"Expected start: {when}" + (f" ({self.expected_start_why})" if self.expected_start_why else ""))
        elif self.expected_start_why:
            out.append(f"Expected start: unknown ({self.expected_start_why})")
        out += [f"{label}: {value}" for label, value in self.details]
        return out


def plain(job_id: str, cluster: str, state: str, category: Category, reason: str, **rest: Any) -> Explanation:
    """An explanation whose short phrase is the category's own when none is given."""
    rest.setdefault("short", SHORT[category])
    return Explanation(job_id, cluster, state, category, reason, **rest)


# The short phrase of each category, where the backend has none more precise.
SHORT = {
    Category.RESOURCES: "waits for resources",
    Category.PRIORITY: "others first",
    Category.DEPENDENCY: "waits for a job",
    Category.LIMITS: "over a limit",
    Category.HELD: "held",
    Category.BEGIN_TIME: "starts later",
    Category.RESERVATION: "reservation",
    Category.NODE_STATE: "nodes unavailable",
    Category.CONFIGURATION: "cannot run as asked",
    Category.LAUNCH_FAILURE: "cannot start",
    Category.RUNNING: "running",
    Category.FINISHED: "finished",
    Category.UNKNOWN: "",
}
