"""The Slurm backend: jobs, nodes/GPUs, submit, cancel and logs of one Slurm cluster, reached through
``slurm_transport`` (SSH or local commands), parsed by ``slurm_parse``, rendered by ``slurm_script``.

One ``squeue`` per job refresh (``-o`` text; JSON while a row is ambiguous, never both in one
refresh), filtered on the server to ``-u USER`` (from ``transport.user()``) while the console shows
my jobs, and one ``sinfo --json`` per node refresh (cached for ``nodes_refresh_seconds``, 30 s by
default; ``invalidate`` forces). At the default 10 s refresh that is 6 job and 2 node queries a minute.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from typing import AsyncIterator

from yanflow_tui.backends import slurm_parse as parse
from yanflow_tui.backends.base import Backend, Capabilities, describe_job
from yanflow_tui.backends.slurm_script import render
from yanflow_tui.backends.slurm_transport import (
    DEFAULT_TIMEOUT, CommandTimeout, LocalTransport, SshTransport, Transport, parse_ssh_option,
)
from yanflow_tui.config import ClusterConfig
from yanflow_tui import formfields as ff
from yanflow_tui.errors import BackendError
from yanflow_tui.model import Job, JobKind, JobSpec, JobState, LogLine, Node

NODES_REFRESH = 30.0
HISTORY_REFRESH = 60.0
LOG_LINES = 10000
LOG_POLL = 2.0
JSON_STICKY = 300.0  # after an ambiguous -o row, read JSON (one query, not two) for this long
HISTORY_NOTE = "history needs accounting: finished jobs are not listed (sacct: {})"
_JOB_ID = re.compile(r"\d+(_(\d+|\[[0-9,\-%]+\]))?")


class SlurmBackend(Backend):
    kind = "slurm"
    capabilities = Capabilities(
        submit=True, cancel=True, logs=True, follow_logs=True,
        job_kinds=frozenset({JobKind.SLURM, JobKind.SINGLE, JobKind.MULTI_NODE}), history=True,
        raw_spec=True,
    )

    def __init__(self, config: ClusterConfig, transport: Transport | None = None):
        super().__init__(config)
        opts = config.options
        timeout = float(opts.get("command_timeout") or DEFAULT_TIMEOUT)
        if timeout <= 10:
            raise BackendError(f"command_timeout must exceed Slurm's MessageTimeout (10 s), got {timeout}")
        if transport is None:
            ssh = opts.get("ssh")
            transport = SshTransport(parse_ssh_option(ssh, config.name), timeout) if ssh else LocalTransport(timeout)
        self.transport = transport
        self.nodes_refresh = float(opts.get("nodes_refresh_seconds") or NODES_REFRESH)
        self.defaults = {k: opts[k] for k in ("partition", "account") if opts.get(k)}
        self._nodes: list[Node] | None = None
        self._nodes_at = 0.0
        self._history: list[Job] = []
        self._history_at = 0.0
        self.history_note = ""  # set when the cluster has no accounting
        self.use_json_squeue = False  # True once the -o text proved ambiguous or unsupported
        self._json_until = 0.0  # monotonic time until which the -o text is not tried (it was ambiguous)
        self.all_users = True  # the console says "mine" with set_all_users(False): squeue -u USER
        self._scontrol_json: bool | None = None

    # -- reads -----------------------------------------------------------------------------------
    async def _squeue(self, user: str = "") -> list[parse.RawJob]:
        """The queue (only ``user``'s jobs when given): one squeue call, text or JSON."""
        only = ["-u", user] if user else []
        if not self.use_json_squeue and time.monotonic() >= self._json_until:
            result = await self.transport.run(["squeue", "-h", "-a", "-t", "all", *only, "-o", parse.SQUEUE_FORMAT])
            if result.ok:
                try:
                    return parse.parse_squeue_text(result.stdout)
                except parse.AmbiguousRows:
                    # A newline in a name: read JSON from now on for a while, instead of asking
                    # twice (text, then JSON) on every refresh while that job stays in the queue.
                    self._json_until = time.monotonic() + JSON_STICKY
            elif "invalid" in result.stderr.lower():
                self.use_json_squeue = True  # this squeue rejects our -o format: JSON from now on
            else:
                raise BackendError(f"squeue failed: {result.error()}")
        return await self._squeue_json(user)

    async def _squeue_json(self, user: str = "") -> list[parse.RawJob]:
        only = ["-u", user] if user else []
        raws = parse.parse_squeue_json(await self.transport.check(["squeue", "-a", "-t", "all", *only, "--json"]))
        return [r for r in raws if r.user == user] if user else raws  # 22.05's --json ignores -u

    @property
    def current_user(self) -> str:
        return self.transport.known_user

    def set_all_users(self, all_users: bool) -> None:
        self.all_users = all_users  # the next squeue asks for everyone (True) or -u me (False)

    async def list_jobs(self) -> list[Job]:
        user = await self.transport.user()  # once: who "mine" is (id -un, never $USER)
        jobs = parse.build_jobs(await self._squeue("" if self.all_users else user), self.name)
        await self._refresh_history()
        live = {j.id for j in jobs}
        return jobs + [j for j in self._history if j.id not in live]

    @property
    def notice(self) -> str:
        return "history needs accounting (no slurmdbd): finished jobs are not listed" if self.history_note else ""

    async def _refresh_history(self) -> None:
        if self.history_note or time.monotonic() - self._history_at < HISTORY_REFRESH and self._history_at:
            return
        self._history_at = time.monotonic()
        result = await self.transport.run(["sacct", "--json", "-X", "--starttime", "now-1days"])
        if not result.ok:
            text = result.error()
            if "accounting storage is disabled" in text.lower() or "slurmdbd" in text.lower():
                self.history_note = HISTORY_NOTE.format(text)
            return
        try:
            raws = parse.parse_sacct_json(result.stdout)
        except BackendError:
            return
        self._history = [j for j in parse.build_jobs(raws, self.name) if j.state.terminal]

    async def list_nodes(self) -> list[Node]:
        if self._nodes is not None and time.monotonic() - self._nodes_at < self.nodes_refresh:
            return list(self._nodes)
        result = await self.transport.run(["sinfo", "-a", "--json"])
        if result.ok:
            nodes = parse.parse_sinfo_json(parse._loads(result.stdout, "sinfo --json"), self.name)
        else:
            nodes = parse.parse_sinfo_text(
                await self.transport.check(["sinfo", "-a", "-h", "-N", "-O", parse.SINFO_FORMAT]), self.name)
        self._nodes, self._nodes_at = nodes, time.monotonic()
        return list(nodes)

    def invalidate(self) -> None:
        self._nodes = None
        self._history_at = 0.0

    async def _raw_job(self, job_id: str) -> parse.RawJob:
        """Full details of one job (``scontrol show job --json`` where it exists, else squeue JSON)."""
        _check_id(job_id)
        raws: list[parse.RawJob] = []
        if self._scontrol_json is not False:
            result = await self.transport.run(["scontrol", "show", "job", job_id, "--json"])
            if result.ok:
                self._scontrol_json = True
                raws = parse.parse_squeue_json(result.stdout)
            elif "unrecognized option" in result.stderr or "invalid option" in result.stderr:
                self._scontrol_json = False  # Slurm < 23.02
            elif "Invalid job id" in result.stderr:
                raise BackendError(f"no job {job_id!r} on cluster {self.name!r}")
        if not raws:
            raws = await self._squeue_json()
        for raw in raws:
            if job_id in (raw.display_id,) or (raw.job_id == job_id and not raw.array_task):
                return raw
        for raw in raws:  # an array's id names its first record
            if raw.array_job_id == job_id:
                return raw
        raise BackendError(f"no job {job_id!r} on cluster {self.name!r}")

    async def get_job(self, job_id: str) -> Job:
        for job in await self.list_jobs():
            if job.id == job_id:
                return job
        raw = await self._raw_job(job_id)
        return parse.to_job(raw, self.name, parent=raw.array_job_id if raw.array_task else "")

    async def describe(self, job_id: str) -> str:
        raw = await self._raw_job(job_id)
        job = parse.to_job(raw, self.name, parent=raw.array_job_id if raw.array_task else "")
        text = describe_job(job)
        extra = [(k, v) for k, v in job.details]
        if self.history_note:
            extra.append(("History", self.history_note))
        width = 10
        return text + "".join(f"\n{k + ':':<{width}} {v}" for k, v in extra)

    async def raw_spec(self, job_id: str) -> str:
        return await self.transport.check(["scontrol", "show", "job", "-dd", "--", job_id])

    # -- logs ------------------------------------------------------------------------------------
    async def _log_path(self, raw: parse.RawJob) -> str:
        pattern = raw.stdout
        if not pattern:
            pattern = "slurm-%A_%a.out" if raw.array_task.isdigit() else "slurm-%j.out"
        return parse.expand_output_path(pattern, raw)

    async def _job_state(self, job_id: str) -> JobState:
        """One job's state, cheaply (one line of ``squeue``; polled while a log is followed). A job
        squeue no longer knows has ended; an array's state is that of a task still going, if any."""
        _check_id(job_id)
        result = await self.transport.run(["squeue", "-h", "-t", "all", "-j", job_id, "-o", "%T"])
        if not result.ok and "Invalid job id" not in result.stderr:
            raise BackendError(f"squeue failed: {result.error()}")
        states = [parse.normalise_state(s) for s in result.stdout.split()] if result.ok else []
        if not states:
            return JobState.COMPLETED
        return next((s for s in states if not s.terminal), states[0])

    async def stream_logs(self, job_id: str, follow: bool = False) -> AsyncIterator[LogLine]:
        raw = await self._raw_job(job_id)
        # A pending job has no node (%N) and no file yet: wait until it starts.
        if follow and parse.normalise_state(raw.state) is JobState.PENDING:
            while await self._job_state(job_id) is JobState.PENDING:
                await asyncio.sleep(LOG_POLL)
            raw = await self._raw_job(job_id)
        if parse.normalise_state(raw.state) is JobState.PENDING:
            return
        path = await self._log_path(raw)
        stream = await self.transport.tail(path, LOG_LINES, follow)
        queue: asyncio.Queue = asyncio.Queue(maxsize=1000)
        done = object()

        async def pump():
            try:
                async for text in stream:
                    await queue.put(text)
            except BackendError as exc:
                await queue.put(exc)
            await queue.put(done)

        async def watch():  # with follow, end once the job is terminal (after a last drain)
            while True:
                await asyncio.sleep(LOG_POLL)
                try:
                    state = await self._job_state(job_id)
                except BackendError:
                    continue
                if state.terminal:
                    await asyncio.sleep(1.5)  # tail -F polls once a second
                    await queue.put(done)
                    return

        tasks = [asyncio.create_task(pump())]
        if follow:
            tasks.append(asyncio.create_task(watch()))
        try:
            while True:
                item = await queue.get()
                if item is done:
                    return
                if isinstance(item, BackendError):
                    raise item
                yield LogLine(job_id, item)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.shield(stream.aclose())

    # -- writes ----------------------------------------------------------------------------------
    def _render(self, spec: JobSpec) -> str:
        return render(spec, "DRY-RUN", self.defaults).text()

    def form_fields(self, kind: JobKind) -> tuple[ff.FormField, ...]:
        fields = [ff.NAME, ff.COMMAND_FIELD, ff.WORKDIR, *ff.resources(kind)]
        fields.insert(fields.index(ff.CPUS), ff.FormField(
            "slurm.gpu_type", "GPU type", "--gres=gpu:TYPE:N; empty takes any type", placeholder="any, e.g. a100"))
        fields += [
            ff.FormField("slurm.partition", "Partition", "-p; empty uses the cluster's default partition",
                         default=self.defaults.get("partition", ""), pool=True),
            ff.FormField("slurm.account", "Account", "-A", default=self.defaults.get("account", "")),
            ff.FormField("slurm.qos", "QOS", "--qos"),
            ff.FormField("slurm.time", "Time limit", "-t, e.g. 01:00:00 or 2-00:00:00"),
            ff.FormField("slurm.output", "Output", "-o file; %j is the job id, %x the name",
                         placeholder="slurm-%j.out in the workdir"),
        ]
        if kind is not JobKind.SINGLE:
            fields.append(ff.FormField("slurm.exclusive", "Exclusive", "--exclusive: whole nodes", kind=ff.FLAG))
        if kind is JobKind.MULTI_NODE:
            fields.append(ff.launcher())
        return (*fields, ff.ENV_FIELD)

    async def _submit(self, spec: JobSpec) -> str:
        tag = str(uuid.uuid4())
        rendered = render(spec, tag, self.defaults)
        try:
            result = await self.transport.run(rendered.argv, stdin_data=rendered.script)
        except (CommandTimeout, BackendError) as exc:
            # The controller may have taken the job even so: find it by its tag, never resubmit.
            found = await self._find_by_tag(tag)
            if found:
                return found
            raise BackendError(f"submit did not complete ({exc}); no job tagged yanflow:{tag} exists, "
                               f"so it is safe to submit again") from None
        if not result.ok:
            raise BackendError(f"sbatch refused the job: {result.error()}")
        job_id = result.stdout.strip().split(";")[0]
        if not job_id.isdigit():
            raise BackendError(f"sbatch printed no job id: {result.stdout.strip()[:80]!r}")
        return job_id

    async def _find_by_tag(self, tag: str) -> str | None:
        for attempt in range(3):
            try:
                for raw in await self._squeue_json():
                    if raw.comment == f"yanflow:{tag}":
                        return raw.array_job_id or raw.job_id
            except BackendError:
                pass
            await asyncio.sleep(2 * (attempt + 1))
        return None

    async def _cancel(self, job_id: str) -> None:
        _check_id(job_id)
        result = await self.transport.run(["scancel", "--", job_id])
        if not result.ok:
            raise BackendError(f"scancel {job_id} failed: {result.error()}")

    async def close(self) -> None:
        await self.transport.close()


def _check_id(job_id: str) -> None:
    if not _JOB_ID.fullmatch(job_id or ""):
        raise BackendError(f"not a Slurm job id: {job_id!r} (expected e.g. 123 or 123_4)")
