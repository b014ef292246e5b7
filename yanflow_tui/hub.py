"""The hub: one backend per configured cluster, refreshed with timeouts and backoff.

It keeps each cluster's latest data and health (ok, stale, error) so that losing a backend never
crashes anything: readers see the last good data marked stale, with the reason. No Textual here;
the app and the headless CLI both use it.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TypeVar

from yanflow_tui import gpumetrics
from yanflow_tui.backends import registry
from yanflow_tui.backends.base import Backend
from yanflow_tui.backends.prompting import within
from yanflow_tui.config import Config
from yanflow_tui.errors import AuthRequired, BackendError, BackendUnavailable, LoginInTerminal, YanflowError
from yanflow_tui.model import NATIVE_KINDS, Job, JobChanges, JobKind, JobList, JobSpec, Node

log = logging.getLogger(__name__)

CALL_TIMEOUT = 30.0
MAX_BACKOFF = 60.0
T = TypeVar("T")


class Health(str, enum.Enum):
    CONNECTING = "connecting"
    OK = "ok"
    STALE = "stale"
    ERROR = "error"


@dataclass(frozen=True)
class ClusterSnapshot:
    """The latest known state of one cluster, as the screens read it."""

    name: str
    kind: str
    read_only: bool
    health: Health = Health.CONNECTING
    message: str = ""
    updated: float | None = None  # wall-clock time of the last successful refresh
    jobs: tuple[Job, ...] = ()
    nodes: tuple[Node, ...] = ()
    failures: int = 0
    login_user: str = ""  # set while the cluster waits for this user's password (AuthRequired)
    detail: str = ""  # the whole error (every line, with its fix) or the backend's notice, for the Clusters screen
    login_asks: bool = False  # the login asks its own questions (AuthRequired.asks): ``l`` retries it
    terminal_login: bool = False  # set while the cluster waits for its login in the real terminal (LoginInTerminal)
    cached: bool = False  # the data is the last run's (``snapcache``), shown until the first good refresh
    cached_user: str = ""  # who "mine" was when it was kept (``snapcache``): "mine" while cached and not known yet
    # The serial of the backend's answer ``jobs`` came from (``JobList``; 0: a plain list, or cached),
    # and what changed since an earlier answer, when the backend said (None: compare the jobs to know)
    jobs_serial: int = 0
    job_changes: JobChanges | None = None
    # The backend's ``short_reason`` where it can explain (``capabilities.explain``): the Queue's REASON
    # column shows a job's reason through it (pure, no I/O); None: the reason as it is.
    reason_phrase: Callable[[str], str] | None = field(default=None, compare=False)

    @property
    def needs_login(self) -> bool:
        """The login key has something to do: a password to ask for, or a login in the terminal."""
        return bool(self.login_user or self.terminal_login)

    def age(self, now: float | None = None) -> float | None:
        return None if self.updated is None else max(0.0, (now or time.time()) - self.updated)


def full_error_text(exc: BaseException) -> str:
    """Every line of the error, its fix included (a host key's fingerprint, a config file:line...)."""
    text = str(exc).strip()
    if isinstance(exc, YanflowError) or not text:
        return text or error_text(exc)
    return f"{type(exc).__name__}: {text}"


def error_text(exc: BaseException) -> str:
    """One line for the user, never a traceback."""
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return "timed out"
    if isinstance(exc, YanflowError):
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _answer_fields(answer: list[Job]) -> dict:
    """A snapshot's ``jobs_serial`` and ``job_changes`` for a backend's answer to ``list_jobs``."""
    if isinstance(answer, JobList):
        return {"jobs_serial": answer.serial, "job_changes": answer.changes}
    return {"jobs_serial": 0, "job_changes": None}


@dataclass
class Hub:
    config: Config
    backends: dict[str, Backend] = field(default_factory=dict)
    snapshots: dict[str, ClusterSnapshot] = field(default_factory=dict)
    timeout: float = CALL_TIMEOUT
    # Each cluster's GPU metrics beside its backend (``metrics: {prometheus: URL}``), whatever its kind.
    metrics: dict[str, gpumetrics.MetricsSource] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for cluster in self.config.clusters:
            if cluster.name not in self.backends:
                self.backends[cluster.name] = registry.create(cluster)
            source = gpumetrics.source_for(cluster)
            if source is not None and cluster.name not in self.metrics:
                self.metrics[cluster.name] = source
            backend = self.backends[cluster.name]
            phrase = backend.short_reason if backend.capabilities.explain else None
            self.snapshots[cluster.name] = ClusterSnapshot(
                cluster.name, cluster.kind, cluster.read_only, reason_phrase=phrase
            )

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.config.clusters]

    def backend(self, name: str) -> Backend:
        try:
            return self.backends[name]
        except KeyError:
            self.config.cluster(name)  # raises a ConfigError naming the configured clusters
            raise

    async def call(self, coro: Awaitable[T], timeout: float | None = None, backend: Backend | None = None) -> T:
        """Await a backend call with the hub's timeout; time ``backend`` spends waiting on the user's
        answer (a login prompt) does not count."""
        if backend is None:
            return await asyncio.wait_for(coro, timeout or self.timeout)
        return await within(coro, timeout or self.timeout, backend.asker.waited)

    async def submit(self, name: str, spec: JobSpec, tag: str | None = None) -> str:
        """Submit through ``name``'s gate, waiting as long as that backend's submit may take (it
        answers ``SubmitUnknown`` with the tag at its own bound). ``tag``: retry that submission."""
        backend = self.backend(name)
        job_id = await self.call(backend.submit(spec, tag), timeout=backend.submit_budget + 5, backend=backend)
        await remember_spec(name, job_id, spec)
        return job_id

    async def refresh(self, name: str, jobs: bool = True, nodes: bool = True) -> ClusterSnapshot:
        """Refresh one cluster. Never raises: failures mark the snapshot stale or in error."""
        backend = self.backend(name)
        snap = self.snapshots[name]
        source = self.metrics.get(name) if nodes else None
        # The one metrics query runs beside the backend's calls; it never raises and has its own timeout.
        reading = asyncio.ensure_future(source.read()) if source is not None else None
        try:
            answer = await self.call(backend.list_jobs(), backend=backend) if jobs else None
            new_jobs = tuple(answer) if answer is not None else snap.jobs
            new_nodes = tuple(await self.call(backend.list_nodes(), backend=backend)) if nodes else snap.nodes
            if reading is not None:
                readings = await reading
                if readings is not None:
                    new_nodes = gpumetrics.enrich(new_nodes, readings)
        except Exception as exc:
            failures = snap.failures + 1
            if isinstance(exc, BackendUnavailable):
                health = Health.ERROR
            else:
                health = Health.STALE if snap.updated is not None else Health.ERROR
            login_user = exc.user if isinstance(exc, AuthRequired) else ""
            login_asks = isinstance(exc, AuthRequired) and exc.asks
            if snap.failures == 0:  # once per outage; each retry only with --debug
                log.warning("cluster %s: refresh failed: %s", name, error_text(exc), exc_info=exc)
            else:
                log.debug("cluster %s: refresh failed again: %s", name, error_text(exc))
            snap = replace(
                snap,
                health=health,
                message=error_text(exc),
                failures=failures,
                login_user=login_user,
                detail=full_error_text(exc),
                login_asks=login_asks,
                terminal_login=isinstance(exc, LoginInTerminal),
            )
        else:
            if snap.failures:
                log.info("cluster %s: refresh works again after %d failure(s)", name, snap.failures)
            notice = " · ".join(n for n in (backend.notice, source.note if source is not None else "") if n)
            snap = replace(
                snap,
                health=Health.OK,
                message=notice,
                updated=time.time(),
                jobs=new_jobs,
                nodes=new_nodes,
                **(_answer_fields(answer) if answer is not None else {}),
                failures=0,
                login_user="",
                detail=notice,
                login_asks=False,
                terminal_login=False,
                cached=False,
            )
        finally:
            if reading is not None and not reading.done():
                reading.cancel()  # the refresh failed or was cancelled: its metrics are not wanted
        self.snapshots[name] = snap
        return snap

    def next_delay(self, name: str) -> float:
        """Seconds until the next refresh: the cluster's interval, backed off after failures."""
        interval = self.config.cluster(name).refresh_seconds
        failures = self.snapshots[name].failures
        if not failures:
            return interval
        return min(MAX_BACKOFF, max(1.0, interval) * 2 ** min(failures - 1, 6))

    def find_job(self, cluster: str, job_id: str) -> Job | None:
        snapshot = self.snapshots.get(cluster)
        for job in snapshot.jobs if snapshot is not None else ():
            if job.id == job_id:
                return job
        return None

    def default_cluster(self, names: list[str], kind: JobKind | None = None, native: str | None = None) -> str | None:
        """Of ``names``, where a spec without ``cluster:`` goes: the first scheduler (its jobs do not run
        on this machine) that runs ``kind`` jobs (any kind: None) and is not read-only, else the first
        such cluster of any sort, else the first that runs the kind at all (its gate then says why).
        ``native``: the spec is a job file of that kind (``NATIVE_KINDS``): only clusters that take it."""

        def runs(name: str) -> bool:
            caps = self.backends[name].capabilities
            if native is not None and native not in caps.native_files:
                return False
            return bool(caps.job_kinds) if kind is None else kind in caps.job_kinds

        able = [n for n in names if runs(n)]
        writable = [n for n in able if not self.backends[n].read_only]
        schedulers = [n for n in writable if not self.backends[n].capabilities.runs_here]
        return next(iter(schedulers + writable + able), None)

    def cluster_for_submit(
        self,
        requested: str | None,
        spec_cluster: str | None,
        kind: JobKind,
        native: str | None = None,
        sections: Iterable[str] = (),
    ) -> str:
        """The cluster a spec goes to: --cluster, else the spec's own, else the one configured cluster
        of the kind a YanFlow spec was written for (its one backend section among ``sections``, e.g.
        ``kubernetes:``; refused when there is none or several), else ``default_cluster``."""
        name = requested or spec_cluster
        if name:
            self.config.cluster(name)
            return name
        written_for = [s for s in sections if s in registry.kinds()]
        if len(written_for) == 1 and native is None:  # (a job file goes where its kind is taken)
            return self._cluster_of_kind(written_for[0])
        found = self.default_cluster(self.names, kind, native)
        if found is None:
            if native is not None:
                raise BackendError(f"no configured cluster takes {NATIVE_KINDS.get(native, native)}; pass --cluster")
            raise BackendError(f"no configured cluster runs {kind.value} jobs; pass --cluster")
        return found

    def _cluster_of_kind(self, kind: str) -> str:
        """The one configured cluster of ``kind`` (a spec with that kind's section goes there)."""
        of_kind = [n for n in self.names if self.config.cluster(n).kind == kind]
        if len(of_kind) == 1:
            return of_kind[0]
        why = f"several are configured ({', '.join(of_kind)})" if of_kind else "none is configured"
        raise BackendError(f"the spec is written for a {kind} cluster (its {kind}: section) and {why}; pass --cluster")

    async def close(self) -> None:
        for backend in self.backends.values():
            try:
                await asyncio.wait_for(backend.close(), 5)
            except Exception:
                pass


async def remember_spec(cluster: str, job_id: str, spec: JobSpec) -> None:
    """Keep the spec of a job just submitted, for resume (``yanflow_tui.submitted``); a failure is logged only."""
    from yanflow_tui import submitted

    try:
        await asyncio.to_thread(submitted.remember, cluster, job_id, spec)
    except Exception as exc:  # bookkeeping never fails a submit the cluster took
        log.warning("the spec of job %s on %s was not kept: %s", job_id, cluster, exc)
