"""The backend protocol: async reads, gated writes, and capability flags the UI asks instead of
branching on the backend's kind.

Every mutating call (``submit``, ``cancel``, ``perform``) is a final method of ``Backend`` that passes the
read-only gate before any I/O; subclasses implement ``_submit`` / ``_cancel`` / ``_perform`` and may
not override the public methods. Every verb that takes a job id checks it with ``check_id`` (the
backend's own grammar) before any I/O.

A backend with ``capabilities.submit_tags`` implements ``_submit_tagged`` instead of ``_submit``: each
submission carries a tag the backend can find the job by, so a submit whose answer was lost says
"submitted as N" or raises ``SubmitUnknown`` (never a refusal), and a retry with the same tag looks
it up before sending.

Each capability flag that names a method (``logs`` -> ``stream_logs``, ``metrics`` -> ``metrics``...) must
come with an override of that method: ``Backend.__init_subclass__`` refuses a class that declares one
without it (see ``FLAG_METHODS``).

A backend with ``capabilities.native_files`` also takes job files as they are written (an sbatch
script, a Determined config, a Kubernetes manifest): the spec carries the file (``JobSpec.native``),
``submit`` passes the same gate and sends it through ``_submit_native``.

A backend that must ask the user something while it connects (a one-time code, a key's passphrase)
asks through ``Backend.prompter`` (``prompting.Prompter``), which the app and the CLI set; deadlines
leave out the time the question is open (``prompting.within``, ``Backend.asker``).
Inside a running job (``capabilities.files``, ``shell``, ``forward``): ``list_files`` / ``download`` read a
job's output directory and copy from it (not gated: they write only on this machine); ``shell`` opens an
interactive shell in the real terminal (gated: it can change anything); ``forward`` forwards a port of
the job to 127.0.0.1. See ``JobFile``, ``Download``, ``Shell`` and ``Forward``.

``BackendInfo`` is what a backend package declares about itself in its light ``plugin.py``: its kind, its
config options, its job spec section, its refresh default, its discovery and where its class lives. The
registry collects them, so the core (config, spec) never lists kinds.
"""

from __future__ import annotations

import abc
import asyncio
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from yanflow_tui.backends.jobfiles import NativeFormat
from yanflow_tui.backends.prompting import Asker, Prompter
from yanflow_tui.capacity import Request
from yanflow_tui.curves import EventListing
from yanflow_tui.efficiency import Efficiency
from yanflow_tui.errors import BackendError, NotOffered, ReadOnlyError, SubmitUnknown
from yanflow_tui.explain import Explanation
from yanflow_tui.firstfailure import RankEvidence
from yanflow_tui.formfields import FormField, default_fields
from yanflow_tui.liveuse import LiveUse
from yanflow_tui.model import (
    DEFAULT_REFRESH,
    NATIVE_KINDS,
    Checkpoint,
    ClusterConfig,
    Image,
    Job,
    JobKind,
    JobSpec,
    LogLine,
    MetricPoint,
    Node,
)
from yanflow_tui.placement_rank import Placement
from yanflow_tui.share import Share

GATED_METHODS = ("submit", "cancel", "perform", "shell", "tensorboard", "upload")
SUBMIT_TAG = re.compile(r"[0-9a-f]{12,64}")
SUBMIT_BUDGET = 25.0  # default bound on one submit: it fits in the hub's 30 s call timeout


def new_submit_tag() -> str:
    return uuid.uuid4().hex


def check_submit_tag(tag: str) -> str:
    if not SUBMIT_TAG.fullmatch(tag or ""):
        raise BackendError(f"not a submit tag: {tag!r} (expected the 12-64 hex digits a submit printed)")
    return tag


