"""The Determined backend: one master, read through the ``determined`` SDK's ``bindings`` over its
REST API. Experiments are group rows with their trials as children; commands, notebooks, shells and
TensorBoards are single jobs; agents and their slots make the node/GPU map. Submit launches a
command or creates an experiment (context directory uploaded); kill/pause/activate are gated
actions; logs follow the task log stream with ranks; metrics and checkpoints come per trial.

Every SDK call runs in a worker thread with a request timeout (``det_session``); SDK objects never
leave this package: ``det_convert`` turns them into the domain model.
"""

from __future__ import annotations

from yanflow_tui import lazyimports

try:  # the optional extra: say which one to install (the registry imports this module lazily)
    lazyimports.lazy_determined()  # the SDK's training library (core, profiler, storage...) only if used
    import determined  # noqa: F401
except ModuleNotFoundError as _exc:
    if _exc.name and _exc.name.split(".")[0] == "determined":
        from yanflow_tui.backends.registry import install_command
        from yanflow_tui.errors import BackendUnavailable

        _how = install_command("yanflow-tui[determined]")
        raise BackendUnavailable(f"the determined backend needs the Python package 'determined': {_how}") from None
    raise

import asyncio
import copy
import logging
import re
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import replace
from datetime import timedelta, timezone
from pathlib import Path
from typing import Any

import requests
import yaml
from determined.common.api import bindings, errors

from yanflow_tui import formfields as ff
from yanflow_tui.backends.base import Backend, Capabilities, TensorBoardTask, describe_job
from yanflow_tui.backends.determined import checkpoints as det_checkpoints
from yanflow_tui.backends.determined import convert as det_convert
from yanflow_tui.backends.determined import explain as det_explain
from yanflow_tui.backends.determined import placement as det_placement
from yanflow_tui.backends.determined import submit as det_submit
from yanflow_tui.backends.determined import sysmetrics
from yanflow_tui.backends.determined.session import (
    CONNECT_TIMEOUT,
    DEFAULT_RETRIES,
    READ_TIMEOUT,
    AuthRequired,
    Connection,
    describe_error,
    is_ambiguous,
)
from yanflow_tui.capacity import Request
from yanflow_tui.config import ClusterConfig
from yanflow_tui.errors import BackendError, SubmitUnknown
from yanflow_tui.explain import Explanation
from yanflow_tui.images import merged
from yanflow_tui.liveuse import LiveUse
from yanflow_tui.model import Checkpoint, Image, Job, JobKind, JobSpec, LogLine, MetricPoint, Node
from yanflow_tui.placement_rank import Placement, judged_from_nodes
from yanflow_tui.share import Share, pool_share

__all__ = ["AuthRequired", "DeterminedBackend"]

log = logging.getLogger(__name__)

EXPERIMENT_LIMIT = 50  # newest experiments listed
TERMINAL_EXP = {"COMPLETED", "CANCELED", "ERROR", "DELETED", "DELETE_FAILED"}
TASK_LISTS = (
    ("command", bindings.get_GetCommands, "commands"),
    ("notebook", bindings.get_GetNotebooks, "notebooks"),
    ("shell", bindings.get_GetShells, "shells"),
    ("tensorboard", bindings.get_GetTensorboards, "tensorboards"),
)
TASK_KILL = {
    "command": lambda s, i: bindings.post_KillCommand(s, commandId=i),
    "notebook": lambda s, i: bindings.post_KillNotebook(s, notebookId=i),
    "shell": lambda s, i: bindings.post_KillShell(s, shellId=i),
    "tensorboard": lambda s, i: bindings.post_KillTensorboard(s, tensorboardId=i),
}
PREFIX_KIND = {prefix: kind for kind, prefix in det_convert.TASK_PREFIX.items()}
# exp-N, trial-N (N as the master writes it: no leading zeros), or a task's kind prefix and its id
# (a uuid), shortened to at least 8 characters.
JOB_ID = re.compile(
    r"(?:exp|trial)-(?:0|[1-9][0-9]{0,17})"
    rf"|(?:{'|'.join(PREFIX_KIND)})-[0-9a-f][0-9a-f-]{{{det_convert.SHORT_TASK - 1},63}}"
)
METRICS_READ_TIMEOUT = 5.0  # a running trial's metric stream may stay open: stop after a quiet spell
LOG_RECONNECT_MAX = 30.0
TENSORBOARD_WAIT = 20.0  # a launched TensorBoard task coming up (the hub's call timeout is 30 s)
LOG_QUEUE = 10_000  # log entries read ahead of the console before the reader thread waits


