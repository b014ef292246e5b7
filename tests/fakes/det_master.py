"""A fake Determined master over real HTTP (aiohttp, in a background thread, on 127.0.0.1).

Every answer is built from the SDK's own ``bindings`` classes (``...to_json(omit_unset=True)``), so a
shape our code misreads fails in the SDK's parser just as it would against a real master. It keeps a
request log (method, path, query, JSON body), can answer 503 for a number of requests, streams task
logs that tests append to while a follower watches, and serves checkpoint tars (optionally dropping
the connection part-way).
"""

from __future__ import annotations

import asyncio
import io
import json
import tarfile
import threading
import uuid as uuidlib
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from determined.common.api import bindings as b
from determined.common.api.authentication import salt_and_hash
from determined.common.util import parse_protobuf_timestamp

T0 = "2026-11-29T12:00:00Z"
# A static on-premises pool's fields that say nothing here (``v1ResourcePool`` requires every one)
POOL_UNSET: dict[str, Any] = {
    **dict.fromkeys(
        "agentDockerImage agentDockerNetwork agentDockerRuntime agentFluentImage containerStartupScript description "
        "imageId instanceType masterCertName masterUrl startupScript".split(),
        "",
    ),
    **dict.fromkeys(
        "auxContainerCapacity auxContainerCapacityPerAgent auxContainersRunning maxAgentStartingPeriod maxAgents "
        "maxIdleAgentPeriod minAgents".split(),
        0,
    ),
    "clusterName": "fake",
    "details": b.v1ResourcePoolDetail(),
    "location": "on-prem",
    "preemptible": False,
    "resourceManagerMetadata": {},
    "schedulerFittingPolicy": b.v1FittingPolicy.BEST,
    "schedulerType": b.v1SchedulerType.PRIORITY,
    "slotType": b.devicev1Type.CUDA,
    "type": b.v1ResourcePoolType.STATIC,
}
# The part of a master config (master.yaml, as GET /api/v1/master/config gives it) with default images:
# task_container_defaults.image per device type, and a resource pool with its own.
DEFAULT_CUDA = "determinedai/pytorch-ngc-dev:0736b6d"
DEFAULT_CPU = "determinedai/pytorch-tensorflow-cpu-dev:0736b6d"
DEFAULT_ROCM = "determinedai/environments:rocm-5.6-pytorch-1.3-tf-2.10-rocm-mpich-0736b6d"
MASTER_CONFIG: dict[str, Any] = {
    "log": {"level": "info", "color": True},
    "task_container_defaults": {
        "shm_size_bytes": 4294967296,
        "network_mode": "bridge",
        "image": {"cpu": DEFAULT_CPU, "cuda": DEFAULT_CUDA, "rocm": DEFAULT_ROCM},
    },
    "resource_pools": [
        {"pool_name": "default", "max_aux_containers_per_agent": 100},
        {
            "pool_name": "a100",
            "task_container_defaults": {"image": {"cuda": "determinedai/pytorch-ngc:0.38.1", "cpu": DEFAULT_CPU}},
        },
    ],
}
USER = web.RequestKey("user", str)


def ts(second: int) -> str:
    return f"2026-11-29T12:{second // 60:02d}:{second % 60:02d}Z"


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    auth: str


