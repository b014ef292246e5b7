"""A synthetic cluster for the console benchmarks: a real ``Backend`` over generated, seeded data.

Each instance serves one cluster (``ClusterConfig.options``: ``jobs``, ``nodes``, ``gpus_per_node``,
``seed``, ``log_lines`` / ``log_bytes``, ``log_rate``, ``lazy``: the data made in a worker thread at the first
fetch, as a cluster's answer comes over the network, not when the console builds its backends) with:

- jobs of several users, standalone and in groups (array tasks, experiment trials, pods of a
  multi-node job) whose children carry ``parent``; every state, pending reasons, ages;
- nodes of 8 GPUs, GPUs allocated to the running jobs with utilisation values, some allocated but
  idle (0-3 %), drained and down nodes with unavailable GPUs;
- ``churn(fraction, gen)``: changes that fraction of the jobs (state moves, a ``churn <gen>`` reason,
  a few finished jobs gone and new ones submitted) and of the nodes (utilisation, allocation, a
  ``churn <gen>`` note on the first node), as a cluster would between two polls;
- ``list_jobs`` answers a ``JobList`` with the ``JobChanges`` since its previous answer (the jobs it
  put and the ids it removed meanwhile), as a backend that watches its cluster would;
- ``stream_logs``: a fast log source, ``log_lines`` lines (or ``log_bytes`` bytes) of ~100 bytes,
  yielding to the event loop every ``LOG_CHUNK`` lines like a network reader, until done or
  ``stop_logs`` is set; with ``log_rate`` (lines a second), paced like a training job's log, a
  tenth of a second's lines at a time.

It knows nothing of Textual; ``console.py`` registers it as the ``synthetic`` kind. Not a test fake:
it is sized for benchmarks (10,000 jobs and 2,000 nodes build in well under a second).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import datetime, timedelta, timezone

from yanflow_tui.backends.base import Backend, Capabilities
from yanflow_tui.model import Gpu, GpuState, Job, JobChanges, JobKind, JobList, JobState, LogLine, Node

USERS = ("alice", "bob", "carol", "dmitri", "erin", "farah", "gwen", "hiro")
NAMES = ("train-llm", "finetune", "eval", "prep-data", "sweep", "tokenize", "infer", "distill", "rl-rollout")
# ``realistic`` (an option, off by default so that the figures of the other benchmarks keep their data):
# hundreds of users, names of every cell width (ASCII, accents as combining marks: 0 cells, CJK and
# emoji: 2 cells), and big groups: 1,000-task Slurm arrays and Kubernetes pod groups of 64.
REAL_USERS = tuple(f"{stem}{i}" for i in range(60) for stem in ("u", "ml", "ana", "jörg", "李"))
REAL_NAMES = (
    *NAMES,
    "cafe\u0301-eval",
    "训练-模型",
    "ジョブ-推論",
    "🚀-launch",
    "donne\u0301es-pre\u0301p",
    "ŝlurm-test",
    "ⓐⓑ-mix",
)
PENDING_REASONS = ("Resources", "Priority", "QOSMaxGpuPerUser", "Dependency")
LOG_CHUNK = 1000  # lines yielded between two event-loop turns
STATE_WEIGHTS = (
    (JobState.RUNNING, 40),
    (JobState.PENDING, 30),
    (JobState.COMPLETED, 14),
    (JobState.FAILED, 5),
    (JobState.CANCELLED, 5),
    (JobState.COMPLETING, 6),
)
NEXT_STATE = {
    JobState.PENDING: (JobState.RUNNING, JobState.PENDING),
    JobState.RUNNING: (JobState.COMPLETING, JobState.RUNNING, JobState.FAILED),
    JobState.COMPLETING: (JobState.COMPLETED,),
    JobState.COMPLETED: (JobState.COMPLETED,),
    JobState.FAILED: (JobState.FAILED,),
    JobState.CANCELLED: (JobState.CANCELLED,),
    JobState.UNKNOWN: (JobState.PENDING,),
}
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)


class SyntheticBackend(Backend):
    kind = "synthetic"
    capabilities = Capabilities(logs=True, job_kinds=frozenset(JobKind), history=True)
    instances: dict[str, SyntheticBackend] = {}

    def __init__(self, config):
        super().__init__(config)
        opts = config.options
        self.rng = random.Random(f"{opts.get('seed', 1)}/{config.name}")
        self.gpus_per_node = int(opts.get("gpus_per_node", 8))
        self.log_lines = int(opts.get("log_lines", 0))
        self.log_bytes = int(opts.get("log_bytes", 0))
        self.log_rate = float(opts.get("log_rate", 0))
        self.stop_logs = False
        self.log_stats = LogStats()
        self.served_at = 0.0  # perf_counter when the last list_nodes answered (a refresh's data handed over)
        self.served_gen = 0  # the churn generation the last refresh served
        self.gen = 0
        self.marker_job = ""  # the job that carries ``churn <gen>`` after the last churn
        self.marker_node = ""  # the node that carries it
        self._next_id = 100_000
        self.jobs: dict[str, Job] = {}
        self.children: dict[str, list[str]] = {}  # group id -> its jobs' ids
        self._answered = 0  # the serial of the last list_jobs answer (0: none yet)
        self._put: set[str] = set()  # ids put (new or a new version) since that answer
        self._gone: set[str] = set()  # ids removed since that answer
        self.realistic = bool(opts.get("realistic"))
        self.users, self.names = (REAL_USERS, REAL_NAMES) if self.realistic else (USERS, NAMES)
        self.nodes: dict[str, Node] = {}
        self._sizes = int(opts.get("jobs", 1000)), int(opts.get("nodes", 100))
        # ``lazy``: made in a worker thread at the first fetch, as a cluster's answer comes over the network
        # (``terminal.py``: the console's start is not charged with making the synthetic data)
        self._lazy = bool(opts.get("lazy"))
        self._made: asyncio.Future | None = None
        if not self._lazy:
            self._make()
        SyntheticBackend.instances[config.name] = self

    def _make(self) -> None:
        self._make_jobs(self._sizes[0])
        self._make_nodes(self._sizes[1])

    async def _made_once(self) -> None:
        if self._lazy:
            if self._made is None:
                self._made = asyncio.ensure_future(asyncio.to_thread(self._make))
            await asyncio.shield(self._made)

    # -- generation ----------------------------------------------------------------------------------
    def _new_id(self) -> str:
        self._next_id += 1
        return str(self._next_id)

    def _job(
        self, job_id: str, kind: JobKind, parent: str = "", user: str | None = None, state: JobState | None = None
    ) -> Job:
        rng = self.rng
        state = state or rng.choices([s for s, _ in STATE_WEIGHTS], [w for _, w in STATE_WEIGHTS])[0]
        reason = (
            rng.choice(PENDING_REASONS)
            if state is JobState.PENDING
            else ("NonZeroExitCode" if state is JobState.FAILED else "")
        )
        return Job(
            job_id,
            self.name,
            f"{rng.choice(self.names)}-{rng.randrange(1000)}",
            user or rng.choice(self.users),
            state,
            state.value.upper(),
            reason,
            (),
            rng.choice((0, 1, 1, 2, 4, 8)),
            NOW - timedelta(seconds=rng.randrange(3 * 86400)),
            kind=kind,
            parent=parent,
            exit_code=1 if state is JobState.FAILED else None,
            command="python train.py --config run.yaml",
        )

    def _make_jobs(self, count: int) -> None:
        rng = self.rng
        while len(self.jobs) < count:
            room = count - len(self.jobs)
            if room > 4 and rng.random() < 0.025:  # a group: ~15 % of jobs end up as children
                kind, size = rng.choice(
                    (
                        (JobKind.SLURM, rng.randint(4, 16)),
                        (JobKind.EXPERIMENT, rng.randint(3, 12)),
                        (JobKind.MULTI_NODE, rng.randint(2, 4)),
                    )
                )
                if self.realistic and rng.random() < 0.1:  # a big one: an array of 1,000 or a pod group of 64
                    kind, size = rng.choice(((JobKind.SLURM, 1000), (JobKind.MULTI_NODE, 64)))
                size = min(size, room - 1)
                parent = self._new_id()
                user = rng.choice(self.users)
                self.jobs[parent] = self._job(parent, kind, user=user)
                sep = {JobKind.SLURM: "_", JobKind.EXPERIMENT: ".", JobKind.MULTI_NODE: "-w"}[kind]
                kids = [f"{parent}{sep}{k}" for k in range(size)]
                for kid in kids:
                    self.jobs[kid] = self._job(kid, kind, parent=parent, user=user)
                self.children[parent] = kids
            else:
                job_id = self._new_id()
                self.jobs[job_id] = self._job(job_id, rng.choice((JobKind.SLURM, JobKind.SINGLE)))

    def _make_nodes(self, count: int) -> None:
        rng, per = self.rng, self.gpus_per_node
        names = [f"{self.name}-gpu{i:04d}" for i in range(count)]
        broken = {
            n: ("drain", "maintenance") if rng.random() < 0.75 else ("down", "not responding")
            for n in names
            if rng.random() < 0.04
        }
        free = {n: list(range(per)) for n in names if n not in broken}
        alloc: dict[str, dict[int, str]] = {n: {} for n in names}
        order = [n for n in names if n not in broken]
        cursor = 0
        for job_id, job in list(self.jobs.items()):  # place the running jobs' GPUs
            if job.state is not JobState.RUNNING or not job.gpus or not order:
                continue
            for step in range(len(order)):
                node = order[(cursor + step) % len(order)]
                if len(free[node]) >= job.gpus:
                    indices = tuple(free[node][: job.gpus])
                    del free[node][: job.gpus]
                    for i in indices:
                        alloc[node][i] = job_id
                    self.jobs[job_id] = replace(job, nodes=(node,), gpu_indices=indices)
                    cursor = (cursor + step) % len(order)
                    break
            else:  # the cluster is full: the job waits instead
                self.jobs[job_id] = replace(job, state=JobState.PENDING, raw_state="PENDING", reason="Resources")
        for name in names:
            state_reason = broken.get(name)
            gpus = []
            for i in range(per):
                if state_reason:
                    gpus.append(
                        Gpu(i, GpuState.UNAVAILABLE, reason=state_reason[0], name="H100", memory_total_mb=81920)
                    )
                elif i in alloc[name]:
                    util = rng.uniform(0, 3) if rng.random() < 0.1 else rng.uniform(30, 100)  # some allocated but idle
                    gpus.append(
                        Gpu(
                            i,
                            GpuState.ALLOCATED,
                            alloc[name][i],
                            name="H100",
                            utilization=util,
                            memory_used_mb=int(util * 800),
                            memory_total_mb=81920,
                        )
                    )
                else:
                    gpus.append(
                        Gpu(i, GpuState.FREE, name="H100", utilization=0.0, memory_used_mb=0, memory_total_mb=81920)
                    )
            self.nodes[name] = self._node(name, tuple(gpus), state_reason)

    def _node(
        self, name: str, gpus: tuple[Gpu, ...], state_reason: tuple[str, str] | None = None, reason: str = ""
    ) -> Node:
        used = sum(g.state is GpuState.ALLOCATED for g in gpus)
        if state_reason:
            state, reason = state_reason[0], reason or state_reason[1]
        else:
            state = "idle" if not used else ("allocated" if used == len(gpus) else "mixed")
        partition = "gpu-large" if name.endswith(("0", "5")) else "gpu"
        return Node(
            self.name,
            name,
            state,
            (partition,),
            128,
            16 * used,
            1_048_576,
            131_072 * used,
            "H100",
            len(gpus),
            used,
            gpus,
            reason,
        )

    # -- changes between two polls ---------------------------------------------------------------------
    def churn(self, fraction: float, gen: int) -> int:
        """Change ``fraction`` of the jobs and nodes; return how many jobs changed. The first
        top-level job and the first node always change, with ``churn <gen>`` as their reason."""
        rng, self.gen = self.rng, gen
        marker = f"churn {gen}"
        ids = list(self.jobs)
        count = max(1, round(fraction * len(ids)))
        picked = set(rng.sample(ids, min(count, len(ids))))
        first = self.marker_job = self.first_top_level()
        picked.add(first)
        churned = 0
        removable = [
            i
            for i in picked
            if i != first and not self.jobs[i].parent and i not in self.children and self.jobs[i].state.terminal
        ]
        for job_id in removable[: max(0, count // 10)]:  # finished jobs age out...
            del self.jobs[job_id]
            picked.discard(job_id)
            self._put.discard(job_id)
            self._gone.add(job_id)
            churned += 1
        for _ in range(churned):  # ...and as many new ones are submitted
            job_id = self._new_id()
            self.jobs[job_id] = self._job(job_id, JobKind.SLURM, state=JobState.PENDING)
            self._put.add(job_id)
        for job_id in picked:
            job = self.jobs[job_id]
            state = rng.choice(NEXT_STATE[job.state])
            self.jobs[job_id] = replace(job, state=state, raw_state=state.value.upper(), reason=marker)
            self._put.add(job_id)
            churned += 1
        names = list(self.nodes)
        self.marker_node = names[0] if names else ""
        for name in set(rng.sample(names, max(1, round(fraction * len(names))))) | {names[0]} if names else ():
            node = self.nodes[name]
            gpus = tuple(
                replace(g, utilization=rng.uniform(0, 100))
                if g.state is GpuState.ALLOCATED
                else replace(g, state=GpuState.ALLOCATED, job_id="churn", utilization=rng.uniform(30, 100))
                if g.state is GpuState.FREE and rng.random() < 0.2
                else g
                for g in node.gpus
            )
            broken = (node.state, node.reason) if node.state in ("drain", "down") else None
            self.nodes[name] = self._node(name, gpus, broken, reason=marker if name == names[0] else "")
        return churned

    def first_top_level(self) -> str:
        """The lowest id of a job that is not in a group (the queue's first row of this cluster)."""
        return min((i for i, j in self.jobs.items() if not j.parent and i not in self.children), key=int)

    # -- the protocol ----------------------------------------------------------------------------------
    async def list_jobs(self) -> list[Job]:
        await self._made_once()
        jobs = self.jobs
        changes = None
        if self._answered:  # (ids both removed and put again since then: put)
            gone = tuple(self._gone - self._put)
            changes = JobChanges(self._answered, tuple(jobs[i] for i in self._put), gone)
        answer = JobList(jobs.values(), changes)
        self._answered = answer.serial
        self._put, self._gone = set(), set()
        return answer

    async def list_nodes(self) -> list[Node]:
        await self._made_once()
        nodes = list(self.nodes.values())
        self.served_at, self.served_gen = time.perf_counter(), self.gen
        return nodes

    async def stream_logs(self, job_id: str, follow: bool = False, stream: str = "") -> AsyncIterator[LogLine]:
        stats = self.log_stats = LogStats()
        tails = [
            f" step={s} loss={1 / (s + 1):.4f} lr=3.0e-4 grad_norm={s % 7 + 0.5:.2f} tokens/s=181234 rank=0"
            for s in range(64)
        ]
        limit_lines = self.log_lines or None
        limit_bytes = self.log_bytes or None
        stats.started = time.perf_counter()
        chunk = max(1, int(self.log_rate / 10)) if self.log_rate else LOG_CHUNK
        i = 0
        while not self.stop_logs:
            for _ in range(chunk):
                text = f"2026-11-29T12:00:00Z {i:>10}{tails[i & 63]}"  # ~100 bytes, a new string each line
                i += 1
                stats.bytes += len(text) + 1
                yield LogLine(job_id, text)
                if (limit_lines and i >= limit_lines) or (limit_bytes and stats.bytes >= limit_bytes):
                    break
            stats.lines = i
            if (limit_lines and i >= limit_lines) or (limit_bytes and stats.bytes >= limit_bytes):
                break
            # a network reader gives the loop a turn between reads; a paced log waits for its next lines
            await asyncio.sleep(chunk / self.log_rate if self.log_rate else 0)
        stats.lines = i
        stats.finished = time.perf_counter()


class LogStats:
    """What one ``stream_logs`` call produced: lines, bytes, and when it started and finished."""

    def __init__(self) -> None:
        self.lines = 0
        self.bytes = 0
        self.started = 0.0
        self.finished = 0.0