MAX_ID = 512  # no backend's job id is longer


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do. The UI shows actions by these flags, never by backend kind."""

    submit: bool = False
    cancel: bool = False
    logs: bool = False  # ``stream_logs`` works (followed too)
    job_kinds: frozenset[JobKind] = field(default_factory=frozenset)
    history: bool = False  # finished jobs are listed (``widen_history`` says how far back)
    # Extra mutating verbs beyond cancel, e.g. ("pause", "activate", "kill"); run through ``perform``.
    # Verbs of ``VERB_ARGS`` take the arguments named there (``perform(id, "signal", {"signal": "USR1"})``).
    actions: tuple[str, ...] = ()
    rank_logs: bool = False  # log lines carry a rank in ``LogLine.source``
    metrics: bool = False  # ``metrics(job_id)`` returns points
    checkpoints: bool = False  # ``checkpoints`` / ``download_checkpoint`` work
    raw_spec: bool = False  # ``raw_spec(job_id)`` returns the job as the cluster holds it
    submit_tags: bool = False  # ``submit(spec, tag=...)`` finds an earlier submit by its tag before sending
    # Jobs run on the machine the console runs on (no scheduler in between). A spec without
    # ``cluster:`` goes to a scheduler first, so training does not land on a login node.
    runs_here: bool = False
    # ``scopes(kind)`` / ``set_scope(kind, value)``: what the cluster is seen through switches live, e.g. a
    # kubeconfig context or a namespace (as k9s's ``:ctx`` and ``:ns``). Kinds are ``SCOPE_KINDS``.
    scopes: bool = False
    # Job files taken as they are written (kinds of ``model.NATIVE_KINDS``: "sbatch", "determined",
    # "kubernetes"): ``submit`` of a spec whose ``native`` is one of them sends that file.
    native_files: frozenset[str] = field(default_factory=frozenset)
    # ``event_files`` / ``read_event_bytes``: the TensorBoard event files under a job's log directory,
    # read by byte offset (training curves; see ``yanflow_tui.curves``).
    event_files: bool = False
    efficiency: bool = False  # ``efficiency(job_ids)`` returns seff's figures (CPU, memory, time)
    files: bool = False  # ``list_files`` / ``download``: a job's output directory, listed and copied here
    shell: bool = False  # ``shell``: an interactive shell inside a running job, in the real terminal
    no_shell: str = ""  # without ``shell``: why this cluster's jobs have none, said plainly when one is asked for
    forward: bool = False  # ``forward``: a port of a running job forwarded to 127.0.0.1
    # ``tensorboard``: a TensorBoard the cluster starts for a job (a task it creates, or a server where the files
    # are: behind the gate). Without it (or read-only, or none there, with ``event_files``), the console runs
    # one itself over the job's event files (see ``yanflow_tui.tensorboards``).
    tensorboard: bool = False
    # ``job_file(job_id, args)``: a job as a job file of its own kind to load into the Submit form (e.g. an
    # sbatch script with the job's options), with the form values to set (resubmit's larger time or memory).
    job_files: bool = False
    # The read capabilities that need more than read permissions on this cluster (e.g. Kubernetes runs
    # ``event_files`` and ``files`` by exec in a pod, ``create`` on ``pods/exec``, and ``forward`` through
    # ``pods/portforward``), and what they need, said plainly. Read-only mode turns them off
    # (``read_only_view``): a read-only console asks the cluster for read permissions only.
    needs_write: frozenset[str] = field(default_factory=frozenset)
    needs_write_why: str = ""
    # ``explain(job_id)``: why the job waits or is not running (``yanflow_tui.explain.Explanation``), from
    # reads only; the Queue's REASON column shows ``short_reason(job.reason)``, a pure mapping (no I/O).
    explain: bool = False
    # The flags read-only mode turned off (``needs_write`` of a read-only cluster), for the UI to say why.
    off_read_only: frozenset[str] = field(default_factory=frozenset)
    # ``rank_evidence(job_id)``: what the scheduler says of each rank of an ended job (exit codes, signals,
    # the out-of-memory killer, end times, torchrun's error files), for the first failure across ranks
    # (``yanflow_tui.firstfailure``). Without it, the job's own exit code and end stand for its one rank.
    rank_evidence: bool = False
    # ``placement(spec, nodes)``: the scheduler's own answer on when and where a job would start, asked
    # without submitting it (Slurm: ``sbatch --test-only``). Without it, ``placement_rank`` judges from the nodes.
    placement: bool = False
    # ``share()``: my standing and limits on the cluster with their use (fair-share, QoS, quotas, pools).
    share: bool = False
    # ``upload(source, target)``: a file or folder of this machine copied onto the cluster (gated: it writes
    # there), e.g. a checkpoint carried from another cluster to resume from (``yanflow_tui.resume``).
    upload: bool = False
    # ``live_use(job_ids)``: running jobs' CPU and memory now from the cluster's own live source (``/proc``,
    # the metrics API, trial system metrics: ``yanflow_tui.liveuse``). A read: read-only mode allows it.
    live_use: bool = False
    # ``native_resubmission(job_id, env)``: a job this console did not submit (sbatch'ed by hand, ``kubectl
    # apply``'d) given back as a spec to send again as its cluster holds it (its own job file, ``JobSpec.native``,
    # with the settings it ran with), ``env`` set in its environment: what ``resume`` sends when no spec was kept.
    resubmission: bool = False

    def read_only_view(self) -> Capabilities:
        """These capabilities on a read-only cluster: every flag of ``needs_write`` off."""
        if not self.needs_write:
            return self
        off: dict[str, Any] = dict.fromkeys(self.needs_write, False)
        return replace(self, off_read_only=self.needs_write, **off)

    def why_off(self, flag: str) -> str:
        """Why ``flag`` is off on this read-only cluster ("" when read-only did not turn it off)."""
        if flag not in self.off_read_only:
            return ""
        return f"off in read-only mode: it needs {self.needs_write_why or 'more than read permissions'}"


# The arguments each verb with arguments takes, for the CLI and the console's dialogs to ask for
# (every one optional): resubmit's ``time``/``mem`` override the job's, ``more`` doubles what ran out.
VERB_ARGS: dict[str, tuple[str, ...]] = {
    "resubmit": ("more", "time", "mem"),
    "edit": ("time", "partition", "qos"),
    "signal": ("signal",),
}
SIGNALS = ("TERM", "INT", "HUP", "USR1", "USR2", "KILL", "STOP", "CONT")  # the short list ``signal`` offers


# Capability flag -> the methods a backend declaring it must override (with ``submit_tags``, submit
# is ``_submit_tagged``; ``actions`` counts when it names any verb).
FLAG_METHODS: dict[str, tuple[str, ...]] = {
    "submit": ("_submit",),
    "submit_tags": ("_submit_tagged",),
    "cancel": ("_cancel",),
    "actions": ("_perform",),
    "logs": ("stream_logs",),
    "metrics": ("metrics",),
    "checkpoints": ("checkpoints", "download_checkpoint"),
    "raw_spec": ("raw_spec",),
    "scopes": ("scopes", "set_scope"),
    "native_files": ("_submit_native", "_render_native"),
    "event_files": ("event_files", "read_event_bytes"),
    "efficiency": ("efficiency",),
    "files": ("list_files", "download"),
    "shell": ("_shell",),
    "forward": ("forward",),
    "tensorboard": ("_tensorboard",),
    "job_files": ("job_file",),
    "explain": ("explain",),
    "rank_evidence": ("rank_evidence",),
    "placement": ("placement",),
    "share": ("share",),
    "upload": ("_upload",),
    "live_use": ("live_use",),
    "resubmission": ("native_resubmission",),
}

# The kinds of scope a backend with ``capabilities.scopes`` may switch: its connection (a kubeconfig
# context) and the part of the cluster listed (a namespace). ``SCOPE_ALL`` is "every one" of a kind.
SCOPE_KINDS = ("context", "namespace")
SCOPE_ALL = "*"


def missing_overrides(cls: type[Backend]) -> list[tuple[str, str]]:
    """(flag, method) for each capability ``cls`` declares without overriding the method behind it."""
    caps = cls.capabilities
    missing = []
    for flag, methods in FLAG_METHODS.items():
        if not getattr(caps, flag) or (flag == "submit" and caps.submit_tags):
            continue
        missing += [(flag, m) for m in methods if getattr(cls, m) is getattr(Backend, m)]
    return missing


@dataclass(frozen=True)
class TerminalLogin:
    """A login made in the real terminal, before the console starts or while it is suspended, so the
    user answers whatever the cluster asks (a one-time code, a key passphrase, Kerberos) as with their
    own ``ssh``. ``check`` exits 0 when the cluster is logged in already; ``argv`` logs in, prompting
    on the terminal, and exits 0 once it has (it may leave a process behind, e.g. an ssh master);
    ``batch`` is the same login with no terminal (a command in a pipe, cron): it never prompts, and
    logs in only when nothing needs asking (an agent's key, a key with no passphrase, Kerberos)."""

    cluster: str
    what: str  # told to the user before the prompts, e.g. "ssh master for alice@login.hpc"
    argv: tuple[str, ...]
    check: tuple[str, ...]
    batch: tuple[str, ...] = ()  # () when the login cannot be made without a terminal


@dataclass(frozen=True)
class JobFile:
    """One entry of a job's output directory."""

    name: str
    path: str  # as the cluster names it, for ``download`` and ``list_files``
    size: int
    mtime: datetime | None
    is_dir: bool = False


@dataclass(frozen=True)
class FileListing:
    """A folder of a job: where it is (as the cluster names it) and its entries, folders first."""

    path: str
    files: tuple[JobFile, ...]


@dataclass(frozen=True)
class Download:
    """A finished download: where it is, its bytes, what it was checked against (e.g. "size and
    sha256"), the bytes an earlier interrupted try had fetched already, and what a folder's download
    left out, each with why: a link whose target is outside the folder (never followed out of it), a
    folder loop."""

    path: Path
    size: int
    checked: str
    resumed_from: int = 0
    skipped: tuple[str, ...] = ()


@dataclass(frozen=True)
class Shell:
    """An interactive shell ready to open: ``run`` takes the real terminal (the console is suspended),
    blocks until the shell exits and returns its exit status."""

    what: str  # e.g. "pod ml/train-0 (container main)"
    run: Callable[[], int]


@dataclass(frozen=True)
class TensorBoardTask:
    """A TensorBoard the cluster runs for a job: its URL (e.g. the master's proxy) and how to stop it."""

    url: str
    what: str
    stop: Callable[[], Awaitable[None]] = field(compare=False)


@dataclass(frozen=True)
class Forward:
    """A forwarded port: 127.0.0.1:``local_port`` reaches ``remote_port`` of ``what``; ``close`` stops it."""

    what: str
    remote_port: int
    local_port: int
    close: Callable[[], Awaitable[None]] = field(compare=False)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.local_port}"


