"""The domain model: plain frozen dataclasses shared by every backend and every screen.

Backends translate their systems' objects into these; nothing else crosses into the UI.

The per-job and per-node ones (``Job``, ``Node``, ``Gpu``, ``LogLine``) are built by the hundred
thousand, so they have ``__slots__`` and a quicker ``__init__`` (``speed.quick_init``), and intern their
repeated words (cluster, user, state, partition...): one string per distinct value, not per object.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from sys import intern
from typing import Any

from yanflow_tui.speed import quick_init


def intern_all(values: Iterable[str]) -> tuple[str, ...]:
    """A tuple of interned strings (node names, partitions): shared by every object that names them."""
    return tuple(intern(v) if type(v) is str else v for v in values)


class JobState(str, enum.Enum):
    """Normalised job state. Backends keep their raw state beside it."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETING = "completing"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    UNKNOWN = "unknown"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_STATES

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.value


TERMINAL_STATES = frozenset({JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED})


class JobKind(str, enum.Enum):
    """The four job types of the platform (see PLATFORM.txt)."""

    SINGLE = "single"
    MULTI_NODE = "multi-node"
    EXPERIMENT = "experiment"
    SLURM = "slurm"

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.value


class GpuState(str, enum.Enum):
    FREE = "free"
    ALLOCATED = "allocated"
    UNAVAILABLE = "unavailable"


DEFAULT_REFRESH = 5.0  # seconds between refreshes of a cluster whose kind and config set none


@dataclass(frozen=True)
class Cluster:
    """A configured cluster as the UI sees it."""

    name: str
    kind: str
    read_only: bool = False
    refresh_seconds: float = DEFAULT_REFRESH
    description: str = ""


@dataclass(frozen=True)
class Image:
    """One entry of a cluster's images catalogue: a container image the Submit form offers."""

    name: str  # what ``image:`` takes, e.g. pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime
    description: str = ""
    frameworks: tuple[str, ...] = ()  # e.g. ("pytorch 2.4", "deepspeed")
    source: str = "config"  # "config", or where the backend learned it (e.g. "master default")


@dataclass(frozen=True)
class ClusterConfig:
    """One cluster's entry of the config (``yanflow_tui.config`` loads it; each backend reads its own
    ``options``, the keys its package declares)."""

    name: str
    kind: str
    read_only: bool = False
    refresh_seconds: float = DEFAULT_REFRESH
    description: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)  # spec fields the Submit form starts with
    images: tuple[Image, ...] = ()  # the images catalogue (``images:``), offered by the Submit form
    # ``file:line: field: message`` of a broken entry, loaded leniently (the console): the cluster is
    # shown in error with these lines instead of stopping the app
    problems: tuple[str, ...] = ()


@quick_init("name", "reason", "job_id")
@dataclass(frozen=True, slots=True)
class Gpu:
    """One GPU of a node. Utilisation and memory are None where the backend cannot see them."""

    index: int
    state: GpuState = GpuState.FREE
    job_id: str | None = None
    uuid: str | None = None
    name: str | None = None
    utilization: float | None = None  # percent, 0-100
    memory_used_mb: int | None = None
    memory_total_mb: int | None = None
    reason: str = ""


@quick_init("cluster", "state", "gpu_type", "reason")
@dataclass(frozen=True, slots=True)
class Node:
    cluster: str
    name: str
    state: str
    partitions: tuple[str, ...] = ()
    cpus_total: int = 0
    cpus_allocated: int = 0
    memory_mb: int = 0
    memory_allocated_mb: int = 0
    gpu_type: str | None = None
    gpus_total: int = 0
    gpus_allocated: int = 0
    gpus: tuple[Gpu, ...] = ()
    reason: str = ""

    @property
    def gpus_free(self) -> int:
        return max(0, self.gpus_total - self.gpus_allocated)

    @property
    def whole_free(self) -> bool:
        """Every GPU free and usable: a whole node a multi-node job could take now. A drained,
        cordoned or down node (its GPUs marked unavailable) does not count."""
        return (
            self.gpus_total > 0
            and self.gpus_allocated == 0
            and not any(g.state is GpuState.UNAVAILABLE for g in self.gpus)
        )


@quick_init("cluster", "user", "raw_state", "reason", "image")
@dataclass(frozen=True, slots=True)
class Job:
    id: str
    cluster: str
    name: str
    user: str
    state: JobState
    raw_state: str = ""
    reason: str = ""
    nodes: tuple[str, ...] = ()
    gpus: int = 0
    submit_time: datetime | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    kind: JobKind = JobKind.SINGLE
    exit_code: int | None = None
    command: str = ""
    gpu_indices: tuple[int, ...] = ()
    # The id of the group row this job belongs under (array job, multi-node job, experiment);
    # empty for a top-level job. The queue shows children collapsed under their parent.
    parent: str = ""
    # Backend-specific facts for the detail view, e.g. (("Partition", "gpu"), ("QOS", "normal")).
    details: tuple[tuple[str, str], ...] = ()
    image: str = ""  # the container image it runs in, where the backend knows it
    # How many tasks this row stands for: a pending Slurm array's remainder (``1023_[0-5]``) is one
    # row of 6. A group's count is its members' tasks, not its rows.
    tasks: int = 1
    signal: int | None = None  # the signal that ended a finished job, where the backend knows it (0: none)

    @property
    def key(self) -> str:
        """Unique across clusters; used as the table row key."""
        return f"{self.cluster}/{self.id}"