class DeterminedBackend(Backend):
    kind = "determined"
    gpu_use_source = cpu_use_source = "(missing) " + sysmetrics.WANTS
    capabilities = Capabilities(
        submit=True,
        cancel=True,
        logs=True,
        job_kinds=frozenset({JobKind.SINGLE, JobKind.EXPERIMENT}),
        history=True,
        actions=("pause", "activate", "kill"),
        rank_logs=True,
        metrics=True,
        checkpoints=True,
        raw_spec=True,
        submit_tags=True,
        native_files=frozenset({"determined"}),
        tensorboard=True,
        explain=True,
        share=True,
        placement=True,
        live_use=True,  # the trials' system metrics (CPU, GPUs) as the profiler reports them (``sysmetrics``)
        no_shell="Determined offers no shell into a running trial: start an interactive task beside it with "
        "`det shell start` (or `det notebook start`), and follow the trial here with its logs",
    )

    def __init__(self, config: ClusterConfig, env: Mapping[str, str] | None = None, retries=DEFAULT_RETRIES):
        super().__init__(config)
        self.conn = Connection(config.name, config.options, env, retries=retries)
        self.all_users = bool(config.options.get("all_users", False))
        self._holders: dict[str, str] = {}  # container id -> job id (GPU map)
        self._task_jobs: dict[str, str] = {}  # Determined task id -> job id
        self._tasks: dict[str, tuple[str, str]] = {}  # job id -> (task kind, full task id)
        self._trials_done: dict[int, list[Any]] = {}  # trials of finished experiments never change
        self._streams: set[threading.Event] = set()
        self._listed: tuple[float, list[Job]] = (float("-inf"), [])  # (monotonic time, jobs) of the last list
        self._default_images: tuple[Image, ...] | None = None  # the master's, read once (None: not yet)

    # -- auth, for the UI ------------------------------------------------------------------------
    @property
    def auth_required(self) -> AuthRequired | None:
        """Set after a read failed for want of a login; the UI then prompts for the password."""
        return self.conn.auth_error

    async def login(self, password: str) -> None:
        """Log in with a password the user typed; the token (not the password) goes to det's cache."""
        await asyncio.to_thread(self.conn.login, password)
        self.notify_changed()

    @property
    def current_user(self) -> str:
        return self.conn.user or ""

    # -- reads -----------------------------------------------------------------------------------
    async def list_jobs(self) -> list[Job]:
        jobs = await asyncio.to_thread(self.conn.call, self._list_jobs, "listing jobs")
        self._listed = (time.monotonic(), jobs)
        return jobs

    def _users(self, session) -> list[str] | None:
        return None if self.all_users else [session.username]

    def _list_jobs(self, session) -> list[Job]:
        users = self._users(session)
        exps = bindings.get_GetExperiments(
            session,
            users=users,
            limit=EXPERIMENT_LIMIT,
            orderBy=bindings.v1OrderBy.DESC,
            sortBy=bindings.v1GetExperimentsRequestSortBy.ID,
        ).experiments
        jobs: list[Job] = []
        task_jobs: dict[str, str] = {}
        for exp in exps:
            trials = self._trials(session, exp)
            jobs.append(det_convert.experiment_job(self.name, exp, trials))
            jobs.extend(det_convert.trial_job(self.name, exp, t) for t in trials)
            task_jobs.update({task: f"trial-{t.id}" for t in trials if (task := det_convert.task_of_trial(t))})
        tasks: list[tuple[str, Any]] = []
        for kind, fetch, attr in TASK_LISTS:
            tasks.extend((kind, t) for t in getattr(fetch(session, users=users), attr))
        self._tasks = {det_convert.task_job_id(kind, t.id): (kind, t.id) for kind, t in tasks}
        self._holders = det_convert.container_holders(tasks)
        task_jobs.update({t.id: det_convert.task_job_id(kind, t.id) for kind, t in tasks})
        self._task_jobs = task_jobs
        jobs.extend(det_convert.task_job(self.name, kind, t) for kind, t in tasks)
        return jobs

    def _trials(self, session, exp) -> list[Any]:
        if exp.id in self._trials_done:
            return self._trials_done[exp.id]
        trials = list(bindings.get_GetExperimentTrials(session, experimentId=exp.id).trials)
        if det_convert.exp_state(exp.state)[1] in TERMINAL_EXP:
            self._trials_done[exp.id] = trials
        return trials

    async def list_nodes(self) -> list[Node]:
        return await asyncio.to_thread(self.conn.call, self._list_nodes, "listing agents")

    async def share(self) -> Share:
        """The resource pools and their slots (GPUs): in use of all, free, and whole agents free."""
        return pool_share(self.name, await self.list_nodes(), "resource pool")

    def images(self) -> tuple[Image, ...]:
        """The config's catalogue, then the master's default images (read with the first node list)."""
        return merged(self.config.images, self._default_images or ())

    def _read_default_images(self, session) -> None:
        """Once: the master config's default images. A master that does not show its config to this
        user (403), or an older one without the call (404), has none to offer; any other failure is
        tried again at the next refresh."""
        try:
            config = bindings.get_GetMasterConfig(session).config
        except (errors.ForbiddenException, errors.NotFoundException) as exc:
            log.debug("no master config: %s", describe_error(exc, self.conn.master))
            self._default_images = ()
            return
        except (errors.APIException, bindings.APIHttpError) as exc:
            log.debug("master config not read: %s", describe_error(exc, self.conn.master))
            return
        self._default_images = det_convert.default_images(config if isinstance(config, dict) else {})

    def _list_nodes(self, session) -> list[Node]:
        if self._default_images is None:
            self._read_default_images(session)
        agents = bindings.get_GetAgents(session).agents
        holders = dict(self._holders)
        try:  # allocations name the containers of trials too (commands carry theirs already)
            summaries = bindings.get_GetTasks(session).allocationIdToSummary or {}
        except (errors.APIException, errors.ForbiddenException, bindings.APIHttpError) as exc:
            log.debug("no allocation summaries: %s", describe_error(exc, self.conn.master))
            summaries = {}
        holders.update(det_convert.allocation_holders(summaries.values(), self._task_jobs))
        return [det_convert.agent_node(self.name, a, holders) for a in agents]

    def check_id(self, job_id: str) -> None:
        if not isinstance(job_id, str) or not JOB_ID.fullmatch(job_id):
            raise BackendError(
                f"not a Determined job id: {job_id!r} (expected exp-N, trial-N, or "
                f"{'/'.join(PREFIX_KIND)}-ID with at least {det_convert.SHORT_TASK} characters of ID)"
            )

    async def get_job(self, job_id: str) -> Job:
        """By id; a task job also by its full task id (``cmd-<full uuid>``). The last refresh's list
        serves when it is younger than the refresh interval (opening a job lists nothing again)."""
        self.check_id(job_id)
        at, jobs = self._listed
        if time.monotonic() - at >= self.config.refresh_seconds or not any(j.id == job_id for j in jobs):
            jobs = await self.list_jobs()
        prefix, _, rest = job_id.partition("-")
        for job in jobs:
            if job.id == job_id:
                return job
        if prefix in PREFIX_KIND and len(rest) > det_convert.SHORT_TASK:
            for job in jobs:
                if job.id.startswith(prefix + "-") and dict(job.details).get("Task ID") == rest:
                    return job
        raise BackendError(f"no job {job_id!r} on cluster {self.name!r}")

    async def explain(self, job_id: str) -> Explanation:
        """The job's place in its resource pool's queue, and the pool's free slots (GETs only)."""
        self.check_id(job_id)
        job = await self.get_job(job_id)
        return await asyncio.to_thread(
            self.conn.call, lambda session: det_explain.read(session, job), "explaining a job"
        )

    async def placement(self, spec: JobSpec, nodes: Sequence[Node]) -> Placement:
        """The agents' verdict, with the jobs queued ahead in the pool it would go to (GETs only)."""
        judged = judged_from_nodes(self, spec, nodes)
        pool = str(spec.section("determined").get("resource_pool") or "")
        return await asyncio.to_thread(
            self.conn.call, lambda session: det_placement.read(session, pool, judged), "reading the job queue"
        )

    async def describe(self, job_id: str) -> str:
        self.check_id(job_id)
        job = await self.get_job(job_id)
        return describe_job(job)

    async def raw_spec(self, job_id: str) -> str:
        """An experiment's config, or a trial's hyperparameters, as YAML."""
        self.check_id(job_id)
        exp, trial = self._number(job_id, "exp"), self._number(job_id, "trial")
        if exp is None and trial is None:
            raise BackendError(f"{job_id!r} has no config on the master: choose an experiment or a trial")

        def fetch(session) -> str:
            if exp is not None:
                answer = bindings.get_GetExperiment(session, experimentId=exp)
                config = answer.experiment.config or answer.config or {}
                return yaml.safe_dump(config, sort_keys=False, allow_unicode=True)
            assert trial is not None  # an experiment or a trial: checked before
            found = bindings.get_GetTrial(session, trialId=trial).trial
            return yaml.safe_dump(
                {"experiment": found.experimentId, "trial": found.id, "hyperparameters": found.hparams or {}},
                sort_keys=False,
                allow_unicode=True,
            )

        return await asyncio.to_thread(self.conn.call, fetch, "reading the config")

    def invalidate(self) -> None:
        self._trials_done.clear()
        self._listed = (float("-inf"), [])

    # -- ids -------------------------------------------------------------------------------------
    @staticmethod
    def _number(job_id: str, prefix: str) -> int | None:
        number = job_id[len(prefix) + 1 :]
        if job_id.startswith(prefix + "-") and number.isascii() and number.isdigit():
            return int(job_id[len(prefix) + 1 :])
        return None

    def _task(self, session, job_id: str) -> tuple[str, str]:
        """(kind, full task id) of a ``cmd-``/``nb-``/``shell-``/``tb-`` job id (short or full)."""
        prefix, _, rest = job_id.partition("-")
        kind = PREFIX_KIND.get(prefix)
        if kind is None or not rest:
            raise BackendError(f"no job {job_id!r} on cluster {self.name!r}")
        for known, (k, full) in list(self._tasks.items()):
            if k == kind and (known == job_id or full == rest or full.startswith(rest)):
                return kind, full
        fetch = dict((k, (f, a)) for k, f, a in TASK_LISTS)[kind]
        for task in getattr(fetch[0](session, users=self._users(session)), fetch[1]):
            if task.id == rest or task.id.startswith(rest):
                return kind, task.id
        raise BackendError(f"no job {job_id!r} on cluster {self.name!r}")

    def _task_id_for_logs(self, session, job_id: str) -> str:
        trial = self._number(job_id, "trial")
        if trial is not None:
            task = det_convert.task_of_trial(bindings.get_GetTrial(session, trialId=trial).trial)
            if not task:
                raise BackendError(f"trial {trial} has not started a task yet")
            return task
        exp = self._number(job_id, "exp")
        if exp is not None:
            trials = bindings.get_GetExperimentTrials(session, experimentId=exp).trials
            if len(trials) != 1:
                raise BackendError(f"experiment {exp} has {len(trials)} trials: open one trial's log (trial-<id>)")
            task = det_convert.task_of_trial(trials[0])
            if not task:
                raise BackendError(f"trial {trials[0].id} has not started a task yet")
            return task
        return self._task(session, job_id)[1]

    # -- logs ------------------------------------------------------------------------------------
    async def stream_logs(self, job_id: str, follow: bool = False, stream: str = "") -> AsyncIterator[LogLine]:
        self.check_id(job_id)
        task_id = await asyncio.to_thread(self.conn.call, lambda s: self._task_id_for_logs(s, job_id), "finding logs")
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()
        room = threading.Semaphore(LOG_QUEUE)  # bounds the queue: the reader thread waits, nothing is dropped
        stop = threading.Event()
        self._streams.add(stop)

        def put(item) -> None:
            while not stop.is_set():
                if room.acquire(timeout=0.5):
                    try:
                        loop.call_soon_threadsafe(queue.put_nowait, item)
                    except RuntimeError:  # the loop is gone
                        stop.set()
                    return

        def worker() -> None:
            try:
                for entry in self._log_entries(task_id, follow, stop):
                    if stop.is_set():
                        return
                    put(("line", det_convert.log_line(job_id, entry)))
            except BaseException as exc:
                put(("error", exc))
            finally:
                put(("end", None))

        # A daemon thread, not to_thread: a blocked read must not hold up the interpreter's exit.
        threading.Thread(target=worker, name=f"det-logs-{job_id}", daemon=True).start()
        try:
            while True:
                kind, item = await queue.get()
                room.release()
                if kind == "line":
                    yield item
                elif kind == "error":
                    if isinstance(item, BackendError):
                        raise item
                    raise BackendError(f"log of {job_id}: {describe_error(item, self.conn.master)}")
                else:
                    return
        finally:
            stop.set()
            self._streams.discard(stop)

    def _log_entries(self, task_id: str, follow: bool, stop: threading.Event):
        """Task log entries; a followed stream that goes quiet past the read timeout or drops is
        reopened after the last timestamp seen (entries already yielded are skipped by id)."""
        seen: set[str] = set()
        after: str | None = None
        delay = 0.5
        while not stop.is_set():
            try:
                session = self.conn.session()
                for entry in bindings.get_TaskLogs(
                    session, taskId=task_id, follow=follow or None, timestampAfter=after
                ):
                    delay = 0.5
                    if entry.id in seen:
                        continue
                    seen.add(entry.id)
                    after = _just_before(entry.timestamp)
                    yield entry
                    if stop.is_set():
                        return
                return
            except errors.UnauthenticatedException:
                self.conn.forget()
            except (
                requests.exceptions.RequestException,
                bindings.APIHttpStreamError,
                errors.MasterNotFoundException,
                errors.BadRequestException,
            ) as exc:
                if not follow or isinstance(exc, (errors.NotFoundException, errors.ForbiddenException)):
                    raise
                log.debug("log stream of %s reopened after %s", task_id, type(exc).__name__)
            stop.wait(delay)
            delay = min(LOG_RECONNECT_MAX, delay * 2)

    # -- metrics and checkpoints ---------------------------------------------------------------
    def _trial_number(self, job_id: str, what: str) -> int:
        trial = self._number(job_id, "trial")
        if trial is None:
            raise BackendError(f"{what} are kept per trial: choose a trial (trial-<id>), not {job_id!r}")
        return trial

    async def metrics(self, job_id: str) -> list[MetricPoint]:
        self.check_id(job_id)
        trial = self._trial_number(job_id, "metrics")
        return await asyncio.to_thread(self.conn.call, lambda s: self._metrics(s, trial), "reading metrics")

    def _metrics(self, session, trial: int) -> list[MetricPoint]:
        points: list[MetricPoint] = []
        for group in ("training", "validation"):
            for report in _reports(session, trial, group):
                points.extend(det_convert.metric_points(report, group))
        return points

    async def live_use(self, job_ids: Sequence[str]) -> dict[str, LiveUse]:
        """The running trials' system metrics (``sysmetrics``): a trial's own; an experiment's, over its
        running trials. A job that reports none is left out."""
        for job_id in job_ids:
            self.check_id(job_id)

        def read(session) -> dict[str, LiveUse]:
            out = {}
            for job_id in job_ids:
                trial, exp = self._number(job_id, "trial"), self._number(job_id, "exp")
                trials = [trial] if trial is not None else []
                if exp is not None:
                    listed = bindings.get_GetExperimentTrials(session, experimentId=exp).trials
                    trials = [t.id for t in listed if t.state is bindings.trialv1State.RUNNING]
                groups = {g: [sysmetrics.latest(_reports(session, t, g)) for t in trials] for g in sysmetrics.GROUPS}
                use = sysmetrics.use_of(groups)
                if use is not None:
                    out[job_id] = use
            return out

        return await asyncio.to_thread(self.conn.call, read, "reading system metrics")

    async def checkpoints(self, job_id: str) -> list[Checkpoint]:
        self.check_id(job_id)
        trial = self._number(job_id, "trial")
        exp = self._number(job_id, "exp")
        if trial is None and exp is None:
            raise BackendError(f"{job_id!r} has no checkpoints: choose an experiment or a trial")

        def fetch(session) -> list[Checkpoint]:
            if trial is not None:
                found = bindings.get_GetTrialCheckpoints(session, id=trial).checkpoints
            else:
                assert exp is not None  # a trial or an experiment: checked before
                found = bindings.get_GetExperimentCheckpoints(session, id=exp).checkpoints
            out = []
            for ckpt in found:
                tid = det_convert.present(ckpt.training.trialId) if ckpt.training else None
                out.append(det_convert.checkpoint(f"trial-{tid}" if tid else job_id, ckpt))
            return out

        return await asyncio.to_thread(self.conn.call, fetch, "listing checkpoints")

    async def download_checkpoint(
        self, checkpoint: Checkpoint, target: Path, progress: Callable[[int, int | None], None] | None = None
    ) -> Path:
        loop = asyncio.get_running_loop()

        def report(done: int, total: int | None) -> None:
            if progress is not None:
                loop.call_soon_threadsafe(progress, done, total)

        def run(session) -> Path:
            return det_checkpoints.download(session, checkpoint.uuid, Path(target), report)

        return await asyncio.to_thread(self.conn.call, run, f"downloading checkpoint {checkpoint.uuid}")

    # -- writes (behind the gate in Backend.submit / cancel / perform) -----------------------------
    def check_spec(self, spec: JobSpec) -> None:
        super().check_spec(spec)
        if spec.native is None:  # a config file is sent as written: the master says what it refuses
            det_submit.check(spec)

    def _render(self, spec: JobSpec) -> str:
        return det_submit.render(spec)

    def _render_native(self, spec: JobSpec) -> str:
        native = spec.native
        assert native is not None
        experiment = spec.kind is JobKind.EXPERIMENT
        return det_submit.render_native(native.data, native.file, experiment, native.context, native.text)

    def capacity_request(self, spec: JobSpec) -> Request:
        """A trial's slots may span agents: the request counts them in all, in the chosen pool."""
        slots = spec.resources.gpus * (1 if spec.kind is JobKind.SINGLE else spec.resources.nodes)
        return replace(
            super().capacity_request(spec),
            nodes=1,
            gpus=slots,
            cpus=None,
            memory_mb=None,
            pool_label="resource pool",
            spread=True,
        )

    def form_fields(self, kind: JobKind) -> tuple[ff.FormField, ...]:
        pool = ff.FormField("determined.resource_pool", "Pool", "Resource pool; empty uses the default pool", pool=True)
        if kind is not JobKind.EXPERIMENT:  # a command: one container
            return (
                ff.NAME,
                ff.IMAGE,
                ff.COMMAND_FIELD,
                replace(ff.GPUS, label="GPUs", help="Slots"),
                pool,
                ff.MOUNTS_FIELD,
                ff.ENV_FIELD,
            )
        return (
            ff.NAME,
            ff.IMAGE,
            replace(
                ff.COMMAND_FIELD,
                label="Entrypoint",
                help="Run in the context directory, e.g. python3 train.py",
                lines=2,
            ),
            ff.FormField(
                "determined.context",
                "Context dir",
                "Model definition directory, uploaded at submit (.detignore honoured); relative to the loaded file",
            ),
            ff.launcher(det_submit.LAUNCHERS),
            replace(ff.NODES, label="Nodes/trial", help="Slots per trial = nodes x GPUs per node"),
            replace(ff.GPUS, help="Slots per trial = nodes x GPUs per node"),
            ff.FormField(
                "determined.searcher.name",
                "Searcher",
                "How trials are chosen",
                default="single",
                kind=ff.CHOICE,
                choices=("single", "random", "grid", "adaptive_asha"),
            ),
            ff.FormField(
                "determined.searcher.metric", "Metric", "The validation metric to optimise", default="validation_loss"
            ),
            ff.FormField(
                "determined.searcher.smaller_is_better",
                "Smaller better",
                "Lower metric is better",
                default="true",
                kind=ff.FLAG,
            ),
            ff.FormField(
                "determined.searcher.max_trials", "Max trials", "random/grid/asha: trials to run", kind=ff.NUMBER
            ),
            ff.FormField(
                "determined.hyperparameters",
                "Hyperparams",
                "name: value or name: {type: ..} lines",
                kind=ff.MAPPING,
                lines=4,
            ),
            pool,
            ff.FormField("determined.max_restarts", "Max restarts", "Restarts of a failed trial", kind=ff.NUMBER),
            ff.MOUNTS_FIELD,
            ff.ENV_FIELD,
        )

    @property
    def submit_budget(self) -> float:
        return 4 * (CONNECT_TIMEOUT + READ_TIMEOUT) + 5  # a lookup, a send, a lookup, a resend

    async def _submit_tagged(self, spec: JobSpec, tag: str, retry: bool) -> str:
        return await asyncio.to_thread(self._submit_sync, spec, tag, retry)

    async def _submit_native(self, spec: JobSpec, tag: str | None, retry: bool) -> str:
        assert tag is not None  # capabilities.submit_tags: the gate always gives one
        return await asyncio.to_thread(self._submit_sync, spec, tag, retry)

    def _submit_sync(self, spec: JobSpec, tag: str, retry: bool = False) -> str:
        native = spec.native
        if spec.kind is JobKind.EXPERIMENT:
            if native is not None:  # the config as written, its folder uploaded as the det CLI does
                files = det_submit.read_context(Path(native.context))
                body = det_submit.native_experiment_request(native.data, files, tag)
            else:
                context = det_submit.context_dir(spec)
                files = det_submit.read_context(context) if context is not None else []
                body = det_submit.experiment_request(spec, files, tag)

            def send(session) -> str:
                return f"exp-{bindings.post_CreateExperiment(session, body=body).experiment.id}"

            def lookup(session) -> str | None:
                found = bindings.get_GetExperiments(session, labels=[det_submit.TAG_LABEL + tag]).experiments
                return f"exp-{found[0].id}" if found else None
        else:
            if native is not None:
                command_body, wanted = det_submit.native_command_request(native.data, tag)
            else:
                command_body = det_submit.command_request(spec, tag)
                wanted = det_submit.tag_description(spec.name, tag)

            def send(session) -> str:
                command = bindings.post_LaunchCommand(session, body=command_body).command
                job_id = det_convert.task_job_id("command", command.id)
                self._tasks[job_id] = ("command", command.id)
                return job_id

            def lookup(session) -> str | None:
                for command in bindings.get_GetCommands(session, users=[session.username]).commands:
                    if command.description == wanted:
                        self._tasks[det_convert.task_job_id("command", command.id)] = ("command", command.id)
                        return det_convert.task_job_id("command", command.id)
                return None

        return self._send_once(send, lookup, tag, retry)

    def _send_once(self, send, lookup, tag: str, retry: bool = False, attempts: int = 2) -> str:
        """POST once; when the answer is lost (timeout, dropped connection, 5xx), look the job up by
        its tag before sending again, so a retry never makes a second job. A ``retry`` (of a submit
        that ended ``SubmitUnknown``) looks first."""
        if retry:
            try:
                found = lookup(self.conn.connected())
            except Exception as exc:
                raise SubmitUnknown(
                    self.name,
                    tag,
                    f"cannot look the tag up, so nothing was sent: {describe_error(exc, self.conn.master)}",
                ) from None
            if found:
                return found
        last: BaseException | None = None
        for _ in range(attempts):
            session = self.conn.connected()
            try:
                return send(session)
            except errors.UnauthenticatedException:  # refused before doing anything: safe to resend
                self.conn.forget()
                last = None
                continue
            except Exception as exc:
                if not is_ambiguous(exc):
                    verb = "refused" if isinstance(exc, errors.APIException) else "failed"
                    raise BackendError(
                        f"cluster {self.name!r}: submit {verb}: {describe_error(exc, self.conn.master)}"
                    ) from None
                last = exc
            log.info("submit answer lost (%s); looking for tag %s", type(last).__name__, tag)
            try:
                found = lookup(self.conn.connected())
            except Exception as exc:
                raise SubmitUnknown(
                    self.name,
                    tag,
                    f"{describe_error(last, self.conn.master)}; the lookup "
                    f"failed: {describe_error(exc, self.conn.master)}",
                ) from None
            if found:
                return found
        if last is not None:  # the last send's answer was lost too: it may still land
            raise SubmitUnknown(self.name, tag, describe_error(last, self.conn.master))
        raise BackendError(f"cluster {self.name!r}: submit failed: not logged in")

    async def _cancel(self, job_id: str) -> None:
        await self._perform(job_id, "kill", {})

    async def _perform(self, job_id: str, action: str, args: Mapping[str, str]) -> None:
        def run(session) -> None:
            exp = self._number(job_id, "exp")
            if exp is not None:
                {
                    "kill": bindings.post_KillExperiment,
                    "pause": bindings.post_PauseExperiment,
                    "activate": bindings.post_ActivateExperiment,
                }[action](session, id=exp)
                return
            trial = self._number(job_id, "trial")
            if action != "kill":
                raise BackendError(f"only experiments can be {action}d; {job_id} can only be killed")
            if trial is not None:
                bindings.post_KillTrial(session, id=trial)
                return
            kind, task_id = self._task(session, job_id)
            TASK_KILL[kind](session, task_id)

        await asyncio.to_thread(self.conn.call, run, f"{action} {job_id}")
        self.notify_changed()

    async def _tensorboard(self, job_id: str) -> TensorBoardTask:
        """``LaunchTensorboard`` for the experiment or trial; its URL is the master's proxy of the task,
        once the master says it runs (or after ``TENSORBOARD_WAIT`` seconds, the URL anyway)."""
        exp, trial = self._number(job_id, "exp"), self._number(job_id, "trial")
        if exp is None and trial is None:
            raise BackendError(f"{job_id}: a TensorBoard is started for an experiment or a trial")
        ids = {"experimentIds": [exp]} if exp is not None else {"trialIds": [trial]}

        def launch(session) -> str:
            task = bindings.post_LaunchTensorboard(session, body=bindings.v1LaunchTensorboardRequest(**ids)).tensorboard
            deadline = time.monotonic() + TENSORBOARD_WAIT
            while task.state != bindings.taskv1State.RUNNING and time.monotonic() < deadline:
                time.sleep(0.5)
                task = bindings.get_GetTensorboard(session, tensorboardId=task.id).tensorboard
            return task.id

        task_id = await asyncio.to_thread(self.conn.call, launch, f"tensorboard {job_id}")

        async def stop() -> None:
            kill = TASK_KILL["tensorboard"]
            await asyncio.to_thread(self.conn.call, lambda s: kill(s, task_id), f"kill tensorboard {task_id}")
            self.notify_changed()

        self.notify_changed()
        url = f"{self.conn.master.rstrip('/')}/proxy/{task_id}/"
        return TensorBoardTask(
            url, f"the master's TensorBoard task {det_convert.TASK_PREFIX['tensorboard']}-{task_id}", stop
        )

    async def close(self) -> None:
        for stop in list(self._streams):
            stop.set()
        self.conn.close()


def _just_before(stamp: str) -> str | None:
    """A timestamp 1 µs earlier: reopening "after" it refetches lines that share the last one's
    timestamp (they are skipped by id) instead of losing them."""
    when = det_convert.when(stamp)
    if when is None:
        return None
    return (when - timedelta(microseconds=1)).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _reports(session, trial: int, group: str) -> list[bindings.v1MetricsReport]:
    """The trial's reports of ``group``, as many as come before the stream goes quiet (a running trial's
    stream stays open: a read timeout inside it keeps what came)."""
    quick = copy.copy(session)
    quick.timeout = (session.timeout[0], METRICS_READ_TIMEOUT)
    reports: list[bindings.v1MetricsReport] = []
    try:
        for answer in bindings.get_GetMetrics(quick, trialIds=[trial], group=group):
            reports.extend(answer.metrics)
    except requests.exceptions.ConnectionError as exc:
        if not _is_read_timeout(exc):
            raise
    return reports


def _is_read_timeout(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}"
    return "Read timed out" in text or "ReadTimeout" in text
