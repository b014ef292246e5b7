"""The Slurm backend: jobs, nodes/GPUs, submit, cancel and logs of one Slurm cluster, reached through
``transport`` (asyncssh, or ``openssh``: the system ssh through a ControlMaster; or local commands),
parsed by ``parse``, rendered by ``script``.

One ``squeue`` per job refresh (``-o`` text; JSON while a row is ambiguous, never both in one
refresh), filtered on the server to ``-u USER`` (from ``transport.user()``) while the console shows
my jobs, and one ``sinfo --json`` per node refresh (cached for ``nodes_refresh_seconds``, 30 s by
default; ``invalidate`` forces). At the default 10 s refresh that is 6 job and 2 node queries a minute.
A submit tags its script (``--comment=yanflow:TAG``); whenever sbatch's answer may be lost, the job
is looked up by that tag before answering: its id, a clear refusal, or ``SubmitUnknown``.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Generator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from yanflow_tui import formfields as ff
from yanflow_tui import submitted
from yanflow_tui.backends import tbserver
from yanflow_tui.backends.base import (
    Backend,
    Capabilities,
    Download,
    FileListing,
    Forward,
    Shell,
    TensorBoardTask,
    TerminalLogin,
    describe_job,
)
from yanflow_tui.backends.downloads import output_folder
from yanflow_tui.backends.prompting import Asker
from yanflow_tui.backends.slurm import (
    containers,
    exitstatus,
    finished,
    gpus,
    history,
    inside,
    parse,
    ranks,
    reasons,
    standing_reads,
    tbfiles,
    verbs,
)
from yanflow_tui.backends.slurm import explain as slurm_explain
from yanflow_tui.backends.slurm.comment import facts_of, tag_of
from yanflow_tui.backends.slurm.logs import FileFollower, Status
from yanflow_tui.backends.slurm.openssh import OpenSSHTransport
from yanflow_tui.backends.slurm.parsecache import ParseCaches
from yanflow_tui.backends.slurm.script import RANK_SUFFIX, Rendered, render, render_native
from yanflow_tui.backends.slurm.transport import (
    DEFAULT_TIMEOUT,
    LocalTransport,
    Result,
    SshTransport,
    Transport,
    parse_ssh_option,
)
from yanflow_tui.capacity import Request
from yanflow_tui.config import ClusterConfig
from yanflow_tui.curves import EventListing
from yanflow_tui.efficiency import Efficiency
from yanflow_tui.errors import BackendError, SubmitUnknown
from yanflow_tui.explain import Explanation
from yanflow_tui.firstfailure import RankEvidence
from yanflow_tui.model import Job, JobChanges, JobKind, JobList, JobSpec, JobState, LogLine, Node
from yanflow_tui.placement_rank import Placement
from yanflow_tui.share import Share

NODES_REFRESH = 30.0
PLACEMENTS_PER_REFRESH = 16
HISTORY_REFRESH = 60.0
LOG_LINES = 10000
LOG_POLL = 2.0
LOOKUP_SECONDS = 12.0  # how long a submit whose answer was lost looks for its tag before "unknown"
LOOKUP_PAUSE = 2.0
STDIN_SCRIPT = "(the batch script itself: given on stdin or with --wrap)"  # describe's Command where Slurm keeps none
JSON_STICKY = 300.0  # after an ambiguous -o row, read JSON (one query, not two) for this long
HISTORY_NOTE = "history needs accounting: finished jobs are not listed (sacct: {})"
NO_HISTORY = "no history (no accounting): only the jobs squeue still lists, finished ones for a few minutes (MinJobAge)"
# sacct's JSON breaks under the SLURM_TIME_FORMAT=%s every command gets (22.05: "Invalid time
# specification" and no jobs), so sacct runs without it.
SACCT_JSON = ("env", "-u", "SLURM_TIME_FORMAT", "sacct", "--json")
# A big parse runs on the event loop SLICE seconds at a time, the loop then free for PAUSE seconds at least
# (in_slices). benchmarks/slurm_console.py, 100,000 squeue lines: the loop held at most 6-14 ms in list_jobs
# (8 ms slices: 12-22 ms), keys pressed meanwhile p95 28-40 ms; the whole parse at once held it 280-500 ms.
SLICE = 0.004
PAUSE = 0.001
STATES_STEP = 5000  # jobs whose states list_jobs notes in one step
clock = time.monotonic  # the backend's clock (a module attribute, so tests can move it alone)
T = TypeVar("T")
_JOB_ID = re.compile(r"[0-9]+(_([0-9]+|\[[0-9,%-]+\]))?")  # ASCII digits (\d also matches "٣")


def _transport(config: ClusterConfig, timeout: float, asker: Asker) -> Transport:
    """Local commands without ``ssh``; else the ``ssh.transport`` it names (asyncssh by default)."""
    ssh = config.options.get("ssh")
    if not ssh:
        return LocalTransport(timeout)
    target = parse_ssh_option(ssh, config.name)
    if target.transport == "openssh":
        return OpenSSHTransport(target, timeout, cluster=config.name)
    return SshTransport(target, timeout, asker)  # its login's questions go through the backend's prompter


class SlurmBackend(Backend):
    kind = "slurm"
    cpu_use_source = "sstat"
    capabilities = Capabilities(
        submit=True,
        cancel=True,
        logs=True,
        rank_logs=True,  # a multi-node step's ranks, each from its own file (``script.RANK_SUFFIX``)
        job_kinds=frozenset({JobKind.SLURM, JobKind.SINGLE, JobKind.MULTI_NODE}),
        history=True,
        raw_spec=True,
        submit_tags=True,
        native_files=frozenset({"sbatch"}),
        event_files=True,
        actions=verbs.ACTIONS,
        efficiency=True,
        files=True,
        shell=True,
        forward=True,
        job_files=True,
        tensorboard=True,
        explain=True,
        rank_evidence=True,  # each rank's file and torchrun's error file beside it (``ranks``)
        placement=True,
        share=True,
        upload=True,  # through the transport, no SFTP needed (``upload``)
        resubmission=True,  # a job sbatch'ed by hand: its batch script with the options it ran with
    )

    def __init__(self, config: ClusterConfig, transport: Transport | None = None):
        super().__init__(config)
        opts = config.options
        timeout = float(opts.get("command_timeout") or DEFAULT_TIMEOUT)
        if timeout <= 10:
            raise BackendError(f"command_timeout must exceed Slurm's MessageTimeout (10 s), got {timeout}")
        if transport is None:
            transport = _transport(config, timeout, self.asker)
        self.transport = transport
        self.nodes_refresh = float(opts.get("nodes_refresh_seconds") or NODES_REFRESH)
        self.defaults = {k: opts[k] for k in ("partition", "account") if opts.get(k)}
        self.container = containers.configured(opts, config.name)  # runs a job's image: (None: no runtime)
        self._nodes: list[Node] | None = None
        self._nodes_at = 0.0
        self._history: list[Job] = []
        self._history_at = 0.0
        # the last answer of list_jobs made from a parse of the squeue text: that parse's number, the
        # answer's serial and its finished jobs (0, 0, []: none, its changes not known)
        self._answered: tuple[int, int, list[Job]] = (0, 0, [])
        self._finished = finished.FinishedCodes()  # the exit codes of the finished jobs squeue lists
        self._querying = asyncio.Lock()  # one squeue query and parse of it at a time (_queue_answer)
        self.parse_caches = ParseCaches()  # what the parser keeps between parses: this cluster's own
        self.history_window = history.check_window(opts.get("history"), config.name)
        self.history_note = ""  # set when the cluster has no accounting
        self.use_json_squeue = False  # True once the -o text proved ambiguous or unsupported
        self._json_until = 0.0  # monotonic time until which the -o text is not tried (it was ambiguous)
        self.all_users = True  # the console says "mine" with set_all_users(False): squeue -u USER
        self._scontrol_json: bool | None = None
        self._only_state: bool | None = None  # squeue --only-job-state works (None: not tried yet)
        self._states: tuple[float, dict[str, JobState]] = (0.0, {})  # the last job refresh's states
        self._gpu_jobs: list[str] | None = None  # running jobs holding GPUs, from the last job refresh
        self._placements: dict[str, gpus.Placement] = {}  # job -> node -> GPU indices (fixed while it runs)
        self._logdirs: dict[str, str] = {}  # job -> its TensorBoard log directory (fixed at submit)
        self.tensorboard_command = tbserver.remote_command(opts.get("tensorboard"), config.name)

    # -- inside a job (``inside``) ----------------------------------------------------------------
    async def _job_node(self, job_id: str, rank: str = "") -> tuple[parse.RawJob, str]:
        """The running job and one of its nodes: ``rank`` when it names one (or is an index), else the first."""
        raw = await self._raw_job(job_id)
        if raw.state.upper() not in ("RUNNING", "R") or not raw.nodes:
            raise BackendError(f"job {job_id} is not running ({raw.state.lower() or 'unknown'})")
        if not rank:
            return raw, raw.nodes[0]
        if rank in raw.nodes:
            return raw, rank
        if rank.isdigit() and int(rank) < len(raw.nodes):
            return raw, raw.nodes[int(rank)]
        raise BackendError(f"job {job_id} runs on {', '.join(raw.nodes)}; not on {rank!r}")

    async def _outputs(self, job_id: str) -> str:
        """The job's output folder: ``outputs=`` of its comment (relative to its workdir), else the workdir."""
        raw = await self._raw_job(job_id)
        return output_folder(facts_of(raw.comment).get("outputs"), raw.workdir)

    async def list_files(self, job_id: str, path: str = "") -> FileListing:
        return await inside.list_dir(self.transport, await self._outputs(job_id), path)

    async def download(self, job_id: str, path: str, target: Path, progress=None) -> Download:
        return await inside.download(self.transport, await self._outputs(job_id), path, target, progress)

    async def _upload(self, source: Path, target: str) -> str:
        from yanflow_tui.backends.slurm import upload

        return await upload.upload(self.transport, source, target)

    async def _shell(self, job_id: str, rank: str) -> Shell:
        raw, node = await self._job_node(job_id, rank)
        run = self.transport.interactive(inside.srun_shell(raw.job_id, node))
        return Shell(f"job {job_id} on {node}", run)

    async def forward(self, job_id: str, port: int, rank: str = "", local_port: int = 0) -> Forward:
        if not 0 < port < 65536 or not 0 <= local_port < 65536:
            raise BackendError(f"not a port: {port}")
        _, node = await self._job_node(job_id, rank)
        shown = await self.transport.run(["scontrol", "show", "node", node])
        host = inside.node_addr(shown.stdout if shown.ok else "", node)
        local, close = await self.transport.forward(host, port, local_port)
        return Forward(f"job {job_id} on {node}", port, local, close)

    # -- reads -----------------------------------------------------------------------------------
    async def _queue(self, user: str = "") -> list[Job]:
        """The queue (only ``user``'s jobs when given) as Jobs: the ``-o`` text straight to Jobs
        (``parse.squeue_jobs``, no RawJob between; the tests check it against their reference parser,
        ``tests/slurmreference.py``), else JSON."""
        return (await self._queue_answer(user))[0]

    async def _queue_answer(self, user: str = "") -> tuple[list[Job], parse.QueueDelta | None]:
        """``_queue`` and, from the text, what its Jobs differ by from the previous parse's (None: JSON).
        The text is parsed a slice at a time (``in_slices``), so a key is not held up for the whole of a
        big queue's parse, and one query and parse at a time (``_querying``): another caller meanwhile
        (``get_job``, the nodes' first look-up, a second ``list_jobs``) waits, then parses against the
        cache its predecessor left, in the order the texts were printed."""
        async with self._querying:
            text = await self._squeue_text(user)
            if text is not None:
                try:
                    return await in_slices(parse.squeue_steps(text, self.name, self.parse_caches))
                except parse.AmbiguousRows:
                    self._json_until = clock() + JSON_STICKY
            return parse.build_jobs(await self._squeue_json(user), self.name, self.parse_caches), None

    async def _squeue_text(self, user: str) -> bytes | None:
        """``squeue -o``'s text as the bytes it printed (``parse.squeue_jobs`` decodes the lines it has
        not met before, one at a time), or None where JSON is to be read instead. After an ambiguous text (a
        newline in a name: the caller sets ``_json_until``), JSON for a while, instead of asking twice
        (text, then JSON) on every refresh while that job stays in the queue."""
        if self.use_json_squeue or clock() < self._json_until:
            return None
        only = ["-u", user] if user else []
        result = await self.transport.run(["squeue", "-h", "-a", "-t", "all", *only, "-o", parse.SQUEUE_FORMAT])
        if result.ok:
            return result.data
        if "invalid" in result.stderr.lower():
            self.use_json_squeue = True  # this squeue rejects our -o format: JSON from now on
            return None
        raise BackendError(f"squeue failed: {result.error()}")

    async def _squeue_json(self, user: str = "") -> list[parse.RawJob]:
        only = ["-u", user] if user else []
        argv = ["squeue", "-a", "-t", "all", *only, "--json"]
        raws = parse.parse_squeue_json(await self.transport.check(argv), self.parse_caches)
        return [r for r in raws if r.user == user] if user else raws  # 22.05's --json ignores -u

    @property
    def current_user(self) -> str:
        return self.transport.known_user

    def terminal_login(self) -> TerminalLogin | None:
        """With the OpenSSH transport: the cluster's ssh master, started in the terminal."""
        return self.transport.login() if isinstance(self.transport, OpenSSHTransport) else None

    async def list_jobs(self) -> JobList:
        """The queue, then the finished jobs of the history not in it; with what changed since the
        previous answer where the squeue text's parse says (``_changes``)."""
        user = await self.transport.user()  # once: who "mine" is (id -un, never $USER)
        jobs, delta = await self._queue_answer("" if self.all_users else user)
        jobs, coded = await self._with_exit_codes(jobs)
        # (its ids also tell the finished jobs listed apart)
        self._gpu_jobs, live = await in_slices(_running_and_states(jobs))
        self._states = (clock(), live)
        await self._refresh_history()
        done = [j for j in self._history if j.id not in live]
        # (no await from here on: the answer and what it is kept as are made together)
        answer = JobList(jobs + done)
        if delta is not None and len(live) == len(jobs):
            answer.changes = self._changes(delta, done, coded)
            self._answered = (delta.number, answer.serial, done)
        else:  # JSON, or an id given twice: the next answer says nothing either
            self._answered = (0, 0, [])
        return answer

    async def _with_exit_codes(self, jobs: list[Job]) -> tuple[list[Job], list[Job]]:
        """``jobs`` with the exit codes of the finished ones (``FinishedCodes``; asked for by id, once),
        and the Jobs coded new this time. A failed ask leaves them unknown, to be asked again."""
        missing = self._finished.missing(jobs)[: finished.BATCH]
        if missing:
            result = await self.transport.run(["sh", "-c", finished.ASK, "sh", *missing])
            if result.ok:
                self._finished.learn(exitstatus.scontrol_codes(result.stdout), missing)
        return self._finished.apply(jobs)

    def _changes(self, delta: parse.QueueDelta, done: list[Job], coded: list[Job]) -> JobChanges | None:
        """What the answer of the queue parsed (``delta``) and the finished jobs ``done`` differs by from
        the previous answer, when that was made from the parse ``delta`` follows (else None: not known).
        The queue's part is the parse's own; the history's (a short list) is compared by identity."""
        number, serial, before = self._answered
        if not number or delta.since != number:
            return None
        put, gone = list(map(self._finished.coded, delta.put)), set(delta.gone)
        given = set(map(id, put))
        put += [job for job in coded if id(job) not in given]  # coded now, their line unchanged
        if done is not before:
            was = set(map(id, before))
            now = set(map(id, done))
            put += [job for job in done if id(job) not in was]
            gone.update(job.id for job in before if id(job) not in now)
            if gone:
                gone.difference_update(job.id for job in put)
        return JobChanges(serial, tuple(put), tuple(gone))

    @property
    def notice(self) -> str:
        return "history needs accounting (no slurmdbd): finished jobs are not listed" if self.history_note else ""

    async def _refresh_history(self) -> None:
        if self.history_note or clock() - self._history_at < HISTORY_REFRESH and self._history_at:
            return
        self._history_at = clock()
        result = await self.transport.run([*SACCT_JSON, "-X", "--starttime", history.starttime(self.history_window)])
        if not result.ok:
            text = result.error()
            if "accounting storage is disabled" in text.lower() or "slurmdbd" in text.lower():
                self.history_note = HISTORY_NOTE.format(text)
            return
        try:
            raws = history.parse_sacct_json(result.stdout, self.parse_caches)
        except BackendError:
            return
        self._history = [j for j in parse.build_jobs(raws, self.name, self.parse_caches) if j.state.terminal]

    async def list_nodes(self) -> list[Node]:
        nodes = await self._sinfo()
        await self._learn_placements()
        return gpus.with_holders(nodes, self._placements)

    async def _learn_placements(self) -> None:
        """Which GPUs each running GPU job holds: one ``scontrol -dd show job`` per job, once (a
        running job's GPUs do not move), at most PLACEMENTS_PER_REFRESH new jobs a refresh."""
        if self._gpu_jobs is None:  # nodes asked for before any job refresh (``nodes --json``)
            self._gpu_jobs = gpus.running_gpu_jobs(await self._queue())
        live = set(self._gpu_jobs)
        self._placements = {k: v for k, v in self._placements.items() if k in live}
        todo = [j for j in self._gpu_jobs if j not in self._placements][:PLACEMENTS_PER_REFRESH]
        for job_id in todo:
            result = await self.transport.run(["scontrol", "-dd", "-o", "show", "job", "--", job_id])
            if result.ok:
                self._placements[job_id] = gpus.job_placement(result.stdout)

    async def _sinfo(self) -> list[Node]:
        if self._nodes is not None and clock() - self._nodes_at < self.nodes_refresh:
            return list(self._nodes)
        result = await self.transport.run(["sinfo", "-a", "--json"])
        if result.ok:
            nodes = parse.parse_sinfo_json(parse._loads(result.stdout, "sinfo --json"), self.name, self.parse_caches)
        else:
            text = await self.transport.check(["sinfo", "-a", "-h", "-N", "-O", parse.SINFO_FORMAT])
            nodes = parse.parse_sinfo_text(text, self.name, self.parse_caches)
        self._nodes, self._nodes_at = nodes, clock()
        return list(nodes)

    def invalidate(self) -> None:
        self._nodes = None
        self._history_at = 0.0

    def widen_history(self) -> str:
        if self.history_note:  # no accounting: sacct lists nothing, however far back
            return NO_HISTORY
        self.history_window = history.widen(self.history_window)
        self._history_at = 0.0
        return f"history: {history.describe_window(self.history_window)}"

    async def _raw_job(self, job_id: str) -> parse.RawJob:
        """Full details of one job (``scontrol show job --json`` where it exists, else squeue JSON)."""
        _check_id(job_id)
        raws: list[parse.RawJob] = []
        if self._scontrol_json is not False:
            result = await self.transport.run(["scontrol", "show", "job", job_id, "--json"])
            if result.ok:
                self._scontrol_json = True
                raws = parse.parse_squeue_json(result.stdout, self.parse_caches)
            elif "unrecognized option" in result.stderr or "invalid option" in result.stderr:
                self._scontrol_json = False  # Slurm < 23.02
            elif "Invalid job id" in result.stderr:
                return await self._accounted_job(job_id)
        if not raws:
            raws = await self._squeue_json()
        for raw in raws:
            if job_id in (raw.display_id,) or (raw.job_id == job_id and not raw.array_task):
                return raw
        for raw in raws:  # an array's id names its first record
            if raw.array_job_id == job_id:
                return raw
        return await self._accounted_job(job_id)

    async def _accounted_job(self, job_id: str) -> parse.RawJob:
        """A job slurmctld has forgotten (purged ``MinJobAge`` after it ended), from accounting."""
        if not self.history_note:
            result = await self.transport.run([*SACCT_JSON, "-j", job_id])
            if result.ok:
                for raw in history.parse_sacct_json(result.stdout, self.parse_caches):
                    if raw.display_id == job_id or raw.array_job_id == job_id:
                        return raw
        raise BackendError(f"no job {job_id!r} on cluster {self.name!r}")

    def check_id(self, job_id: str) -> None:
        _check_id(job_id)

    async def get_job(self, job_id: str) -> Job:
        _check_id(job_id)
        listed = next((job for job in await self.list_jobs() if job.id == job_id), None)
        if listed is not None and not (listed.state.terminal and listed.exit_code is None):
            return listed
        try:  # a job that ended: squeue's line has no exit code, its full record does
            raw = await self._raw_job(job_id)
        except BackendError:
            if listed is None:
                raise
            return listed
        return parse.to_job(raw, self.name, raw.array_job_id if raw.array_task else "", self.parse_caches)

    async def describe(self, job_id: str) -> str:
        raw = await self._raw_job(job_id)
        job = parse.to_job(raw, self.name, raw.array_job_id if raw.array_task else "", self.parse_caches)
        if not job.command:  # a batch script given on stdin (as this console sends it) or with --wrap
            kept = await asyncio.to_thread(submitted.command_of, self.name, job_id)
            job = replace(job, command=kept or STDIN_SCRIPT)
        stdout, stderr = await self._log_paths(raw)  # expanded, as Slurm writes them
        extra = [("StdOut", stdout), ("StdErr", stderr or stdout)]
        if self.history_note:
            extra.append(("History", self.history_note))
        return describe_job(job, extra)

    async def explain(self, job_id: str) -> Explanation:
        _check_id(job_id)
        return await slurm_explain.explain(self.transport, self.name, job_id)

    def short_reason(self, reason: str) -> str:
        return reasons.short_phrase(reason)

    async def raw_spec(self, job_id: str) -> str:
        """``scontrol show job -dd``, then the batch script the job was submitted with."""
        _check_id(job_id)
        shown = await self.transport.check(["scontrol", "show", "job", "-dd", "--", job_id])
        try:
            script = await verbs.batch_script(self.transport, job_id)
        except BackendError as exc:
            script = f"({exc})\n"
        return f"{shown.rstrip()}\n\n# batch script\n{script}"

    async def efficiency(self, job_ids: Sequence[str]) -> dict[str, Efficiency]:
        for job_id in job_ids:
            _check_id(job_id)
        if self.history_note:
            raise BackendError(self.history_note)
        return await verbs.efficiency(self.transport, list(job_ids))

    # -- TensorBoard event files -----------------------------------------------------------------
    async def _logdir(self, job_id: str) -> str:
        _check_id(job_id)
        if job_id not in self._logdirs:
            raw = await self._raw_job(job_id)
            self._logdirs[job_id] = await tbfiles.job_logdir(self.transport, job_id, raw.workdir)
        return self._logdirs[job_id]

    async def event_files(self, job_id: str) -> EventListing:
        logdir = await self._logdir(job_id)
        return EventListing(logdir, tuple(await tbfiles.list_event_files(self.transport, logdir)))

    async def read_event_bytes(self, job_id: str, path: str, offset: int, limit: int) -> tuple[int, bytes]:
        return await tbfiles.read_range(self.transport, await self._logdir(job_id), path, offset, limit)

    async def _tensorboard(self, job_id: str) -> TensorBoardTask:
        """The real server on the login node (``tensorboard: {command: [...]}``, default ``tensorboard``) over
        the job's log directory, a local port forwarded to it through the same connection."""
        logdir = await self._logdir(job_id)
        return await tbserver.serve_remote(
            tbfiles.runner(self.transport),
            tbfiles.forwarder(self.transport),
            self.tensorboard_command,
            logdir,
            f"the login node of {self.name}",
        )

    # -- logs ------------------------------------------------------------------------------------
    async def _log_paths(self, raw: parse.RawJob) -> tuple[str, str]:
        """(StdOut, StdErr or "" when it shares StdOut's file). slurmctld records both; for a job
        known only to accounting, the batch script's directives say (where the site stores scripts)."""
        script = ""
        if not raw.stdout and not raw.script and not self.history_note:
            for job_id in dict.fromkeys((raw.display_id, raw.array_job_id or raw.job_id)):
                result = await self.transport.run(["sacct", "-j", job_id, "--batch-script"])
                if result.ok and (script := history.batch_script(result.stdout)):
                    break
        return history.log_paths(raw, script)

    async def log_streams(self, job_id: str) -> tuple[str, ...]:
        raw = await self._raw_job(job_id)
        if parse.normalise_state(raw.state) is JobState.PENDING:
            return ("",)  # where StdErr goes is known once it runs; StdOut carries both by default
        return ("", "stderr") if (await self._log_paths(raw))[1] else ("",)

    async def _job_state(self, job_id: str) -> JobState:
        """One job's state, cheaply: from the console's last job refresh when that listed it lately
        (no query at all), else one line of ``squeue`` (polled while a log is followed). A job
        squeue no longer knows has ended; an array's state is that of a task still going, if any."""
        _check_id(job_id)
        seen_at, states = self._states
        if job_id in states and clock() - seen_at < 2 * max(self.config.refresh_seconds, LOG_POLL):
            return states[job_id]
        result = await self._squeue_state(["-h", "-t", "all", "-j", job_id, "-o", "%T"])
        if not result.ok and "Invalid job id" not in result.stderr:
            raise BackendError(f"squeue failed: {result.error()}")
        found = [parse.normalise_state(s) for s in result.stdout.split()] if result.ok else []
        if not found:
            return JobState.COMPLETED
        return next((s for s in found if not s.terminal), found[0])

    async def _squeue_state(self, args: list[str]) -> Result:
        """``squeue ARGS`` for states only: with ``--only-job-state`` where this Slurm has it (23.02+: slurmctld
        sends the states alone), else plain. A refusal of the option is remembered and never read as "no job"."""
        if self._only_state is not False:
            result = await self.transport.run(["squeue", "--only-job-state", *args])
            if result.ok or "Invalid job id" in result.stderr:
                self._only_state = True
                return result
            if "unrecognized option" in result.stderr or "invalid option" in result.stderr:
                self._only_state = False  # Slurm < 23.02
        return await self.transport.run(["squeue", *args])

    async def stream_logs(self, job_id: str, follow: bool = False, stream: str = "") -> AsyncIterator[LogLine]:
        if stream not in ("", "stderr"):
            raise BackendError(f"no log stream {stream!r} on Slurm (streams: stdout, stderr)")
        raw = await self._raw_job(job_id)
        # A pending job has no node (%N) and no file yet: wait until it starts.
        if follow and parse.normalise_state(raw.state) is JobState.PENDING:
            while await self._job_state(job_id) is JobState.PENDING:  # noqa: ASYNC110 - polls Slurm: no event here
                await asyncio.sleep(LOG_POLL)
            raw = await self._raw_job(job_id)
        if parse.normalise_state(raw.state) is JobState.PENDING:
            return
        stdout, stderr = await self._log_paths(raw)
        path = stderr if stream == "stderr" and stderr else stdout
        follow = follow and not parse.normalise_state(raw.state).terminal  # a finished job: read it whole
        # The job's file, then (the whole output only) each rank's own file of a multi-node step, found
        # once there, each read by its own follower (resumes after a dropped connection) into one queue.
        nodes = len(raw.nodes) if not stream and len(raw.nodes) > 1 else 0
        ranks = {f"{stdout}{RANK_SUFFIX}{n}": f"rank {n}" for n in range(nodes)}
        readers: dict[str, FileFollower] = {}
        queue: asyncio.Queue = asyncio.Queue(maxsize=1000)
        done = object()
        tasks: list[asyncio.Task] = []

        async def pump(reader: FileFollower, source: str):
            try:
                async for item in reader.run():
                    await queue.put(item if isinstance(item, Status) else LogLine(job_id, item, source))
            except BackendError as exc:
                await queue.put(exc)
            await queue.put(done)

        def start(file: str, source: str) -> None:
            readers[file] = FileFollower(self.transport, file, LOG_LINES, follow)
            tasks.append(asyncio.create_task(pump(readers[file], source)))

        async def find_ranks() -> None:
            missing = [file for file in ranks if file not in readers]
            if missing:
                for file in await self._existing(missing):
                    start(file, ranks[file])

        async def watch():  # with follow, end once the job is terminal (after a last drain)
            while True:
                await asyncio.sleep(LOG_POLL)
                try:
                    await find_ranks()
                    state = await self._job_state(job_id)
                except BackendError:
                    continue
                if state.terminal:
                    await find_ranks()
                    for reader in readers.values():
                        reader.finish()  # read what is left to the end of the file; the pump then ends
                    return

        watcher: asyncio.Task | None = None
        try:
            start(path, "")
            await find_ranks()
            watcher = asyncio.create_task(watch()) if follow else None
            ended = 0
            while True:
                item = await queue.get()
                if item is done:
                    ended += 1
                    if ended == len(readers) and (watcher is None or watcher.done()):
                        return
                    continue
                if isinstance(item, BackendError):
                    raise item
                yield LogLine(job_id, item.text, status=True) if isinstance(item, Status) else item
        finally:
            for task in [*tasks, *([watcher] if watcher else [])]:
                task.cancel()
            await asyncio.shield(asyncio.gather(*(reader.close() for reader in readers.values())))

    async def rank_evidence(self, job_id: str) -> list[RankEvidence]:
        raw = await self._raw_job(job_id)
        files = ranks.rank_files((await self._log_paths(raw))[0], raw.nodes)
        if not files:
            return []
        answer = await self.transport.check(["sh", "-c", ranks.READ_SCRIPT, "sh", *files])
        return ranks.parse_answer(answer, files)

    async def _existing(self, paths: list[str]) -> list[str]:
        """Those of ``paths`` that are files now (the paths reach the shell as argv words)."""
        script = 'for f do [ -f "$f" ] && printf "%s\\n" "$f"; done; exit 0'
        found = set((await self.transport.check(["sh", "-c", script, "sh", *paths])).splitlines())
        return [path for path in paths if path in found]

    # -- writes ----------------------------------------------------------------------------------
    def _render(self, spec: JobSpec) -> str:
        return render(spec, "DRY-RUN", self.defaults, self.container).text()

    def _render_native(self, spec: JobSpec) -> str:
        return render_native(spec, "DRY-RUN", self.defaults).text()

    def capacity_request(self, spec: JobSpec) -> Request:
        return replace(
            super().capacity_request(spec),
            gpu_type=spec.section("slurm").get("gpu_type") or None,
            exclusive=bool(spec.section("slurm").get("exclusive")),
        )

    def form_fields(self, kind: JobKind) -> tuple[ff.FormField, ...]:
        fields = [ff.NAME, ff.COMMAND_FIELD, ff.WORKDIR, ff.OUTPUTS, *ff.resources(kind)]
        if self.container is not None:
            fields[4:4] = [ff.IMAGE, ff.MOUNTS_FIELD]
        fields.insert(
            fields.index(ff.CPUS),
            ff.FormField(
                "slurm.gpu_type", "GPU type", "--gres=gpu:TYPE:N; empty takes any type", placeholder="any, e.g. a100"
            ),
        )
        fields += [
            ff.FormField(
                "slurm.partition",
                "Partition",
                "-p; empty uses the cluster's default partition",
                default=self.defaults.get("partition", ""),
                pool=True,
            ),
            ff.FormField("slurm.account", "Account", "-A", default=self.defaults.get("account", "")),
            ff.FormField("slurm.qos", "QOS", "--qos"),
            ff.FormField("slurm.time", "Time limit", "-t, e.g. 01:00:00 or 2-00:00:00"),
            ff.FormField(
                "slurm.output",
                "Output",
                "-o file; %j is the job id, %x the name",
                placeholder="slurm-%j.out in the workdir",
            ),
        ]
        if kind is not JobKind.SINGLE:
            fields.append(ff.FormField("slurm.exclusive", "Exclusive", "--exclusive: whole nodes", kind=ff.FLAG))
        if kind is JobKind.MULTI_NODE:
            fields.append(ff.launcher())
        return (*fields, ff.ENV_FIELD)

    @property
    def submit_budget(self) -> float:
        # a lookup before a retry, the send, a lookup after it (each lookup's window plus its last
        # query), plus slack
        return 3 * self.transport.timeout + 2 * LOOKUP_SECONDS + 5

    async def _submit_tagged(self, spec: JobSpec, tag: str, retry: bool) -> str:
        """sbatch once, the script carrying ``--comment=yanflow:TAG``. Whenever the answer may be
        lost after the script was sent (drop, timeout, no exit status, no job id), the job is looked
        up by its tag before answering: its id, or ``SubmitUnknown``; never "refused"."""
        return await self._send(render(spec, tag, self.defaults, self.container), tag, retry)

    async def _submit_native(self, spec: JobSpec, tag: str | None, retry: bool) -> str:
        """The user's sbatch script, as written (what the form changed as sbatch options)."""
        rendered = render_native(spec, tag, self.defaults)
        if tag is not None and any(tag_of(arg.removeprefix("--comment=")) == tag for arg in rendered.argv):
            return await self._send(rendered, tag, retry)
        if retry:  # the script sets its own --comment: no tag to look up, so no retry that is sure
            raise BackendError(
                f"{spec.native.file if spec.native else 'the script'} sets its own --comment, so a "
                "submit cannot be looked up by a tag: check the queue, then submit it again"
            )
        try:
            result = await self.transport.run(rendered.argv, stdin_data=rendered.script)
        except BackendError as exc:
            raise BackendError(
                f"sbatch's answer was lost ({exc}); the script sets its own --comment, so the job cannot be "
                "looked up by a tag: check the queue before submitting it again"
            ) from None
        job_id = result.stdout.strip().split(";")[0] if result.ok else ""
        if job_id.isdigit():
            return job_id
        raise BackendError(f"not submitted: sbatch: {result.error() if not result.ok else result.stdout.strip()}")

    async def _send(self, rendered: Rendered, tag: str, retry: bool) -> str:
        if retry:
            found, error = await self._lookup_tag(tag)
            if found:
                return found
            if error:
                raise SubmitUnknown(self.name, tag, f"cannot look the tag up, so nothing was sent: {error}")
        try:
            result = await self.transport.run(rendered.argv, stdin_data=rendered.script)
        except BackendError as exc:  # a timeout or a dropped connection: the job may exist
            return await self._settle(tag, str(exc))
        job_id = result.stdout.strip().split(";")[0] if result.ok else ""
        if job_id.isdigit():
            return job_id
        if result.ok:
            return await self._settle(tag, f"sbatch printed no job id: {result.stdout.strip()[:80]!r}")
        if result.returncode == 255 or "sbatch: error" not in result.stderr:
            return await self._settle(tag, f"sbatch ended with {result.error()}")
        # sbatch's own refusal: confirm no job holds the tag before saying so
        found, error = await self._lookup_tag(tag)
        if found:
            return found
        if error:
            raise SubmitUnknown(
                self.name, tag, f"sbatch said {result.error()!r}, and the tag cannot be looked up: {error}"
            )
        raise BackendError(f"not submitted: sbatch refused the job: {result.error()}")

    async def _settle(self, tag: str, why: str) -> str:
        """The answer was lost: look for the tag for up to ``LOOKUP_SECONDS`` (reconnecting as
        needed); the job's id, or ``SubmitUnknown``."""
        found, error = await self._lookup_tag(tag, keep_looking=LOOKUP_SECONDS)
        if found:
            return found
        if error:
            why = f"{why}; lookup failed: {error}"
        raise SubmitUnknown(self.name, tag, f"{why}; no job held the tag within {LOOKUP_SECONDS:.0f} s")

    async def _lookup_tag(self, tag: str, keep_looking: float = 0.0) -> tuple[str | None, str]:
        """``(job id, "")`` once one of our jobs carries the tag; ``(None, "")`` once a query said
        none does and ``keep_looking`` seconds have passed (a job sbatch creates late still shows);
        ``(None, last error)`` when no query answered within ``LOOKUP_SECONDS`` (the transport
        reconnects between tries). One line of ``squeue`` per query, our jobs only."""
        start = clock()
        while True:
            try:
                user = await self.transport.user()
                out = await self.transport.check(["squeue", "-h", "-a", "-t", "all", "-u", user, "-o", "%F|%k"])
            except BackendError as exc:
                error = str(exc)
            else:
                error = ""
                for line in out.splitlines():
                    job_id, _, comment = line.strip().partition("|")
                    if tag_of(comment) == tag and job_id.isdigit():
                        return job_id, ""
            later = clock() - start + LOOKUP_PAUSE
            if later > (max(keep_looking, LOOKUP_SECONDS) if error else keep_looking):
                return None, error
            await asyncio.sleep(LOOKUP_PAUSE)

    # -- where a job would start, and my share (reads: nothing is submitted) ------------------------
    async def placement(self, spec: JobSpec, nodes: Sequence[Node]) -> Placement:
        """``sbatch --test-only`` on the script a submit would send (on stdin, as a submit does): Slurm's
        start estimate and nodes, or its refusal ("never": the nodes' verdict says why in their terms).
        --test-only creates no job; read-only mode allows it."""
        return await standing_reads.placement(self, spec, nodes)

    async def share(self) -> Share:
        """Fair-share (``sshare``) and the association and QoS limits with their use (``scontrol show
        assoc_mgr``); without accounting, a note saying so."""
        return await standing_reads.share(self)

    async def _cancel(self, job_id: str) -> None:
        _check_id(job_id)
        result = await self.transport.run(["scancel", "--", job_id])
        if not result.ok:
            raise BackendError(f"scancel {job_id} failed: {result.error()}")

    async def retry_login(self) -> None:
        await self.transport.retry_login()

    async def verb_defaults(self, job_id: str, action: str, args: Mapping[str, str]) -> dict[str, str]:
        _check_id(job_id)
        self.check_args(action, args)
        if action == "edit":  # the fields as they are now
            return await verbs.edit_values(self.transport, job_id)
        return await verbs.suggest(self.transport, job_id, args) if action == "resubmit" else {}

    async def job_file(self, job_id: str, args: Mapping[str, str]) -> tuple[str, str, dict[str, str]]:
        _check_id(job_id)
        self.check_args("resubmit", args)
        return await verbs.job_file(self.transport, job_id, args)

    async def native_resubmission(self, job_id: str, env: Mapping[str, str]) -> JobSpec:
        from yanflow_tui.backends.slurm import resubmission

        _check_id(job_id)
        return await resubmission.resubmission(self.transport, job_id, env)

    def check_args(self, action: str, args: Mapping[str, str]) -> None:
        super().check_args(action, args)
        verbs.check_args(action, args)  # typed values: a time limit, a partition name, a signal

    async def _perform(self, job_id: str, action: str, args: Mapping[str, str]) -> str:
        _check_id(job_id)
        said = await verbs.perform(self.transport, job_id, action, args)
        self._history_at = 0.0  # a resubmitted or requeued job shows at the next refresh
        return said

    async def close(self) -> None:
        await self.transport.close()