class Gate:
    """The one read-only gate. ``check`` raises before any I/O when the gate is closed."""

    def __init__(self, cluster: str, read_only: bool):
        self.cluster = cluster
        self.read_only = read_only

    def check(self, action: str) -> None:
        if self.read_only:
            raise ReadOnlyError(f"cluster {self.cluster!r} is read-only: {action} refused")

    def check_read(self, action: str, needs: str) -> None:
        """A read that needs a write permission on the cluster (``needs``, e.g. ``create`` on
        ``pods/exec``): refused before any I/O when the gate is closed, as a write is."""
        if self.read_only:
            raise ReadOnlyError(f"cluster {self.cluster!r} is read-only: {action} needs {needs}, refused")


class Backend(abc.ABC):
    """Base class of every backend. Instances serve one configured cluster."""

    # Set in the class body; an instance may narrow its own (a monitor-only cluster takes no jobs), and
    # ``UnavailableBackend`` takes its config's kind.
    kind: str = ""
    capabilities: Capabilities = Capabilities()
    # Where this kind reads a running job's GPU use and its CPU and memory of its own
    # (``yanflow_tui.jobhealth``): the source's name, or where none is read, the source that would
    # give it, as "(missing) ...". A cluster's Prometheus with a DCGM exporter comes on top, by config.
    gpu_use_source: str = "(missing) a DCGM exporter behind Prometheus (the cluster's metrics: option)"
    cpu_use_source: str = "(missing) none known for this kind of cluster"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in GATED_METHODS:
            if name in cls.__dict__:
                raise TypeError(f"{cls.__name__} overrides {name}(); implement _{name}() so the gate stays in front")
        for flag, method in missing_overrides(cls):
            raise TypeError(f"{cls.__name__} declares capabilities.{flag} but does not override {method}()")

    def __init__(self, config: ClusterConfig):
        self.config = config
        self.name = config.name
        self.gate = Gate(config.name, config.read_only)
        if config.read_only:
            self.capabilities = self.capabilities.read_only_view()
        self._on_change: Callable[[], None] | None = None
        self._on_mutation: Callable[[], None] | None = None
        self.submit_refusal = ""  # why a cluster shown for monitoring only takes no jobs, for submit's error
        self.all_users = False  # every user's jobs, or only mine: see ``set_all_users``
        self.asker = Asker()  # asks the user while connecting (a one-time code, a passphrase): see ``prompter``

    @property
    def prompter(self) -> Prompter | None:
        """How this backend asks the user a question while it connects; the app and the CLI set it
        for every backend (None: nothing can ask, and a login that wants an answer fails saying so)."""
        return self.asker.prompter

    @prompter.setter
    def prompter(self, prompter: Prompter | None) -> None:
        self.asker.prompter = prompter

    @property
    def read_only(self) -> bool:
        return self.gate.read_only

    # -- reads -------------------------------------------------------------------------------
    @abc.abstractmethod
    async def list_jobs(self) -> list[Job]:
        """Current (and, where the backend keeps them, recent) jobs. A backend that knows what changed
        since its previous answer (a watch, a poll that rebuilds only changed jobs) returns a
        ``JobList`` with ``JobChanges``: the Queue then looks at those jobs only."""

    def check_id(self, job_id: str) -> None:
        """Raise ``BackendError`` unless ``job_id`` is an id of this backend's form. No I/O: every
        verb that takes an id calls it before anything reaches the cluster (``cancel`` and
        ``perform`` here, the reads in each backend). Backends narrow it to their own grammar."""
        if not isinstance(job_id, str) or not job_id or len(job_id) > MAX_ID or not job_id.isprintable():
            raise BackendError(f"not a job id on cluster {self.name!r}: {job_id!r}")

    async def get_job(self, job_id: str) -> Job:
        self.check_id(job_id)
        for job in await self.list_jobs():
            if job.id == job_id:
                return job
        raise BackendError(f"no job {job_id!r} on cluster {self.name!r}")

    @abc.abstractmethod
    async def list_nodes(self) -> list[Node]:
        """Nodes with their GPUs."""

    def stream_logs(self, job_id: str, follow: bool = False, stream: str = "") -> AsyncIterator[LogLine]:
        """Yield the job's log lines; with ``follow``, keep yielding until the job ends. ``stream``
        is one of ``log_streams(job_id)``; "" is the job's main log. A followed stream survives a
        dropped connection: it yields a ``status`` line, reconnects and resumes where it stopped,
        with no line lost or repeated."""
        raise BackendError(f"cluster {self.name!r} cannot show logs")

    async def log_streams(self, job_id: str) -> tuple[str, ...]:
        """The job's separate logs, main log ("") first, e.g. ``("", "stderr")`` where a Slurm job's
        StdErr goes to a file of its own. The console opens one pane per stream."""
        return ("",)

    async def describe(self, job_id: str) -> str:
        """A human-readable description of one job (fields, reason, events)."""
        self.check_id(job_id)
        job = await self.get_job(job_id)
        return describe_job(job)

    def render(self, spec: JobSpec) -> str:
        """What ``submit`` would send, in the backend's native form (for ``--dry-run``). No I/O."""
        self.check_spec(spec)
        return self._render_native(spec) if spec.native is not None else self._render(spec)

    def images(self) -> tuple[Image, ...]:
        """The images catalogue the Submit form offers for this cluster: its config's ``images:``, then
        what the backend learned itself (Determined: the master's default images). No I/O."""
        return self.config.images

    def form_fields(self, kind: JobKind) -> tuple[FormField, ...]:
        """The Submit form's fields for ``kind`` on this cluster, in order: the spec fields this
        backend uses for that kind (see ``yanflow_tui.formfields``). No I/O."""
        return default_fields(kind)

    def capacity_request(self, spec: JobSpec) -> Request:
        """What ``spec`` asks of this cluster's nodes, for ``capacity.verdict``: per node, its GPUs
        (and their type), CPUs and memory, the pool it goes to and whether it wants whole nodes.
        The pool is the value of the form field marked ``pool`` (its default where the spec has none);
        backends with GPU types or whole-node requests in their spec fields add them. No I/O."""
        res = spec.resources
        pool, label = None, "partition"
        for field_ in self.form_fields(spec.kind):
            if field_.pool:
                section, _, key = field_.key.partition(".")
                values = spec.sections.get(section)
                value = values.get(key) if isinstance(values, dict) else None
                pool, label = (str(value) if value else str(field_.default or "")) or None, field_.label.lower()
                break
        return Request(
            nodes=res.nodes, gpus=res.gpus, cpus=res.cpus, memory_mb=res.memory_mb, pool=pool, pool_label=label
        )

    def check_spec(self, spec: JobSpec) -> None:
        """Raise ``BackendError`` if this backend cannot run ``spec``."""
        if spec.kind not in self.capabilities.job_kinds:
            kinds = ", ".join(sorted(k.value for k in self.capabilities.job_kinds)) or "none"
            raise BackendError(
                f"cluster {self.name!r} ({self.kind}) cannot run {spec.kind.value} jobs; it runs: {kinds}"
            )
        native = spec.native
        if native is not None and native.kind not in self.capabilities.native_files:
            takes = ", ".join(NATIVE_KINDS.get(k, k) for k in sorted(self.capabilities.native_files)) or "none"
            raise BackendError(
                f"cluster {self.name!r} ({self.kind}) does not take {NATIVE_KINDS.get(native.kind, native.kind)} "
                f"({native.file}); it takes: {takes}"
            )

    async def close(self) -> None:
        """Release connections and files. Here: forget the change callback (a closed backend tells no
        one of changes); backends that hold more override it."""
        self._on_change = None
        self._on_mutation = None

    async def raw_spec(self, job_id: str) -> str:
        """The job as the cluster itself holds it, in its native form (``scontrol show job -dd``,
        the Job object as YAML, the experiment config...), for the job detail view."""
        raise BackendError(f"cluster {self.name!r} cannot show a job's raw spec")

    async def scopes(self, kind: str) -> list[str]:
        """The values ``set_scope(kind, ...)`` takes (one of ``SCOPE_KINDS``), ``SCOPE_ALL`` first where
        "every one" is offered. Plain strings, for the console to offer as they are."""
        raise BackendError(f"cluster {self.name!r} has no {kind} to switch")

    def scope(self, kind: str) -> str:
        """The ``kind`` scope in use now ("" where there is none). No I/O."""
        return ""

    async def set_scope(self, kind: str, value: str) -> str:
        """Switch the ``kind`` scope to ``value`` (one of ``scopes(kind)``): cached data and watches are
        dropped, and the next reads are of the new scope. Returns what is shown now, e.g. "namespace ml".
        Not gated: it changes what is read, never the cluster."""
        raise BackendError(f"cluster {self.name!r} has no {kind} to switch")

    async def efficiency(self, job_ids: Sequence[str]) -> dict[str, Efficiency]:
        """seff's figures for the jobs that have them (started ones), by job id; a job with no
        accounting yet is left out. A read: not gated."""
        raise BackendError(f"cluster {self.name!r} has no efficiency figures")

    async def live_use(self, job_ids: Sequence[str]) -> dict[str, LiveUse]:
        """``capabilities.live_use``: the running jobs' CPU and memory now, by job id (a job not measured
        is left out); raises ``NotOffered`` naming the source where the cluster has none. A read: not gated."""
        raise BackendError(f"cluster {self.name!r} has no live figures of its jobs")

    async def metrics(self, job_id: str) -> list[MetricPoint]:
        """Reported metrics of a job or trial, oldest first."""
        raise BackendError(f"cluster {self.name!r} has no metrics")

    async def placement(self, spec: JobSpec, nodes: Sequence[Node]) -> Placement:
        """``capabilities.placement``: whether ``spec`` would start now, wait (until when) or never run
        here, why, and on which nodes, as the scheduler itself says, with ``nodes`` (the latest listed)
        at hand. A read: nothing is submitted, and read-only mode allows it."""
        raise BackendError(f"cluster {self.name!r} cannot say where a job would start")

    async def share(self) -> Share:
        """``capabilities.share``: my standing and limits on this cluster with their current use. A read."""
        raise BackendError(f"cluster {self.name!r} cannot show your share of it")

    async def event_files(self, job_id: str) -> EventListing:
        """The job's log directory and the TensorBoard event files under it (any depth), with their
        sizes now. A directory not there yet lists no files."""
        raise BackendError(f"cluster {self.name!r} cannot read a job's event files")

    async def read_event_bytes(self, job_id: str, path: str, offset: int, limit: int) -> tuple[int, bytes]:
        """(start, at most ``limit`` bytes of ``path``, one of ``event_files``, from ``start``): ``start``
        is ``offset``, or 0 where the file is now shorter than ``offset`` (truncated or replaced)."""
        raise BackendError(f"cluster {self.name!r} cannot read a job's event files")

    async def checkpoints(self, job_id: str) -> list[Checkpoint]:
        """Checkpoints of a job or trial."""
        raise BackendError(f"cluster {self.name!r} has no checkpoints")

    async def download_checkpoint(
        self, checkpoint: Checkpoint, target: Path, progress: Callable[[int, int | None], None] | None = None
    ) -> Path:
        """Download into ``target`` atomically (temp dir beside it, renamed when complete).
        ``progress(done_bytes, total_bytes_or_None)`` is called as data arrives. Not gated: it
        writes only on this machine."""
        raise BackendError(f"cluster {self.name!r} cannot download checkpoints")

    async def rank_evidence(self, job_id: str) -> list[RankEvidence]:
        """Each rank of the job as the scheduler saw it end (no log lines: those come from
        ``stream_logs``, matched by ``RankEvidence.source``). Read-only calls, each with its timeout."""
        raise NotOffered(f"cluster {self.name!r} says nothing of a job's ranks")

    async def list_files(self, job_id: str, path: str = "") -> FileListing:
        """The entries of ``path`` ("": the job's output directory) inside the job."""
        raise BackendError(f"cluster {self.name!r} cannot list a job's files")

    async def download(
        self, job_id: str, path: str, target: Path, progress: Callable[[int, int | None], None] | None = None
    ) -> Download:
        """Copy the job's file or folder ``path`` to ``target`` atomically (a temp beside it, renamed
        when complete and checked). ``progress(done_bytes, total_or_None)`` as data arrives (maybe from
        a thread). Not gated: it writes only on this machine."""
        raise BackendError(f"cluster {self.name!r} cannot download a job's files")

    async def forward(self, job_id: str, port: int, rank: str = "", local_port: int = 0) -> Forward:
        """Forward ``port`` of the running job (its ``rank``; "": the first) to 127.0.0.1:``local_port``
        (0: a free one) until ``Forward.close``."""
        raise BackendError(f"cluster {self.name!r} cannot forward a job's ports")

    async def explain(self, job_id: str) -> Explanation:
        """``capabilities.explain``: why the job waits or is not running, with the values (what it waits
        for, the limit and its use, the jobs ahead), what the user can do and when it is expected to
        start. Reads only: never gated, never changes the cluster."""
        raise BackendError(f"cluster {self.name!r} cannot explain a job")

    def short_reason(self, reason: str) -> str:
        """A few words for the Queue's REASON column from a job's own ``reason``, with no I/O (pure and
        cheap: it runs per row). By default the reason as it is."""
        return reason

    @property
    def current_user(self) -> str:
        """Who we are on this cluster, once known; "" when unknown (then nothing is hidden by the
        console's "mine" view)."""
        return ""

    def about(self) -> tuple[tuple[str, str], ...]:
        """What the Clusters screen says of where and as whom the console works here, as (label,
        value) pairs in order, e.g. (("user", "alice"), ("context", "prod"), ("namespace", "ml")); a
        value "" is unknown yet. No I/O. By default: the user (``current_user``) and each scope in use."""
        scopes = tuple((kind, self.scope(kind)) for kind in SCOPE_KINDS if self.capabilities.scopes)
        return (("user", self.current_user), *scopes)

    def set_all_users(self, all_users: bool) -> None:
        """The console switched between "mine" and "all users"; kept in ``all_users``. Backends that
        filter by user on the server read it at their next read and ask for everyone or for me; the
        others list everyone anyway and the console filters."""
        self.all_users = all_users

    @property
    def notice(self) -> str:
        """A note on a healthy cluster, e.g. "history needs accounting", shown on the Clusters screen
        (the header only marks that there is one). Empty when there is nothing to say."""
        return ""

    def terminal_login(self) -> TerminalLogin | None:
        """How this cluster logs in in the real terminal, or None (it logs in by itself, or through
        ``login``). A read that needs it first raises ``LoginInTerminal``. May run a quick local
        command (e.g. ``ssh -G``) the first time."""
        return None

    async def login(self, password: str) -> None:
        """Log in with a password the user typed after a read raised ``AuthRequired``. Keep the
        password only as long as the login takes; never log or store it."""
        raise BackendError(f"cluster {self.name!r} does not take a password")

    async def retry_login(self) -> None:
        """Log in again after the user cancelled (or failed) a login that asks its own questions
        through ``prompter`` (``AuthRequired`` with ``asks``): the user asked for it (``l``)."""
        raise BackendError(f"cluster {self.name!r} has no login to retry")

    def widen_history(self) -> str:
        """Look further back for finished jobs (``capabilities.history``); returns what is listed
        now, e.g. "history: the last 7 days". The next refresh lists them. A backend with no window
        lists every finished job it keeps already."""
        return "history: every finished job the cluster keeps is listed"

    def invalidate(self) -> None:  # noqa: B027 - an optional hook: the base caches nothing, so nothing to drop
        """The user asked for a refresh now: drop any cached data so the next reads go to the
        cluster (a backend that polls some data less often, e.g. nodes, refetches it)."""

    def set_change_callback(self, callback: Callable[[], None] | None) -> None:
        """Backends that learn of changes by push (watches) call ``notify_changed`` so the console
        refreshes at once instead of at its next poll. Call it on the event loop (from a thread:
        ``loop.call_soon_threadsafe(self.notify_changed)``); the app coalesces bursts."""
        self._on_change = callback

    def notify_changed(self) -> None:
        if self._on_change is not None:
            self._on_change()

    def set_mutation_callback(self, callback: Callable[[], None] | None) -> None:
        """``callback`` is called (on the event loop) after each mutating call that succeeded (submit,
        cancel, ``perform``): the console refreshes that cluster's jobs and nodes at once."""
        self._on_mutation = callback

    def _mutated(self) -> None:
        """A mutating call succeeded: what this backend cached is out of date (a cancelled job's nodes
        are being freed): dropped (``invalidate``), and the console told."""
        self.invalidate()
        if self._on_mutation is not None:
            self._on_mutation()

    @property
    def submit_budget(self) -> float:
        """The most seconds one ``submit`` takes, lookups by tag included (callers wait a little
        longer: the backend answers ``SubmitUnknown`` at this bound, never a bare timeout)."""
        return SUBMIT_BUDGET

    async def verb_defaults(self, job_id: str, action: str, args: Mapping[str, str]) -> dict[str, str]:
        """The arguments the console offers, prefilled, for ``action`` on the job: e.g. for ``resubmit``
        with ``more``, the job's time limit and memory with the one that ran out doubled; for ``edit``,
        each field's value now (``time``, ``partition``, ``qos``). A read (not
        gated); ``{}`` where the backend suggests nothing (the console then asks only to confirm)."""
        self.check_id(job_id)
        return {}

    async def job_file(self, job_id: str, args: Mapping[str, str]) -> tuple[str, str, dict[str, str]]:
        """``capabilities.job_files``: the job as a job file to submit again from the form, for
        ``resubmit`` with ``args`` (``VERB_ARGS``): (a file name to suggest, the file's text, form values
        by field key that differ from the file, e.g. the doubled time limit after a TIMEOUT). A read (not
        gated: the form's Submit is)."""
        raise BackendError(f"cluster {self.name!r} cannot give a job back as a job file")

    async def native_resubmission(self, job_id: str, env: Mapping[str, str]) -> JobSpec:
        """``capabilities.resubmission``: the job as a spec to submit again, for a job whose own spec is not
        known here: its job file as the cluster holds it (``spec.native``: Slurm's batch script with the
        options the job ran with, a Kubernetes Job's manifest under a new name), ``env`` added to its
        environment. Reads only (not gated: the submit is, through ``submit``). Raises ``BackendError`` for a
        job that cannot be sent again as one (a job array, a heterogeneous job), saying why."""
        raise BackendError(f"cluster {self.name!r} cannot give a job back to submit it again")

    def check_args(self, action: str, args: Mapping[str, str]) -> None:
        """Raise ``BackendError`` unless ``args`` suit ``action`` (the names ``VERB_ARGS`` gives it, the
        values in this backend's grammar, e.g. a Slurm time limit). No I/O: the console asks before
        its confirmation, and ``perform`` again before anything is sent."""
        unknown = sorted(set(args) - set(VERB_ARGS.get(action, ())))
        if unknown:
            raise BackendError(f"{action} takes no {', '.join(unknown)}")

    # -- writes: gated, final ----------------------------------------------------------------
    async def submit(self, spec: JobSpec, tag: str | None = None) -> str:
        """Submit ``spec``; return the new job id. A refusal raises ``BackendError``; a lost answer
        whose job cannot be found raises ``SubmitUnknown`` with the tag. ``tag``: retry the
        submission that ``SubmitUnknown`` named; the job holding it is returned if there is one,
        and ``spec`` is sent (with that tag) only if there is none."""
        job_id = await self._gated_submit(spec, tag)
        self._mutated()
        return job_id

    async def _gated_submit(self, spec: JobSpec, tag: str | None) -> str:
        self.gate.check("submit")
        if not self.capabilities.submit:
            raise BackendError(self.submit_refusal or f"cluster {self.name!r} does not accept submissions")
        self.check_spec(spec)
        native = spec.native is not None  # a job file sent as written (``capabilities.native_files``)
        if not self.capabilities.submit_tags:
            if tag is not None:
                raise BackendError(f"cluster {self.name!r} cannot look a submission up by its tag")
            return await (self._submit_native(spec, None, False) if native else self._submit(spec))
        retry = tag is not None
        tag = new_submit_tag() if tag is None else check_submit_tag(tag)
        budget = self.submit_budget
        send = self._submit_native if native else self._submit_tagged
        try:
            return await asyncio.wait_for(send(spec, tag, retry), budget)
        except (TimeoutError, asyncio.TimeoutError):
            raise SubmitUnknown(self.name, tag, f"no answer within {budget:.0f} s") from None

    async def cancel(self, job_id: str) -> None:
        """Cancel a job (pending or running)."""
        self.gate.check("cancel")
        if not self.capabilities.cancel:
            raise BackendError(f"cluster {self.name!r} cannot cancel jobs")
        self.check_id(job_id)
        await self._cancel(job_id)
        self._mutated()

    async def perform(self, job_id: str, action: str, args: Mapping[str, str] | None = None) -> str:
        """Run one of ``capabilities.actions`` (pause, activate, kill, hold...) on a job, with the
        arguments ``VERB_ARGS`` names for it. Returns what came of it, e.g. "submitted as 124" ("" when
        there is nothing to add)."""
        self.gate.check(action)
        if action not in self.capabilities.actions:
            raise BackendError(f"cluster {self.name!r} cannot {action} jobs")
        self.check_id(job_id)
        args = dict(args or {})
        self.check_args(action, args)
        said = await self._perform(job_id, action, args) or ""
        self._mutated()
        return said

    async def shell(self, job_id: str, rank: str = "") -> Shell:
        """An interactive shell inside the running job (its ``rank``; "": the first), for the real terminal."""
        self.gate.check("shell")
        if not self.capabilities.shell:
            raise NotOffered(self.capabilities.no_shell or f"cluster {self.name!r} cannot open a shell in a job")
        self.check_id(job_id)
        return await self._shell(job_id, rank)

    async def tensorboard(self, job_id: str) -> TensorBoardTask:
        """A TensorBoard started on the cluster for the job (it creates a task there: gated)."""
        self.gate.check("tensorboard")
        if not self.capabilities.tensorboard:
            raise BackendError(f"cluster {self.name!r} cannot start a TensorBoard")
        self.check_id(job_id)
        return await self._tensorboard(job_id)

    async def upload(self, source: Path, target: str) -> str:
        """Copy the local file or folder ``source`` to ``target`` on the cluster (relative: to the home its
        commands start in), written beside it and moved into place only when complete and checked, never
        replacing anything there. Returns its absolute path there. Gated: it writes on the cluster."""
        self.gate.check("upload")
        if not self.capabilities.upload:
            raise BackendError(f"cluster {self.name!r} cannot take files from this console")
        return await self._upload(source, target)

    # -- to implement --------------------------------------------------------------------------
    def _render(self, spec: JobSpec) -> str:
        raise BackendError(f"cluster {self.name!r} cannot render job specs")

    async def _submit(self, spec: JobSpec) -> str:
        raise BackendError(f"cluster {self.name!r} does not accept submissions")

    async def _submit_tagged(self, spec: JobSpec, tag: str, retry: bool) -> str:
        """Send ``spec`` carrying ``tag``; with ``retry``, first return the job that holds ``tag``
        if any. When the answer is lost, find the job by its tag or raise ``SubmitUnknown``."""
        raise BackendError(f"cluster {self.name!r} does not accept submissions")

    async def _submit_native(self, spec: JobSpec, tag: str | None, retry: bool) -> str:
        """Send ``spec.native`` as written (with what the form changed, where the backend can say it
        apart, e.g. sbatch options). ``tag`` and ``retry`` as in ``_submit_tagged`` (None without
        ``capabilities.submit_tags``)."""
        raise BackendError(f"cluster {self.name!r} does not take job files as they are")

    def _render_native(self, spec: JobSpec) -> str:
        """What ``_submit_native`` would send, for the preview and ``--dry-run``. No I/O."""
        raise BackendError(f"cluster {self.name!r} does not take job files as they are")

    async def _cancel(self, job_id: str) -> None:
        raise BackendError(f"cluster {self.name!r} cannot cancel jobs")

    async def _perform(self, job_id: str, action: str, args: Mapping[str, str]) -> str | None:
        raise BackendError(f"cluster {self.name!r} cannot {action} jobs")

    async def _shell(self, job_id: str, rank: str) -> Shell:
        raise BackendError(f"cluster {self.name!r} cannot open a shell in a job")

    async def _tensorboard(self, job_id: str) -> TensorBoardTask:
        raise BackendError(f"cluster {self.name!r} cannot start a TensorBoard")

    async def _upload(self, source: Path, target: str) -> str:
        raise BackendError(f"cluster {self.name!r} cannot take files from this console")


