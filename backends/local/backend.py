"""The local backend: this machine as a one-node cluster.

``single`` jobs run as child processes, each leading its own process group and session (so they
outlive the console), under ``local_runner``, which records the exit status. A job with ``image:`` runs
the same way, its command being the container runtime's ``run`` (see ``containers``). GPUs come from NVML and
are handed out through ``CUDA_VISIBLE_DEVICES``; a job waits, pending, until enough are free.
Job state lives in SQLite and logs in files, both under the XDG state dir.
"""

from __future__ import annotations

import asyncio
import fcntl
import functools
import json
import os
import pwd
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import yaml

from yanflow_tui import formfields as ff
from yanflow_tui import locations
from yanflow_tui.backends.base import (
    MONITOR_ONLY,
    Backend,
    Capabilities,
    Download,
    FileListing,
    Forward,
    Shell,
    describe_job,
)
from yanflow_tui.backends.downloads import output_folder
from yanflow_tui.backends.local import containers, inside, procs, procuse, runner, scheduler
from yanflow_tui.backends.local.explain import explain_row
from yanflow_tui.backends.local.nvml import GpuReading, NvmlProbe
from yanflow_tui.backends.local.store import JobRow, LocalStore
from yanflow_tui.backends.local.tbfiles import list_event_files, logdir_of, read_range
from yanflow_tui.config import ClusterConfig
from yanflow_tui.curves import LOGDIR_ENV, EventListing
from yanflow_tui.errors import BackendError
from yanflow_tui.explain import Explanation
from yanflow_tui.firstfailure import RankEvidence
from yanflow_tui.liveuse import LiveUse
from yanflow_tui.model import Gpu, GpuState, Job, JobKind, JobSpec, JobState, LogLine, Node
from yanflow_tui.spec import spec_to_data

CANCEL_GRACE_SECONDS = 5.0
LOG_POLL_SECONDS = 0.2
READ_CHUNK = 256 * 1024


def current_user() -> str:
    """This machine's user we run as (the password database's name, never ``$USER``)."""
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


HOST_ENV = "YANFLOW_HOST"  # names this machine in the local store instead of its hostname (tests, odd setups)


def local_host() -> str:
    """This machine's name in the local store, where jobs record the host that runs them."""
    return os.environ.get(HOST_ENV) or socket.gethostname()


def _memory_total_mb() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _when(stamp: float | None) -> datetime | None:
    return datetime.fromtimestamp(stamp, tz=timezone.utc) if stamp else None


