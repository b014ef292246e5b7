"""A fake backend implementing the protocol in memory, for UI tests and snapshots.

It records every call, so tests can assert that nothing reached it (read-only mode)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import datetime, timezone

from yanflow_tui.backends.base import Backend, Capabilities
from yanflow_tui.errors import AuthRequired, BackendError
from yanflow_tui.model import Checkpoint, Gpu, GpuState, Job, JobKind, JobSpec, JobState, LogLine, MetricPoint, Node

FIXED = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)


class FakeBackend(Backend):
    kind = "fake"
    capabilities = Capabilities(
        submit=True,
        cancel=True,
        logs=True,
        job_kinds=frozenset(JobKind),
        history=True,
        raw_spec=True,
    )
    instances: list[FakeBackend] = []

    def __init__(self, config):
        super().__init__(config)
        self.calls: list[tuple[str, object]] = []
        self.jobs: list[Job] = [
            self.job("101", "train-resnet", JobState.RUNNING, gpus=4, nodes=("gpu01",)),
            self.job("102", "eval-bert", JobState.PENDING, reason="Resources", gpus=8),
            self.job("103", "prep-data", JobState.COMPLETED),
        ]
        self.nodes: list[Node] = [
            Node(
                config.name,
                "gpu01",
                "mixed",
                ("gpu",),
                64,
                16,
                512000,
                128000,
                "A100",
                8,
                4,
                tuple(
                    Gpu(
                        i,
                        GpuState.ALLOCATED if i < 4 else GpuState.FREE,
                        "101" if i < 4 else None,
                        utilization=90.0 if i < 4 else 0.0,
                    )
                    for i in range(8)
                ),
            ),
            Node(
                config.name,
                "gpu02",
                "drain",
                ("gpu",),
                64,
                0,
                512000,
                0,
                "A100",
                8,
                0,
                tuple(Gpu(i, GpuState.UNAVAILABLE, reason="drain") for i in range(8)),
                reason="maintenance",
            ),
        ]
        self.logs: dict[str, list[str]] = {"101": [f"epoch {i} loss={1 / (i + 1):.3f}" for i in range(30)]}
        self.fail_reads: Exception | None = None
        self.read_delay = 0.0
        FakeBackend.instances.append(self)

    def job(self, job_id, name, state, reason="", gpus=0, nodes=()):
        return Job(
            job_id,
            self.name,
            name,
            "alice",
            state,
            state.value.upper(),
            reason,
            tuple(nodes),
            gpus,
            FIXED,
            None,
            None,
            JobKind.SINGLE,
        )

    async def list_jobs(self):
        self.calls.append(("list_jobs", None))
        if self.read_delay:  # a slow cluster, when a test asks for one
            await asyncio.sleep(self.read_delay)
        if self.fail_reads:
            raise self.fail_reads
        return list(self.jobs)

    async def list_nodes(self):
        self.calls.append(("list_nodes", None))
        if self.fail_reads:
            raise self.fail_reads
        return list(self.nodes)

    async def stream_logs(self, job_id, follow=False, stream=""):
        self.calls.append(("stream_logs", job_id))
        for line in self.logs.get(job_id, []):
            yield LogLine(job_id, line)
        job = next((j for j in self.jobs if j.id == job_id), None)
        if follow and job is not None and not job.state.terminal:  # a running job's log stays open until closed
            await asyncio.Event().wait()

    async def raw_spec(self, job_id):
        job = next(j for j in self.jobs if j.id == job_id)
        return f"# as the fake cluster holds it\nid: {job.id}\nname: {job.name}\ngpus: {job.gpus}\n"

    def _render(self, spec: JobSpec) -> str:
        return f"# fake submission\nname: {spec.name}\ncommand: {spec.command_text}\n"

    async def _submit(self, spec):
        self.calls.append(("submit", spec))
        job_id = str(200 + sum(1 for c in self.calls if c[0] == "submit"))
        self.jobs.append(self.job(job_id, spec.name, JobState.PENDING))
        return job_id

    async def _cancel(self, job_id):
        self.calls.append(("cancel", job_id))
        for i, job in enumerate(self.jobs):
            if job.id == job_id:
                self.jobs[i] = replace(job, state=JobState.CANCELLED, raw_state="CANCELLED")
                return
        raise BackendError(f"no job {job_id}")

    async def _perform(self, job_id, action, args):
        self.calls.append((action, job_id))

    @property
    def mutations(self):
        return [c for c in self.calls if c[0] not in ("list_jobs", "list_nodes", "stream_logs", "metrics")]


class FakeActionsBackend(FakeBackend):
    """The fake with extra verbs and a group: array job 104 holding three tasks."""

    kind = "fake-actions"
    capabilities = replace(
        FakeBackend.capabilities, actions=("pause", "activate"), rank_logs=True, metrics=True, checkpoints=True
    )

    def __init__(self, config):
        super().__init__(config)
        self.jobs.append(replace(self.job("104", "sweep", JobState.RUNNING, gpus=3)))
        trials = {0: ("0.1", "loss=0.5"), 1: ("0.01", "loss=0.2"), 10: ("0.001", "loss=0.9")}
        self.jobs.extend(
            replace(
                self.job(f"104_{i}", f"sweep-{i}", JobState.RUNNING, gpus=1),
                parent="104",
                details=(("Experiment", "104"), ("hp.lr", lr), ("Best validation", best)),
            )
            for i, (lr, best) in trials.items()
        )
        self.jobs.append(replace(self.job("105", "bobs-run", JobState.RUNNING), user="bob"))
        self.all_users_calls: list[bool] = []
        self.points = [MetricPoint("loss", step, 1.0 / (step + 1)) for step in range(0, 100, 10)]
        self.points += [MetricPoint("accuracy", step, step / 100, "validation") for step in (50, 100)]
        self.saved = [Checkpoint("ckpt-aaa", "104_1", 100, "COMPLETED", 4096, (("accuracy", 0.9),))]
        self.ranked_logs = {"104": [(f"rank {i % 2}", f"step {i // 2} from rank {i % 2}") for i in range(8)]}

    @property
    def current_user(self):
        return "alice"

    def set_all_users(self, all_users):
        self.all_users_calls.append(all_users)

    async def metrics(self, job_id):
        self.calls.append(("metrics", job_id))
        return list(self.points)

    async def checkpoints(self, job_id):
        return list(self.saved)

    async def download_checkpoint(self, checkpoint, target, progress=None):
        for done in (1024, 4096):
            if progress:
                progress(done, 4096)
            await asyncio.sleep(0.05)  # a download takes a while: its progress is seen in steps
        target.mkdir(parents=True)
        (target / "state.bin").write_bytes(b"x" * 4096)
        return target

    async def stream_logs(self, job_id, follow=False, stream=""):
        if job_id not in self.ranked_logs:
            async for line in super().stream_logs(job_id, follow):
                yield line
            return
        self.calls.append(("stream_logs", job_id))
        for source, text in self.ranked_logs[job_id]:
            yield LogLine(job_id, text, source)


class FakeLoginBackend(FakeBackend):
    """The fake behind a password: reads raise AuthRequired until ``login`` gets the right one."""

    kind = "fake-login"
    PASSWORD = "s3cret-Pa55"

    def __init__(self, config):
        super().__init__(config)
        self.logged_in = False
        self.attempts: list[str] = []
        self.reads = 0

    async def list_jobs(self):
        self.reads += 1
        if not self.logged_in:
            raise AuthRequired(self.name, "alice")
        return await super().list_jobs()

    async def login(self, password):
        self.attempts.append("ok" if password == self.PASSWORD else "bad")
        if password != self.PASSWORD:
            raise BackendError("wrong password")
        self.logged_in = True


LONG_NAMES = (
    "ddp-llama-70b-pretrain-stage2-bf16",
    "finetune-bert-large-squad-v2-lr3e-5",
    "sweep-resnet152-imagenet-mixup-cutmix",
)


class FakeLongBackend(FakeBackend):
    """The fake as a busy site looks at 80 columns: long job names, node lists and reasons, 7-digit
    ids, and nodes with 8 and 16 GPUs, long names and a long GPU type."""

    kind = "fake-long"

    def __init__(self, config):
        super().__init__(config)
        self.jobs = [
            self.job(
                "4815162", LONG_NAMES[0], JobState.RUNNING, gpus=16, nodes=("dgx-a100-node-0041", "dgx-a100-node-0042")
            ),
            self.job(
                "4815163",
                LONG_NAMES[1],
                JobState.PENDING,
                gpus=8,
                reason="QOSMaxGRESPerUser (waiting for the user's GPU limit)",
            ),
            self.job("4815164", LONG_NAMES[2], JobState.RUNNING, gpus=8, nodes=("dgx-a100-node-0043",)),
        ]

        def node(name, count, used, reason=""):
            gpus = tuple(
                Gpu(
                    i,
                    GpuState.ALLOCATED if i < used else GpuState.FREE,
                    "4815162" if i < used else None,
                    utilization=(87.0 if i < used else 0.0),
                )
                for i in range(count)
            )
            return Node(
                config.name,
                name,
                "mixed" if used else "idle",
                ("gpu-long", "gpu", "debug"),
                128,
                64,
                2048000,
                1024000,
                "NVIDIA A100-SXM4-80GB",
                count,
                used,
                gpus,
                reason=reason,
            )

        self.nodes = [
            node("dgx-a100-node-0041", 8, 8),
            node("dgx-a100-node-0042", 8, 5, "NVML unavailable: NVML Shared Library Not Found on this host"),
            node("dgx-h100-node-0101", 16, 3),
        ]