_ANSWERS = itertools.count(1)  # every JobList's serial: unique in the process, never 0


@dataclass(frozen=True, slots=True)
class JobChanges:
    """What differs between a backend's answer to ``list_jobs`` and its answer numbered ``since``:
    the jobs new or in a new version (each a new object; ids unique) and the ids listed no more.
    A backend that learns its changes as they happen (a watch, a poll that rebuilds only the jobs
    that changed) hands them over with the jobs, so that a view of 100,000 jobs touches only those."""

    since: int  # the serial of the JobList these changes are relative to
    put: tuple[Job, ...] = ()
    gone: tuple[str, ...] = ()


class JobList(list[Job]):
    """An answer to ``Backend.list_jobs`` that is numbered (``serial``) and may say what changed since
    an earlier one (``changes``; None: not known, compare everything). A plain list is a fine
    answer too: it is taken as one whose changes are not known."""

    __slots__ = ("serial", "changes")

    def __init__(self, jobs: Iterable[Job] = (), changes: JobChanges | None = None) -> None:
        super().__init__(jobs)
        self.serial = next(_ANSWERS)
        self.changes = changes


@quick_init("job_id", "source")
@dataclass(frozen=True, slots=True)
class LogLine:
    """One line of a job's output. ``source`` names a rank or stream where the backend has one.
    ``status`` marks a line from the console about the stream itself ("reconnecting…", "resumed"),
    not from the job: views show it as the stream's state and never store or save it."""

    job_id: str
    text: str
    source: str = ""
    status: bool = False


@dataclass(frozen=True)
class MetricPoint:
    """One reported metric value of a job or trial; ``group`` is ``training`` or ``validation``."""

    name: str
    step: int
    value: float
    group: str = "training"


@dataclass(frozen=True)
class Checkpoint:
    """A stored checkpoint of a job or trial."""

    uuid: str
    job_id: str
    steps: int | None = None
    state: str = ""
    size_bytes: int | None = None
    metrics: tuple[tuple[str, float], ...] = ()
    time: datetime | None = None


@dataclass(frozen=True)
class Mount:
    source: str
    target: str
    read_only: bool = False


@dataclass(frozen=True)
class Resources:
    nodes: int = 1
    gpus: int = 0  # per node
    cpus: int | None = None  # per node
    memory_mb: int | None = None  # per node


# The job files a backend may take as they are (``Capabilities.native_files``), each with how it is named
# in messages: filled by the backend registry from each backend's declared formats (``BackendInfo.native``),
# e.g. "sbatch" -> "sbatch scripts". ``yanflow_tui.nativefiles`` recognises them from their content.
NATIVE_KINDS: dict[str, str] = {}


@dataclass(frozen=True)
class NativeFile:
    """A job file submitted as it is written (see ``yanflow_tui.nativefiles``). ``text`` is the file;
    ``data`` its parsed mapping (a Determined config, a Kubernetes object); ``context`` the folder an
    experiment's model definition is uploaded from; ``written`` the spec its own lines say (an sbatch
    script's directives), so what the form changes can be told apart from what the file says."""

    kind: str  # one of NATIVE_KINDS
    file: str
    text: str
    data: Any = None
    context: str = ""
    written: JobSpec | None = None
    editable: bool = False  # the form's fields may change what is sent (sbatch: as sbatch options)
    # The options the job ran with as its cluster recorded them, sent with the file (a job given back to
    # submit again, ``Backend.native_resubmission``: sbatch's ``--key=value`` before the form's changes).
    recorded: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class JobSpec:
    """A validated job spec (see ``yanflow_tui.spec`` for the file format)."""

    name: str
    kind: JobKind
    command: str | tuple[str, ...]
    cluster: str | None = None
    image: str | None = None
    workdir: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    mounts: tuple[Mount, ...] = ()
    resources: Resources = field(default_factory=Resources)
    launcher: str = "none"
    # The backend sections of the spec file, by kind (``{"slurm": {"partition": "gpu"}}``): each backend
    # package declares its own section's keys; only sections that set something are kept.
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)
    source: str = ""
    native: NativeFile | None = None  # a job file sent as written; the fields above say what it asks for
    outputs: str | None = None  # the job's output folder (relative to the workdir): where its Files view opens
    resume: str | None = None  # a glob of its checkpoints, relative to the output folder (``yanflow_tui.resume``)

    def section(self, kind: str) -> dict[str, Any]:
        """The ``kind:`` section of the spec (empty when the spec has none)."""
        return self.sections.get(kind) or {}

    @property
    def command_text(self) -> str:
        """The command as one line for display (argv commands are shell-quoted)."""
        import shlex

        if isinstance(self.command, str):
            return self.command
        return shlex.join(self.command)