async def in_slices(steps: Generator[None, None, T]) -> T:
    """What ``steps`` returns (``parse.squeue_steps``: a parse, one stretch of lines a step), run on the
    event loop for about SLICE seconds at a time, the loop given a turn of at least PAUSE seconds
    between two (a key, a paint: the work a key sets off takes a few turns of the loop, so one turn
    each time, ``sleep(0)``, would leave it waiting a slice for each). Cancelled, the steps are
    closed there (``GeneratorExit``: a parse puts back what it took from its cache)."""
    try:
        turn = time.perf_counter() + SLICE
        while True:
            try:
                next(steps)
            except StopIteration as end:
                return end.value
            if time.perf_counter() >= turn:
                await asyncio.sleep(PAUSE)
                turn = time.perf_counter() + SLICE
    finally:
        steps.close()


def _running_and_states(jobs: list[Job]) -> Generator[None, None, tuple[list[str], dict[str, JobState]]]:
    """``gpus.running_gpu_jobs(jobs)`` and each job's state by its id, a step per STATES_STEP jobs."""
    running: list[str] = []
    states: dict[str, JobState] = {}
    for start in range(0, len(jobs), STATES_STEP):
        part = jobs[start : start + STATES_STEP]
        running += gpus.running_gpu_jobs(part)
        states.update({j.id: j.state for j in part})
        yield
    return running, states


def _check_id(job_id: str) -> None:
    if not isinstance(job_id, str) or not _JOB_ID.fullmatch(job_id):
        raise BackendError(f"not a Slurm job id: {job_id!r} (expected e.g. 123 or 123_4)")