# An option only discovery sets (no config can: no backend declares it): the cluster is shown for
# monitoring only and takes no jobs, e.g. this machine when it is a Slurm login node.
MONITOR_ONLY = "monitor_only"

# The types a key of a backend's spec section may hold (``BackendInfo.section``).
# ``options``: extra command-line options passed through, a mapping ``name: value`` (``true`` or empty for
# a bare flag) or a list of ``name`` / ``name=value`` items (normalised to the mapping).
SECTION_TYPES = ("text", "bool", "whole", "map", "list", "options")


@dataclass(frozen=True)
class BackendInfo:
    """What a backend package declares about itself, in its ``plugin.py`` (a light module: it imports no
    SDK, only this one and the model). The registry collects them; the config loader, the spec loader
    and the hub ask it instead of listing kinds. Only ``kind`` and ``backend`` are required: a backend
    with nothing else to say takes no options, has no spec section and is never discovered."""

    kind: str  # the ``kind:`` of a cluster entry in the config
    backend: str | type[Backend]  # ``"module:Class"``, imported only when a cluster of this kind is made
    # The cluster entry's own keys (beyond name, kind, read_only, refresh_seconds, description,
    # defaults); the backend reads them from ``ClusterConfig.options``.
    options: tuple[str, ...] = ()
    # The job spec's ``<kind>:`` section, key -> one of ``SECTION_TYPES``; empty: the spec has no such
    # section. The spec loader checks it; the backend reads it as ``spec.section(kind)``.
    section: Mapping[str, str] = field(default_factory=dict, hash=False)
    multiline: tuple[str, ...] = ()  # section keys whose text may hold tabs and line breaks
    entrypoint: str = ""  # a section key that an experiment may give instead of ``command``
    refresh: float = DEFAULT_REFRESH  # a cluster's refresh_seconds when its config sets none
    # Clusters of this kind visible from here with no config file (``env``: the environment), e.g. one
    # for $DET_MASTER. None: never discovered.
    discover: Callable[[Mapping[str, str]], Iterable[ClusterConfig]] | None = None
    # Sees every discovered cluster (after $YANFLOW_DISCOVER) and returns the list, changed where this
    # kind's presence says something of the others (Slurm: this machine is a login node).
    review: Callable[[list[ClusterConfig]], list[ClusterConfig]] | None = None
    # The job files it takes as written (``backends/jobfiles.py``), e.g. Slurm's sbatch scripts; each
    # kind goes with ``Capabilities.native_files`` of the backend class.
    native: tuple[NativeFormat, ...] = ()
    # What to install when the backend's own imports fail (its SDK), e.g. "yanflow-tui[determined]".
    extra: str = ""

    def __post_init__(self) -> None:
        bad = {key: kind for key, kind in self.section.items() if kind not in SECTION_TYPES}
        if bad:
            raise TypeError(f"backend {self.kind!r}: spec section types must be one of {SECTION_TYPES}, got {bad}")
        for key in (*self.multiline, *([self.entrypoint] if self.entrypoint else [])):
            if key not in self.section:
                raise TypeError(f"backend {self.kind!r}: {key!r} is not a key of its spec section")