@dataclass
class FakeMaster:
    users: dict[str, str] = field(default_factory=lambda: {"alice": "s3cret-pw", "bob": "bobpw"})
    tokens: dict[str, str] = field(default_factory=dict)  # token -> user
    agents: list[b.v1Agent] = field(default_factory=list)
    experiments: dict[int, b.v1Experiment] = field(default_factory=dict)
    trials: dict[int, list[b.trialv1Trial]] = field(default_factory=dict)  # experiment id -> trials
    commands: dict[str, b.v1Command] = field(default_factory=dict)
    tensorboards: dict[str, b.v1Tensorboard] = field(default_factory=dict)  # launched: QUEUED, RUNNING at the next GET
    logs: dict[str, list[b.v1TaskLogsResponse]] = field(default_factory=dict)
    finished_tasks: set[str] = field(default_factory=set)
    metrics: dict[tuple[int, str], list[b.v1MetricsReport]] = field(default_factory=dict)
    checkpoints: dict[int, list[b.v1Checkpoint]] = field(default_factory=dict)
    checkpoint_tars: dict[str, bytes] = field(default_factory=dict)
    allocations: dict[str, b.v1AllocationSummary] = field(default_factory=dict)
    # GET /api/v1/job-queues: each pool's jobs in queue order, (experiment id, slots asked, slots held)
    queues: dict[str, list[tuple[int, int, int]]] = field(default_factory=dict)
    # GET /api/v1/resource-pools: the pools the agents and queues name; this one is the default compute pool
    default_pool: str = "default"
    drop_checkpoint_after: int | None = None  # bytes sent before the connection is cut
    fail_503: int = 0  # answer this many requests with 503
    lose_next_answer: str | None = None  # POST path: do the work, then drop the connection unanswered
    refuse_next: str | None = None  # POST path: answer 400 without doing anything
    requests: list[Request] = field(default_factory=list)
    connections: set = field(default_factory=set)  # (peer host, peer port) of every TCP connection that sent a request
    drop_logs_after: int | None = None  # cut the next task-log stream after this many lines
    next_exp: int = 100
    port: int = 0
    tls: Any = None  # an ssl.SSLContext: serve HTTPS
    # GET /api/v1/master/config: the master's config as the real one answers it (its YAML as JSON);
    # None answers 403, as a real master does to a user without the permission to view it.
    master_config: dict[str, Any] | None = field(default_factory=lambda: dict(MASTER_CONFIG))

    # -- lifecycle ----------------------------------------------------------------------------------
    def start(self) -> FakeMaster:
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            app = web.Application(middlewares=[self._middleware], client_max_size=200 * 1024 * 1024)
            self._routes(app)
            self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
            self._loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self.tls)
            self._loop.run_until_complete(site.start())
            self.port = site._server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="fake-det-master", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        async def down() -> None:
            await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(down(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def call(self, fn, *args) -> Any:
        """Run ``fn`` on the server's loop (to change state a handler may be reading)."""

        async def go():
            return fn(*args)

        return asyncio.run_coroutine_threadsafe(go(), self._loop).result(10)

    # -- state helpers --------------------------------------------------------------------------
    def token_for(self, user: str) -> str:
        token = f"tok-{user}-{uuidlib.uuid4().hex[:8]}"
        self.tokens[token] = user
        return token

    def add_agent(
        self,
        agent_id: str,
        gpus: int,
        pools=("default",),
        busy: dict[int, str] | None = None,
        enabled=True,
        draining=False,
        brand="NVIDIA A100-SXM4-80GB",
    ) -> None:
        slots = {}
        for i in range(gpus):
            container = None
            if busy and i in busy:
                container = b.v1Container(
                    id=busy[i],
                    state=b.containerv1State.RUNNING,
                    devices=[b.v1Device(id=i, brand=brand, type=b.devicev1Type.CUDA)],
                )
            slots[str(i)] = b.v1Slot(
                id=str(i),
                enabled=True,
                draining=False,
                container=container,
                device=b.v1Device(id=i, brand=brand, type=b.devicev1Type.CUDA, uuid=f"GPU-{agent_id}-{i}"),
            )
        stats = b.v1SlotStats(
            typeStats={"cuda": b.v1DeviceStats(disabled=0, draining=0, total=gpus)},
            brandStats={brand: b.v1DeviceStats(disabled=0, draining=0, total=gpus)},
        )
        self.agents.append(
            b.v1Agent(
                id=agent_id,
                slotStats=stats,
                slots=slots,
                resourcePools=list(pools),
                enabled=enabled,
                draining=draining,
                registeredTime=T0,
                version="0.38.1",
            )
        )

    def add_experiment(
        self,
        exp_id: int,
        name: str,
        user: str,
        state="RUNNING",
        ntrials=3,
        metric="validation_loss",
        best: float | None = None,
        slots=2,
        labels=(),
        config: dict | None = None,
    ) -> None:
        config = config or {  # ``config``: as a create posted it (the master keeps it as sent)
            "name": name,
            "searcher": {"name": "random", "metric": metric, "smaller_is_better": True},
            "resources": {"slots_per_trial": slots},
            "entrypoint": "python3 train.py",
            "labels": list(labels),
        }
        trial_ids = [exp_id * 10 + i for i in range(ntrials)]
        self.experiments[exp_id] = b.v1Experiment(
            archived=False,
            config=config,
            id=exp_id,
            jobId=f"job-{exp_id}",
            name=name,
            numTrials=ntrials,
            originalConfig=json.dumps(config),
            projectId=1,
            projectOwnerId=1,
            searcherType="random",
            startTime=T0,
            state=getattr(b.experimentv1State, state),
            username=user,
            progress=0.5,
            bestTrialId=trial_ids[0] if best is not None else None,
            bestTrialSearcherMetric=best,
            labels=list(labels),
            resourcePool="default",
            searcherMetric=metric,
            trialIds=trial_ids,
        )
        self.trials[exp_id] = [
            b.trialv1Trial(
                experimentId=exp_id,
                hparams={"lr": 0.01 * (i + 1), "layers": i + 2},
                id=tid,
                restarts=0,
                startTime=T0,
                state=b.trialv1State.RUNNING if i < 2 else b.trialv1State.COMPLETED,
                totalBatchesProcessed=100 * (i + 1),
                taskId=f"{exp_id}.{tid}",
                searcherMetricValue=0.5 - 0.1 * i,
                bestValidation=b.v1MetricsWorkload(
                    metrics=b.v1Metrics(avgMetrics={metric: 0.4 - 0.1 * i}), numInputs=0, totalBatches=100 * (i + 1)
                ),
                checkpointCount=1,
            )
            for i, tid in enumerate(trial_ids)
        ]

    def queue_experiment(self, exp_id: int, slots: int, pool: str = "default", held: int = 0) -> None:
        """Put the experiment at the end of ``pool``'s queue, asking for ``slots`` (holding ``held``:
        scheduled when it holds them); a queued one's state is QUEUED, as the master says it."""
        self.queues.setdefault(pool, []).append((exp_id, slots, held))
        exp = self.experiments[exp_id]
        exp.resourcePool = pool
        if not held:
            exp.state = b.experimentv1State.QUEUED

    def add_command(
        self,
        task_id: str,
        description: str,
        user: str,
        state="RUNNING",
        container: str | None = None,
        exit_status: str | None = None,
    ) -> b.v1Command:
        cont = (
            b.v1Container(
                id=container, state=b.containerv1State.RUNNING, devices=[b.v1Device(id=0, type=b.devicev1Type.CUDA)]
            )
            if container
            else None
        )
        command = b.v1Command(
            description=description,
            id=task_id,
            jobId=f"job-{task_id[:8]}",
            resourcePool="default",
            startTime=T0,
            state=getattr(b.taskv1State, state),
            username=user,
            workspaceId=1,
            container=cont,
            exitStatus=exit_status,
        )
        self.commands[task_id] = command
        return command

    def add_allocation(self, task_id: str, container: str) -> None:
        alloc = f"{task_id}.alloc"
        self.allocations[alloc] = b.v1AllocationSummary(
            allocationId=alloc,
            taskId=task_id,
            name=task_id,
            resourcePool="default",
            slotsNeeded=1,
            resources=[b.v1ResourcesSummary(allocationId=alloc, containerId=container, resourcesId=container)],
        )

    def add_log(self, task_id: str, text: str, rank: int | None = None) -> None:
        entries = self.logs.setdefault(task_id, [])
        n = len(entries)
        entries.append(
            b.v1TaskLogsResponse(
                id=f"{task_id}-{n}",
                level=b.v1LogLevel.INFO,
                log=text + "\n",
                message=text,
                taskId=task_id,
                timestamp=ts(n),
                rankId=rank,
            )
        )

    def add_metrics(self, trial: int, group: str, steps_values: list[tuple[int, dict[str, float]]]) -> None:
        key = "validation_metrics" if group == "validation" else "avg_metrics"
        self.metrics[(trial, group)] = [
            b.v1MetricsReport(
                archived=False,
                endTime=ts(i),
                group=group,
                id=i,
                metrics={key: values},
                totalBatches=step,
                trialId=trial,
                trialRunId=1,
            )
            for i, (step, values) in enumerate(steps_values)
        ]

    def add_system_metrics(
        self, trial: int, agent: str, cpu: float | None = None, gpus: dict[str, tuple[float, int]] | None = None
    ) -> None:
        """One more report of the trial's system metrics as Determined's profiler sends them (the SDK's
        ``core._profiler``): group ``cpu`` ``{agent: {"cpu_util_simple": percent}}``, group ``gpu``
        ``{agent: {uuid: {"gpu_util": percent, "gpu_free_memory": bytes}}}``; each report ends later."""
        groups: dict[str, dict] = {}
        if cpu is not None:
            groups["cpu"] = {agent: {"cpu_util_simple": cpu}}
        if gpus:
            groups["gpu"] = {
                agent: {u: {"gpu_util": util, "gpu_free_memory": free} for u, (util, free) in gpus.items()}
            }
        for group, values in groups.items():
            reports = self.metrics.setdefault((trial, group), [])
            reports.append(
                b.v1MetricsReport(
                    archived=False,
                    endTime=ts(len(reports)),
                    group=group,
                    id=len(reports),
                    metrics={"avg_metrics": values},
                    totalBatches=0,
                    trialId=trial,
                    trialRunId=1,
                )
            )

    def add_checkpoint(
        self, trial: int, ckpt_uuid: str, files: dict[str, bytes], exp_id: int = 1, steps: int = 200
    ) -> None:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            for name, data in files.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        self.checkpoint_tars[ckpt_uuid] = buf.getvalue()
        self.checkpoints.setdefault(trial, []).append(
            b.v1Checkpoint(
                metadata={"steps_completed": steps},
                resources={name: str(len(d)) for name, d in files.items()},
                state=b.checkpointv1State.COMPLETED,
                uuid=ckpt_uuid,
                reportTime=T0,
                training=b.v1CheckpointTrainingMetadata(
                    trialId=trial,
                    experimentId=exp_id,
                    validationMetrics=b.v1Metrics(avgMetrics={"validation_loss": 0.25}),
                ),
            )
        )

    def mutations(self, include_login: bool = True) -> list[Request]:
        return [
            r
            for r in self.requests
            if r.method in ("POST", "PATCH", "PUT", "DELETE") and (include_login or r.path != "/api/v1/auth/login")
        ]

    # -- HTTP -----------------------------------------------------------------------------------------
    @web.middleware
    async def _middleware(self, request: web.Request, handler):
        body = None
        if request.can_read_body:
            raw = await request.read()
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
        self.requests.append(
            Request(
                request.method,
                request.path,
                {k: request.query.getall(k) for k in request.query},
                body,
                request.headers.get("Authorization", ""),
            )
        )
        if request.transport is not None:
            self.connections.add(request.transport.get_extra_info("peername"))
        if self.fail_503 > 0:
            self.fail_503 -= 1
            return web.json_response({"error": {"error": "service unavailable"}}, status=503)
        if request.method == "POST" and request.path == self.refuse_next:
            self.refuse_next = None
            return web.json_response({"error": {"error": "invalid config: bad resources"}}, status=400)
        if request.path not in ("/api/v1/auth/login", "/api/v1/master"):  # what a real master answers anyone
            token = request.headers.get("Authorization", "").removeprefix("Bearer ")
            if token not in self.tokens:
                return web.json_response({"error": {"error": "invalid credentials"}}, status=401)
            request[USER] = self.tokens[token]
        response = await handler(request)
        if request.method == "POST" and request.path == self.lose_next_answer:
            self.lose_next_answer = None
            request.transport.close()  # the work is done, the answer never arrives
        return response

    def _routes(self, app: web.Application) -> None:
        r = app.router
        r.add_post("/api/v1/auth/login", self._login)
        r.add_get("/api/v1/me", self._me)
        r.add_get("/api/v1/master", self._master_info)
        r.add_get("/api/v1/master/config", self._master_config)
        r.add_get("/api/v1/agents", self._agents)
        r.add_get("/api/v1/experiments", self._experiments)
        r.add_post("/api/v1/experiments", self._create_experiment)
        r.add_get("/api/v1/experiments/{id}", self._experiment)
        r.add_get("/api/v1/experiments/{id}/trials", self._exp_trials)
        r.add_get("/api/v1/experiments/{id}/checkpoints", self._exp_checkpoints)
        r.add_post("/api/v1/experiments/{id}/{verb}", self._exp_action)
        r.add_get("/api/v1/trials/metrics/trial_metrics", self._metrics)
        r.add_get("/api/v1/trials/{id}", self._trial)
        r.add_get("/api/v1/trials/{id}/checkpoints", self._trial_checkpoints)
        r.add_post("/api/v1/trials/{id}/kill", self._trial_kill)
        r.add_get("/api/v1/commands", self._commands)
        r.add_post("/api/v1/commands", self._launch)
        r.add_post("/api/v1/commands/{id}/kill", self._command_kill)
        for kind in ("notebooks", "shells"):
            r.add_get(f"/api/v1/{kind}", self._empty(kind))
        r.add_get("/api/v1/tensorboards", self._tensorboards)
        r.add_post("/api/v1/tensorboards", self._launch_tensorboard)
        r.add_get("/api/v1/tensorboards/{id}", self._tensorboard)
        r.add_post("/api/v1/tensorboards/{id}/kill", self._kill_tensorboard)
        r.add_get("/api/v1/tasks", self._tasks)
        r.add_get("/api/v1/job-queues", self._job_queues)
        r.add_get("/api/v1/resource-pools", self._resource_pools)
        r.add_get("/api/v1/tasks/{id}/logs", self._task_logs)
        r.add_get("/checkpoints/{uuid}", self._checkpoint_tar)

    @staticmethod
    def _json(obj) -> web.Response:
        return web.json_response(obj.to_json(omit_unset=True))

    async def _login(self, request):
        body = b.v1LoginRequest.from_json(await request.json())
        password = self.users.get(body.username)
        if password is None or salt_and_hash(password) != body.password:
            return web.json_response({"error": {"error": "invalid credentials"}}, status=403)
        token = self.token_for(body.username)
        return self._json(
            b.v1LoginResponse(token=token, user=b.v1User(active=True, admin=False, username=body.username))
        )

    async def _master_info(self, request):
        return self._json(
            b.v1GetMasterResponse(
                clusterId="fake",
                clusterName="fake",
                hasCustomLogo=False,
                masterId="fake",
                strictJobQueueControl=False,
                version="0.38.1",
            )
        )

    async def _master_config(self, request):
        if self.master_config is None:
            return web.json_response({"error": {"error": "access denied"}, "code": 7, "message": "denied"}, status=403)
        return self._json(b.v1GetMasterConfigResponse(config=self.master_config))

    async def _me(self, request):
        return self._json(b.v1GetMeResponse(user=b.v1User(active=True, admin=False, username=request[USER])))

    async def _agents(self, request):
        return self._json(b.v1GetAgentsResponse(agents=self.agents))

    async def _experiments(self, request):
        users = request.query.getall("users", [])
        labels = request.query.getall("labels", [])
        exps = [
            e
            for e in sorted(self.experiments.values(), key=lambda e: -e.id)
            if (not users or e.username in users) and all(label in (e.labels or []) for label in labels)
        ]
        return self._json(b.v1GetExperimentsResponse(experiments=exps, pagination=b.v1Pagination(total=len(exps))))

    async def _experiment(self, request):
        exp = self.experiments.get(int(request.match_info["id"]))
        if exp is None:
            raise web.HTTPNotFound()
        return self._json(b.v1GetExperimentResponse(experiment=exp))

    async def _exp_trials(self, request):
        trials = self.trials.get(int(request.match_info["id"]), [])
        return self._json(b.v1GetExperimentTrialsResponse(trials=trials, pagination=b.v1Pagination(total=len(trials))))

    async def _create_experiment(self, request):
        import yaml

        body = b.v1CreateExperimentRequest.from_json(await request.json())
        config = yaml.safe_load(body.config)
        self.next_exp += 1
        exp_id = self.next_exp
        self.add_experiment(
            exp_id,
            config["name"],
            request[USER],
            state="QUEUED",
            ntrials=1,
            labels=config.get("labels") or (),
            config=config,
        )
        return self._json(b.v1CreateExperimentResponse(config=config, experiment=self.experiments[exp_id]))

    async def _exp_action(self, request):
        verb = request.match_info["verb"]
        exp = self.experiments[int(request.match_info["id"])]
        exp.state = {
            "kill": b.experimentv1State.STOPPING_KILLED,
            "pause": b.experimentv1State.PAUSED,
            "activate": b.experimentv1State.ACTIVE,
        }[verb]
        return web.json_response({})

    async def _exp_checkpoints(self, request):
        exp_id = int(request.match_info["id"])
        found = [c for t in self.trials.get(exp_id, []) for c in self.checkpoints.get(t.id, [])]
        return self._json(b.v1GetExperimentCheckpointsResponse(checkpoints=found, pagination=b.v1Pagination()))

    def _find_trial(self, trial_id: int):
        for trials in self.trials.values():
            for trial in trials:
                if trial.id == trial_id:
                    return trial
        raise web.HTTPNotFound(text=json.dumps({"error": {"error": "trial not found"}}))

    async def _trial(self, request):
        return self._json(b.v1GetTrialResponse(trial=self._find_trial(int(request.match_info["id"]))))

    async def _trial_kill(self, request):
        self._find_trial(int(request.match_info["id"])).state = b.trialv1State.STOPPING_KILLED
        return web.json_response({})

    async def _trial_checkpoints(self, request):
        found = self.checkpoints.get(int(request.match_info["id"]), [])
        return self._json(b.v1GetTrialCheckpointsResponse(checkpoints=found, pagination=b.v1Pagination()))

    async def _metrics(self, request):
        group = request.query["group"]
        reports = [m for t in request.query.getall("trialIds") for m in self.metrics.get((int(t), group), [])]
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        await resp.write(
            (json.dumps({"result": b.v1GetMetricsResponse(metrics=reports).to_json(omit_unset=True)}) + "\n").encode()
        )
        await resp.write_eof()
        return resp

    async def _commands(self, request):
        users = request.query.getall("users", [])
        cmds = [c for c in self.commands.values() if not users or c.username in users]
        return self._json(b.v1GetCommandsResponse(commands=cmds))

    async def _launch(self, request):
        body = b.v1LaunchCommandRequest.from_json(await request.json())
        task_id = str(uuidlib.uuid4())
        command = self.add_command(task_id, body.config.get("description", ""), request[USER], state="QUEUED")
        return self._json(b.v1LaunchCommandResponse(command=command, config=body.config))

    async def _command_kill(self, request):
        command = self.commands[request.match_info["id"]]
        command.state = b.taskv1State.TERMINATING
        return self._json(b.v1KillCommandResponse(command=command))

    async def _tensorboards(self, request):
        return self._json(b.v1GetTensorboardsResponse(tensorboards=list(self.tensorboards.values())))

    async def _launch_tensorboard(self, request):
        body = b.v1LaunchTensorboardRequest.from_json(await request.json())
        task_id = str(uuidlib.uuid4())
        board = b.v1Tensorboard(
            description=f"TensorBoard ({task_id[:8]})",
            id=task_id,
            jobId=f"job-{task_id[:8]}",
            resourcePool="default",
            startTime=T0,
            state=b.taskv1State.QUEUED,
            username=request[USER],
            workspaceId=1,
            experimentIds=body.experimentIds,
            trialIds=body.trialIds,
        )
        self.tensorboards[task_id] = board
        config = {"description": board.description}
        return self._json(b.v1LaunchTensorboardResponse(tensorboard=board, config=config))

    async def _tensorboard(self, request):
        board = self.tensorboards[request.match_info["id"]]
        if board.state == b.taskv1State.QUEUED:
            board.state = b.taskv1State.RUNNING
        return self._json(b.v1GetTensorboardResponse(tensorboard=board, config={}))

    async def _kill_tensorboard(self, request):
        board = self.tensorboards[request.match_info["id"]]
        board.state = b.taskv1State.TERMINATING
        return self._json(b.v1KillTensorboardResponse(tensorboard=board))

    def _empty(self, kind):
        response = {
            "notebooks": b.v1GetNotebooksResponse,
            "shells": b.v1GetShellsResponse,
        }[kind]

        async def handler(request):
            return self._json(response(**{kind: []}))

        return handler

    async def _job_queues(self, request):
        """The pool's jobs in queue order: a scheduled one holds its slots; each queued one has the
        queued jobs before it as ``jobsAhead``, as the master's priority scheduler counts them."""
        pool = request.query.get("resourcePool", "")
        jobs = []
        for name, queue in self.queues.items():
            if pool and name != pool:
                continue
            ahead = 0
            for exp_id, slots, held in queue:
                exp = self.experiments[exp_id]
                state = b.jobv1State.SCHEDULED if held else b.jobv1State.QUEUED
                jobs.append(
                    b.v1Job(
                        allocatedSlots=held,
                        entityId=str(exp_id),
                        isPreemptible=True,
                        jobId=f"job-{exp_id}",
                        name=exp.name,
                        requestedSlots=slots,
                        resourcePool=name,
                        submissionTime=T0,
                        type=b.jobv1Type.EXPERIMENT,
                        username=exp.username,
                        workspaceId=1,
                        priority=42,
                        summary=b.v1JobSummary(jobsAhead=ahead, state=state),
                    )
                )
                ahead += 0 if held else 1
        total = len(jobs)
        page = b.v1Pagination(offset=0, limit=total, startIndex=0, endIndex=total, total=total)
        return self._json(b.v1GetJobsResponse(jobs=jobs, pagination=page))

    async def _resource_pools(self, request):
        """Every pool an agent or a queue names (and the default), as a static pool of CUDA slots."""
        names = {self.default_pool, *self.queues}
        names.update(p for agent in self.agents for p in agent.resourcePools or ())
        pools = []
        for name in sorted(names):
            agents = [a for a in self.agents if name in (a.resourcePools or ())]
            slots = [s for a in agents for s in (a.slots or {}).values()]
            pools.append(
                b.v1ResourcePool(
                    **POOL_UNSET,
                    defaultAuxPool=name == self.default_pool,
                    defaultComputePool=name == self.default_pool,
                    name=name,
                    numAgents=len(agents),
                    slotsAvailable=len(slots),
                    slotsUsed=sum(1 for s in slots if s.container is not None),
                )
            )
        return self._json(b.v1GetResourcePoolsResponse(resourcePools=pools))

    async def _tasks(self, request):
        return self._json(b.v1GetTasksResponse(allocationIdToSummary=self.allocations))

    async def _task_logs(self, request):
        task_id = request.match_info["id"]
        follow = request.query.get("follow") == "true"
        after = request.query.get("timestampAfter")
        after_time = parse_protobuf_timestamp(after) if after else None
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        sent = 0
        drop, self.drop_logs_after = self.drop_logs_after, None
        while True:
            entries = self.logs.get(task_id, [])
            while sent < len(entries):
                entry = entries[sent]
                sent += 1
                if after_time is not None and parse_protobuf_timestamp(entry.timestamp) <= after_time:
                    continue
                if drop is not None and drop <= 0:
                    request.transport.close()  # the stream breaks mid-way
                    return resp
                await resp.write((json.dumps({"result": entry.to_json(omit_unset=True)}) + "\n").encode())
                drop = None if drop is None else drop - 1
            if not follow or task_id in self.finished_tasks:
                break
            await asyncio.sleep(0.02)  # a followed log: the server polls for new entries, as the master does
        await resp.write_eof()
        return resp

    async def _checkpoint_tar(self, request):
        data = self.checkpoint_tars.get(request.match_info["uuid"])
        if data is None:
            return web.json_response({"error": {"error": "checkpoint not found"}}, status=404)
        resp = web.StreamResponse(headers={"Content-Type": "application/gzip", "Content-Length": str(len(data))})
        await resp.prepare(request)
        limit = self.drop_checkpoint_after
        if limit is not None:
            await resp.write(data[:limit])
            await asyncio.sleep(0.05)  # the part before the drop reaches the client first
            request.transport.close()  # the connection drops mid-tar
            return resp
        for i in range(0, len(data), 4096):
            await resp.write(data[i : i + 4096])
        await resp.write_eof()
        return resp