class LocalBackend(Backend):
    kind = "local"
    gpu_use_source = "NVML"
    cpu_use_source = procuse.SOURCE
    capabilities = Capabilities(
        submit=True,
        cancel=True,
        logs=True,
        job_kinds=frozenset({JobKind.SINGLE}),
        history=True,
        raw_spec=True,
        runs_here=True,
        event_files=True,
        files=True,
        shell=True,
        forward=True,
        explain=True,
        rank_evidence=True,  # its exit, end and torchrun's error file (TORCHELASTIC_ERROR_FILE, set per job)
        upload=True,  # a checkpoint carried from another cluster, copied into place here
        live_use=True,  # its process tree's CPU and memory from /proc (``procuse``)
    )
    MONITOR_ONLY = MONITOR_ONLY  # option discovery sets on a Slurm login node (a config cannot)

    def __init__(
        self,
        config: ClusterConfig,
        state_dir: Path | None = None,
        probe: NvmlProbe | None = None,
        host: str | None = None,
    ):
        super().__init__(config)
        self.state_dir = Path(state_dir) if state_dir else locations.state_dir()
        self.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.jobs_dir = self.state_dir / "jobs"
        self.jobs_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.store = LocalStore(self.state_dir / "local.db")
        self.probe = probe or NvmlProbe()
        self.hostname = host or local_host()
        self.user = current_user()
        self._children: dict[int, subprocess.Popen] = {}  # job id -> runner started by this process
        self._helpers: list[subprocess.Popen] = []  # background schedulers started by this process
        self.container, self.no_container = containers.configured(config.options, self.name)
        if config.options.get(self.MONITOR_ONLY):
            # A login node found by discovery: shown, never given jobs, unless the config names it.
            self.capabilities = replace(self.capabilities, submit=False, job_kinds=frozenset(), upload=False)
            self.submit_refusal = (
                f"cluster {self.name!r} is this login node, shown for monitoring only; "
                f"to run jobs on it, name it in the config with kind: local"
            )

    # -- reads ----------------------------------------------------------------------------------
    async def list_jobs(self) -> list[Job]:
        await asyncio.to_thread(self._schedule)
        rows = await asyncio.to_thread(self.store.all)
        return [self._job(row) for row in rows]

    def about(self) -> tuple[tuple[str, str], ...]:
        return (("user", self.user),)

    def check_id(self, job_id: str) -> None:
        # ASCII digits only ("²".isdigit() is true), and small enough for an SQLite INTEGER.
        if not (isinstance(job_id, str) and job_id.isascii() and job_id.isdigit() and len(job_id) <= 18):
            raise BackendError(f"no job {job_id!r} on cluster {self.name!r} (local job ids are numbers, e.g. 12)")

    async def get_job(self, job_id: str) -> Job:
        self.check_id(job_id)
        await asyncio.to_thread(self._schedule)
        return self._job(await asyncio.to_thread(self._row, job_id))

    async def describe(self, job_id: str) -> str:
        self.check_id(job_id)
        await asyncio.to_thread(self._schedule)
        row = await asyncio.to_thread(self._row, job_id)
        job = self._job(row)
        fields = {k: v for k, v in row.spec_data.items() if k != "command"}  # the command is shown above
        spec = yaml.safe_dump(fields, sort_keys=False, allow_unicode=True).rstrip()
        runtime = self._job_runtime(row.id)
        extra = [
            f"Log:       {self._log_path(row.id)}",
            f"PID:       {row.pid or '-'} (process group leader)",
            *([f"Container: {self._container_name(row.id)} ({runtime.name})"] if runtime else []),
            "",
            "Spec:",
            *(f"  {line}" for line in spec.splitlines()),
        ]
        return describe_job(job) + "\n" + "\n".join(extra)

    async def raw_spec(self, job_id: str) -> str:
        """The spec the job was submitted with, as the YAML a spec file holds."""
        self.check_id(job_id)
        row = await asyncio.to_thread(self._row, job_id)
        return yaml.safe_dump(row.spec_data, sort_keys=False, allow_unicode=True)

    async def event_files(self, job_id: str) -> EventListing:
        self.check_id(job_id)
        row = await asyncio.to_thread(self._row, job_id)
        logdir = logdir_of(row.spec_data)
        return EventListing(logdir, tuple(await asyncio.to_thread(list_event_files, logdir)))

    async def read_event_bytes(self, job_id: str, path: str, offset: int, limit: int) -> tuple[int, bytes]:
        self.check_id(job_id)
        row = await asyncio.to_thread(self._row, job_id)
        return await asyncio.to_thread(read_range, logdir_of(row.spec_data), path, offset, limit)

    # -- inside a job (``inside``): its workdir, a shell there, its ports (already local) -------------
    def _workdir(self, row: JobRow) -> str:
        if self._job_runtime(row.id) is not None:
            return str(self.jobs_dir / str(row.id))  # a container job: the folder it was started from here
        return str(Path(row.spec_data.get("workdir") or "~").expanduser())

    def _outputs(self, row: JobRow) -> str:
        """The job's output folder (``outputs:``, relative to its workdir), where its files are listed."""
        if self._job_runtime(row.id) is not None:
            return self._workdir(row)  # a path in the image is not one here
        return str(Path(output_folder(row.spec_data.get("outputs"), self._workdir(row))).expanduser())

    async def _running_row(self, job_id: str) -> JobRow:
        self.check_id(job_id)
        row = await asyncio.to_thread(self._row, job_id)
        if row.state != "running" or not self._mine(row):
            raise BackendError(f"job {job_id} is not running on this machine ({row.state})")
        return row

    async def list_files(self, job_id: str, path: str = "") -> FileListing:
        self.check_id(job_id)
        row = await asyncio.to_thread(self._row, job_id)
        return await asyncio.to_thread(inside.list_dir, self._outputs(row), path)

    async def download(self, job_id: str, path: str, target: Path, progress=None) -> Download:
        self.check_id(job_id)
        row = await asyncio.to_thread(self._row, job_id)
        return await asyncio.to_thread(inside.download, self._outputs(row), path, target, progress)

    async def _upload(self, source: Path, target: str) -> str:
        from yanflow_tui.backends.local import upload

        return await asyncio.to_thread(upload.upload, source, target)

    async def _shell(self, job_id: str, rank: str) -> Shell:
        row = await self._running_row(job_id)
        if self._job_runtime(row.id) is not None:
            raise BackendError(f"job {job_id} runs in a container: open a shell with its runtime's exec")
        workdir = self._workdir(row)
        fallback = dict(os.environ, YANFLOW_JOB_ID=str(row.id), YANFLOW_JOB_NAME=row.name, YANFLOW_CLUSTER=self.name)
        env = await asyncio.to_thread(inside.job_environment, row.pid, fallback)
        shell = os.environ.get("SHELL") or "/bin/sh"

        def run() -> int:
            return subprocess.call([shell], cwd=workdir, env=env)

        return Shell(f"job {job_id} ({shell} in {workdir})", run)

    async def forward(self, job_id: str, port: int, rank: str = "", local_port: int = 0) -> Forward:
        """A local job's ports are on this machine already: nothing is forwarded."""
        if not 0 < port < 65536 or local_port not in (0, port):
            raise BackendError(f"job {job_id} runs here: its port {port} is already 127.0.0.1:{port}")
        await self._running_row(job_id)

        async def close() -> None:
            return None

        return Forward(f"job {job_id} (here, not forwarded)", port, port, close)

    async def list_nodes(self) -> list[Node]:
        return [await asyncio.to_thread(self._node)]

    def _mine(self, row: JobRow) -> bool:
        """Started by a console on this host (rows from before hosts were recorded count as ours).
        Only this host can tell whether its process lives, hand out its GPUs or cancel it."""
        return row.host in ("", self.hostname)

    def _node(self) -> Node:
        readings = self.probe.read()
        active = [r for r in self.store.active() if r.state == "running" and self._mine(r)]
        holders = {i: r for r in active for i in r.indices}
        cpus = os.cpu_count() or 1
        gpus = tuple(self._gpu(g, holders.get(g.index)) for g in readings or [])
        return Node(
            cluster=self.name,
            name=self.hostname,
            state="up",
            partitions=("local",),
            cpus_total=cpus,
            cpus_allocated=min(cpus, sum(r.cpus or 0 for r in active)),
            memory_mb=_memory_total_mb(),
            memory_allocated_mb=sum(r.memory_mb or 0 for r in active),
            gpu_type=readings[0].name if readings else None,
            gpus_total=len(gpus),
            gpus_allocated=sum(1 for g in gpus if g.state is not GpuState.FREE),
            gpus=gpus,
            reason=self.probe.reason if readings is None else "",
        )

    def _gpu(self, reading: GpuReading, holder: JobRow | None) -> Gpu:
        state, job_id, reason = GpuState.FREE, None, ""
        if holder is not None:
            state, job_id = GpuState.ALLOCATED, str(holder.id)
        elif reading.pids:
            state = GpuState.UNAVAILABLE
            reason = f"used outside yanflow by PID {', '.join(map(str, reading.pids[:3]))}"
        return Gpu(
            index=reading.index,
            state=state,
            job_id=job_id,
            uuid=reading.uuid,
            name=reading.name,
            utilization=reading.utilization,
            memory_used_mb=reading.memory_used_mb,
            memory_total_mb=reading.memory_total_mb,
            reason=reason,
        )

    async def stream_logs(self, job_id: str, follow: bool = False, stream: str = "") -> AsyncIterator[LogLine]:
        self.check_id(job_id)
        row = await asyncio.to_thread(self._row, job_id)
        path = self._log_path(row.id)
        offset, partial = 0, b""
        last_state_check = 0.0
        while True:
            chunk = await asyncio.to_thread(_read_from, path, offset)
            if chunk:
                offset += len(chunk)
                lines = (partial + chunk).split(b"\n")
                partial = lines.pop()
                for line in lines:
                    yield LogLine(job_id, line.decode("utf-8", errors="replace"))
                continue
            if not follow:
                break
            now = time.monotonic()
            if now - last_state_check > 1.0:
                last_state_check = now
                job = await self.get_job(job_id)
                if job.state.terminal:
                    # One last read: the job may have written just before it ended.
                    if not await asyncio.to_thread(_read_from, path, offset):
                        break
                    continue
            await asyncio.sleep(LOG_POLL_SECONDS)
        if partial:
            yield LogLine(job_id, partial.decode("utf-8", errors="replace"))

    async def close(self) -> None:
        await asyncio.to_thread(self._reap)
        await asyncio.to_thread(self.probe.close)
        await asyncio.to_thread(self.store.close)

    # -- writes (called through the gate in Backend.submit / Backend.cancel) ---------------------
    def check_spec(self, spec: JobSpec) -> None:
        if self.submit_refusal:
            raise BackendError(self.submit_refusal)
        super().check_spec(spec)
        if spec.image and self.container is None:
            raise BackendError(
                f"cluster {self.name!r} cannot run the image {spec.image!r}: {self.no_container}; install "
                f"podman or docker, or name one in the cluster's config (container: {{runtime: podman}})"
            )
        if spec.mounts and not spec.image:
            raise BackendError(
                f"cluster {self.name!r} mounts {spec.mounts[0].source!r} only into a container; "
                f"add image: or remove mounts:"
            )
        cpus = os.cpu_count() or 1
        if spec.resources.cpus and spec.resources.cpus > cpus:
            raise BackendError(f"the job asks for {spec.resources.cpus} CPUs but this machine has {cpus}")

    async def _submit(self, spec: JobSpec) -> str:
        # A stat can hang on a network home directory: keep it off the event loop (and out of
        # check_spec, which the Submit screen calls on every keystroke).
        # In a container the workdir is the image's path, not this machine's.
        if spec.workdir and not spec.image and not await asyncio.to_thread(_is_dir, spec.workdir):
            raise BackendError(f"workdir {spec.workdir!r} is not a directory on this machine")
        readings = await asyncio.to_thread(self.probe.read)
        total = len(readings or [])
        if spec.resources.gpus > total:
            why = f" ({self.probe.reason})" if readings is None and self.probe.reason else ""
            raise BackendError(f"the job asks for {spec.resources.gpus} GPU(s) but this machine has {total}{why}")
        job_id = await asyncio.to_thread(
            self._insert,
            spec.image is not None,
            name=spec.name,
            user=self.user,
            kind=spec.kind.value,
            spec=json.dumps(spec_to_data(spec)),
            command=spec.command_text,
            state="pending",
            reason="waiting to start",
            gpus=spec.resources.gpus,
            cpus=spec.resources.cpus,
            memory_mb=spec.resources.memory_mb,
            host=self.hostname,
        )
        await asyncio.to_thread(self._schedule)
        if (await asyncio.to_thread(self._row, str(job_id))).state == "pending":
            await asyncio.to_thread(self._start_scheduler)
        return str(job_id)

    async def _cancel(self, job_id: str) -> None:
        row = await asyncio.to_thread(self._mark_cancelled, job_id)
        if row.state == "pending":
            return
        runtime = await asyncio.to_thread(self._job_runtime, row.id)
        if runtime is not None:  # stop the container itself: its client may not outlive a signal
            await asyncio.to_thread(containers.stop, runtime, self._container_name(row.id), CANCEL_GRACE_SECONDS)
        if row.pid and await asyncio.to_thread(_still_running, row):
            procs.signal_group(row.pid, signal.SIGTERM)
            if not await self._group_gone(row.pid, CANCEL_GRACE_SECONDS):
                procs.signal_group(row.pid, signal.SIGKILL)
                # SIGKILL is delivered asynchronously: wait for the group to go, so the state settles below.
                await self._group_gone(row.pid, CANCEL_GRACE_SECONDS)
        if runtime is not None:  # one created but never started outlives its client, and --rm
            await asyncio.to_thread(containers.remove, runtime, self._container_name(row.id))
        await asyncio.to_thread(self._schedule)

    async def _group_gone(self, pgid: int, seconds: float) -> bool:
        """Wait up to ``seconds`` for every process of group ``pgid`` to end; True if they did."""
        deadline = time.monotonic() + seconds
        while await asyncio.to_thread(self._group_alive, pgid):
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.03)
        return True

    def _mark_cancelled(self, job_id: str) -> JobRow:
        """Record the cancel under the schedule lock (so no scheduler starts a pending job meanwhile), after
        settling a running job, so one that already ended is reported as such and not relabelled cancelled."""
        with self._lock():
            row = self._row(job_id)
            if not self._mine(row):
                raise BackendError(
                    f"job {job_id} runs on host {row.host}, not on {self.hostname}: "
                    f"cancel it from a console on {row.host}"
                )
            if row.state == "running":
                self._settle(row)
                row = self._row(job_id)
            if row.state == "pending":
                self.store.update(row.id, state="cancelled", reason="cancelled before start", end_time=time.time())
            elif row.state == "running":
                self.store.update(row.id, cancel_requested=1)
            else:
                raise BackendError(f"job {job_id} is already {row.state}")
            return row

    def form_fields(self, kind: JobKind) -> tuple[ff.FormField, ...]:
        fields = (ff.NAME, ff.COMMAND_FIELD, ff.WORKDIR, ff.OUTPUTS, *ff.resources(kind, memory=False), ff.ENV_FIELD)
        if self.container is not None and self.config.options.get("container"):  # configured, not just found
            return (*fields[:4], ff.IMAGE, ff.MOUNTS_FIELD, *fields[4:])
        return fields

    def _render(self, spec: JobSpec) -> str:
        lines = [f"# local job on {self.hostname}: {spec.resources.gpus} GPU(s)"]
        if spec.image and self.container is not None:
            data = spec_to_data(spec)
            gpus = list(range(spec.resources.gpus))
            argv = containers.run_argv(self.container, "yanflow-JOB", data, spec.env, gpus)
            if gpus:
                lines.append("# GPU devices: the allocated indices, chosen at start from free GPUs")
            if self.container.conf:
                lines.append(f"export CONTAINERS_CONF={shlex.quote(self.container.conf)}")
            lines.append(shlex.join(argv))
            return "\n".join(lines) + "\n"
        argv = self._argv(spec, Path("EXIT_FILE"))[5:]
        env = {k: v for k, v in spec.env.items()}
        if spec.resources.gpus:
            env["CUDA_VISIBLE_DEVICES"] = "<chosen at start from free GPUs>"
        lines.append(f"cd {shlex.quote(str(Path(spec.workdir or '~').expanduser()))}")
        lines.append(shlex.join(["env", *[f"{k}={v}" for k, v in env.items()], *argv]))
        return "\n".join(lines) + "\n"

    # -- scheduling and process management (blocking; run in threads) ----------------------------
    async def explain(self, job_id: str) -> Explanation:
        """Which GPUs are busy and with what, and the jobs ahead (the scheduler's state, NVML's readings)."""
        self.check_id(job_id)

        def read() -> Explanation:
            row = self._row(job_id)
            active = [r for r in self.store.active() if r.host == row.host or (self._mine(r) and self._mine(row))]
            return explain_row(self.name, row, active, self.probe.read(), self.probe.reason)

        return await asyncio.to_thread(read)

    def _row(self, job_id: str) -> JobRow:
        text = str(job_id)
        # ASCII digits only ("²".isdigit() is true), and small enough for an SQLite INTEGER.
        row = self.store.get(int(text)) if text.isascii() and text.isdigit() and len(text) <= 18 else None
        if row is None:
            raise BackendError(f"no job {job_id!r} on cluster {self.name!r}")
        return row

    def _log_path(self, job_id: int) -> Path:
        return self.jobs_dir / str(job_id) / "output.log"

    def _error_path(self, job_id: int) -> Path:
        return self.jobs_dir / str(job_id) / ERROR_FILE_NAME

    async def rank_evidence(self, job_id: str) -> list[RankEvidence]:
        """The job's one process: its exit, its end and torchrun's error file (``_start`` sets it)."""
        job = await self.get_job(job_id)
        error = await asyncio.to_thread(_read_small, self._error_path(int(job_id)))
        sig = job.reason.removeprefix("killed by SIG") if job.reason.startswith("killed by SIG") else ""
        return [RankEvidence("0", self.hostname, "", (), job.exit_code, sig, ended=job.end_time, error_file=error)]

    async def live_use(self, job_ids: Sequence[str]) -> dict[str, LiveUse]:
        """Each running job's process tree read twice from /proc, ``procuse.WINDOW`` apart (a job in a
        container, whose processes are the runtime's, or run by another machine, is left out)."""

        def leaders() -> dict[str, tuple[int, float | None]]:
            out = {}
            for job_id in job_ids:
                row = self._row(job_id)
                ours = row.state == "running" and self._mine(row) and self._job_runtime(row.id) is None
                if row.pid and ours and _still_running(row):  # its leader (same start) or group lives: no reused pid
                    out[job_id] = (row.pid, row.memory_mb * 1024.0 if row.memory_mb else None)
            return out

        def sample_all() -> dict[str, procuse.TreeSample]:
            return {job_id: procuse.sample(pid) for job_id, (pid, _) in found.items()}

        for job_id in job_ids:
            self.check_id(job_id)
        found = await asyncio.to_thread(leaders)
        if not found:
            return {}
        first = await asyncio.to_thread(sample_all)
        await asyncio.sleep(procuse.WINDOW)
        second = await asyncio.to_thread(sample_all)
        return {
            job_id: procuse.use_between(first[job_id], second[job_id], limit) for job_id, (_, limit) in found.items()
        }

    def _insert(self, in_container: bool, **fields) -> int:
        """A new job row, with its container runtime recorded beside it (under the schedule lock, so no
        scheduler starts it before): the job runs, and is found again and stopped, with the runtime it
        was submitted with, whichever console or scheduler handles it later."""
        with self._lock():
            job_id = self.store.insert(**fields)
            if in_container and self.container is not None:
                job_dir = self.jobs_dir / str(job_id)
                job_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
                runtime = self.container
                record = {"name": runtime.name, "path": runtime.path, "conf": runtime.conf, "args": list(runtime.args)}
                locations.private_file(job_dir / "container.json", json.dumps(record) + "\n")
            return job_id

    def _job_runtime(self, job_id: int) -> containers.Runtime | None:
        """The runtime a container job was submitted with; None for a job run directly."""
        try:
            record = json.loads((self.jobs_dir / str(job_id) / "container.json").read_text())
        except (OSError, ValueError):
            return None
        return containers.Runtime(record["name"], record["path"], record.get("conf", ""), tuple(record.get("args", [])))

    def _container_name(self, job_id: int) -> str:
        return containers.container_name(self.state_dir, self.hostname, job_id)

    def _group_alive(self, pgid: int) -> bool:
        self._reap()
        return bool(procs.group_members(pgid))

    def _reap(self) -> None:
        """Collect exited children (job runners and the scheduler) so none lingers as a zombie."""
        for key, child in list(self._children.items()):
            if child.poll() is not None:
                del self._children[key]
        self._helpers = [helper for helper in self._helpers if helper.poll() is None]

    @contextmanager
    def _lock(self):
        fd = locations.open_private(self.state_dir / "schedule.lock", os.O_RDWR | os.O_CREAT)  # kept in place
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _schedule(self) -> None:
        """Settle finished jobs, then start pending ones in order while GPUs allow."""
        with self._lock():
            self._reap()
            active = [r for r in self.store.active() if self._mine(r)]  # other hosts judge their own
            for row in active:
                if row.state == "running":
                    self._settle(row)
            mine = [r for r in self.store.active() if self._mine(r)]
            pending = [r for r in mine if r.state == "pending"]
            if not pending:
                return
            readings = self.probe.read()
            known = readings is not None  # None: NVML failed; never fail jobs on a transient error
            readings = readings or []
            used = {i for r in mine if r.state == "running" for i in r.indices}
            free = [g.index for g in readings if g.index not in used and not g.pids]
            blocked = False
            for row in pending:
                if known and row.gpus > len(readings):
                    self.store.update(
                        row.id,
                        state="failed",
                        end_time=time.time(),
                        reason=f"needs {row.gpus} GPU(s) but this machine has {len(readings)}",
                    )
                elif row.gpus == 0:
                    self._start(row, [], gpus_present=bool(readings))
                elif not blocked and row.gpus <= len(free):
                    chosen, free = free[: row.gpus], free[row.gpus :]
                    self._start(row, chosen, gpus_present=True)
                else:
                    blocked = True  # first-come first-served for GPU jobs
                    reason = f"waiting for {row.gpus} GPU(s): {len(free)} free"
                    if row.reason != reason:
                        self.store.update(row.id, reason=reason)

    def _start_scheduler(self) -> None:
        """Start the background scheduler so a waiting job starts even with no console open."""
        self._helpers.append(
            subprocess.Popen(
                [sys.executable, "-m", scheduler.__spec__.name, str(self.state_dir), self.name, self.hostname],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
            )
        )

    def _settle(self, row: JobRow) -> None:
        exit_file = self.jobs_dir / str(row.id) / "exit"
        code = _read_exit(exit_file)
        if code is None and _still_running(row):
            return
        if code is None and (runtime := self._job_runtime(row.id)) is not None:
            # Its runner is gone (killed), but the container may run on: it is found again by name.
            if containers.running(runtime, self._container_name(row.id)) is not False:
                return
        if code is None:
            code = _read_exit(exit_file)  # it may have ended between the two checks
        now = time.time()
        if row.cancel_requested:
            self.store.update(row.id, state="cancelled", reason="cancelled by user", exit_code=code, end_time=now)
        elif code is None:
            self.store.update(
                row.id, state="failed", reason="the job's process vanished without an exit status", end_time=now
            )
        elif code == 0:
            self.store.update(row.id, state="completed", reason="", exit_code=0, end_time=now)
        else:
            reason = f"killed by {_signal_name(-code)}" if code < 0 else f"exit code {code}"
            self.store.update(row.id, state="failed", reason=reason, exit_code=code, end_time=now)

    def _argv(self, spec_or_command, exit_file: Path) -> list[str]:
        command = spec_or_command.command if isinstance(spec_or_command, JobSpec) else spec_or_command
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        return [sys.executable, "-m", runner.__spec__.name, str(exit_file), "--", *argv]

    def _start(self, row: JobRow, gpus: list[int], gpus_present: bool) -> None:
        job_dir = self.jobs_dir / str(row.id)
        job_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        spec = row.spec_data
        env = dict(os.environ)
        env.update({str(k): str(v) for k, v in (spec.get("env") or {}).items()})
        env.update(YANFLOW_JOB_ID=str(row.id), YANFLOW_JOB_NAME=row.name, YANFLOW_CLUSTER=self.name)
        env[LOGDIR_ENV] = logdir_of(spec)
        # torchrun's root cause (its traceback, as JSON) beside the job's log, unless env: names a file
        env[ERROR_FILE_ENV] = str((spec.get("env") or {}).get(ERROR_FILE_ENV) or self._error_path(row.id))
        if gpus_present:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, gpus))
        command = spec["command"] if isinstance(spec["command"], str) else tuple(spec["command"])
        workdir = Path(spec.get("workdir") or "~").expanduser()
        runtime = self._job_runtime(row.id)
        if runtime is not None:
            inside = {str(k): str(v) for k, v in (spec.get("env") or {}).items()}
            inside.update(YANFLOW_JOB_ID=str(row.id), YANFLOW_JOB_NAME=row.name, YANFLOW_CLUSTER=self.name)
            try:
                command = tuple(containers.run_argv(runtime, self._container_name(row.id), spec, inside, gpus))
            except BackendError as exc:
                self.store.update(row.id, state="failed", end_time=time.time(), reason=str(exc))
                return
            env, workdir = runtime.env(env), job_dir  # the devices say which GPUs: no CUDA_VISIBLE_DEVICES
            env.pop("CUDA_VISIBLE_DEVICES", None)
        if not workdir.is_dir():
            self.store.update(
                row.id, state="failed", end_time=time.time(), reason=f"workdir {str(workdir)!r} is not a directory"
            )
            return
        try:  # append-only, written by the job itself: opened in place, never through a symlink
            log_fd = locations.open_private(self._log_path(row.id), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        except OSError as exc:
            self.store.update(row.id, state="failed", reason=f"cannot open its log: {exc}", end_time=time.time())
            return
        try:
            child = subprocess.Popen(
                self._argv(command, job_dir / "exit"),
                stdin=subprocess.DEVNULL,
                stdout=log_fd,
                stderr=subprocess.STDOUT,
                cwd=workdir,
                env=env,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            self.store.update(row.id, state="failed", reason=f"cannot start: {exc}", end_time=time.time())
            return
        finally:
            os.close(log_fd)
        self._children[row.id] = child
        self.store.update(
            row.id,
            state="running",
            reason="",
            pid=child.pid,
            pid_start=procs.start_ticks(child.pid),
            start_time=time.time(),
            gpu_indices=",".join(map(str, gpus)),
        )

    def _job(self, row: JobRow) -> Job:
        host = row.host or self.hostname
        reason = row.reason if self._mine(row) else "; ".join(filter(None, [f"on host {host}", row.reason]))
        return Job(
            id=str(row.id),
            cluster=self.name,
            name=row.name,
            user=row.user,
            state=JobState(row.state),
            raw_state=row.state.upper(),
            reason=reason,
            nodes=(host,) if row.state != "pending" else (),
            gpus=row.gpus,
            details=(("Host", host),),
            submit_time=_when(row.submit_time),
            start_time=_when(row.start_time),
            end_time=_when(row.end_time),
            kind=JobKind(row.kind),
            exit_code=row.exit_code,
            command=row.command,
            gpu_indices=tuple(row.indices),
            image=_spec_image(row.spec),
        )


@functools.lru_cache(maxsize=4096)
def _spec_image(spec: str) -> str:
    """The ``image:`` of a stored spec (JSON), "" for a job run directly or a spec that does not parse."""
    try:
        data = json.loads(spec)
    except ValueError:
        return ""
    image = data.get("image") if isinstance(data, dict) else None
    return image if isinstance(image, str) else ""


def _still_running(row: JobRow) -> bool:
    """The job's runner lives, or (it was killed) processes of its group live on."""
    if not row.pid:
        return False
    return procs.alive(row.pid, row.pid_start) or procs.leaderless_group(row.pid)


def _is_dir(path: str) -> bool:
    """Whether ``path`` (``~`` expanded) is a directory; in a thread: a stat can hang on a network home."""
    return Path(path).expanduser().is_dir()


def _read_from(path: Path, offset: int) -> bytes:
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            return fh.read(READ_CHUNK)
    except FileNotFoundError:
        return b""


def _read_exit(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


ERROR_FILE_ENV = "TORCHELASTIC_ERROR_FILE"
ERROR_FILE_NAME = "error.json"
ERROR_FILE_MAX = 65536


def _read_small(path: Path) -> str:
    """The start of a small text file; "" when there is none."""
    try:
        with open(path, "rb") as f:
            return f.read(ERROR_FILE_MAX).decode("utf-8", errors="replace")
    except OSError:
        return ""