def describe_job(job: Job, extra: Iterable[tuple[str, str]] = ()) -> str:
    """Job fields, then the backend's ``job.details``, then ``extra``, as one block of aligned
    ``key: value`` lines, the way ``kubectl describe`` reads. Each label appears once: an ``extra``
    entry replaces a detail of the same label; multi-line values are indented under their value."""
    extra = list(extra)
    replaced = {label for label, _ in extra}
    rows: list[tuple[str, object]] = [
        ("Job", job.id),
        ("Cluster", job.cluster),
        ("Name", job.name),
        ("User", job.user),
        ("Kind", job.kind.value),
        ("State", f"{job.state.value} ({job.raw_state})" if job.raw_state else job.state.value),
        ("Reason", job.reason or "-"),
        (
            "Exit code",
            "-" if job.exit_code is None else str(job.exit_code) + (f" (signal {job.signal})" if job.signal else ""),
        ),
        ("Nodes", ", ".join(job.nodes) or "-"),
        ("GPUs", f"{job.gpus}" + (f" (indices {','.join(map(str, job.gpu_indices))})" if job.gpu_indices else "")),
        ("Submitted", _time(job.submit_time)),
        ("Started", _time(job.start_time)),
        ("Ended", _time(job.end_time)),
        ("Command", job.command or "-"),
    ]
    if job.image:
        rows.append(("Image", job.image))
        replaced.add("Image")
    rows += [(label, value) for label, value in job.details if label not in replaced]
    rows += extra
    width = max(len(k) for k, _ in rows) + 1
    indent = "\n" + " " * (width + 1)
    return "\n".join(f"{k + ':':<{width}} {indent.join(str(v).rstrip().splitlines()) or '-'}" for k, v in rows)


def _time(value: datetime | None) -> str:
    return value.astimezone().strftime("%Y-%m-%d %H:%M:%S") if value else "-"
