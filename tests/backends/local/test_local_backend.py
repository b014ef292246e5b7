"""The local backend end to end: real child processes, process groups, restarts, fake NVML."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest
from jobhelpers import live, run_cli
from launchstubs import make_launchers
from paths import SAMPLES
from waiting import async_wait_until, wait_until

from yanflow_tui.backends.local import backend as local
from yanflow_tui.backends.local import procs
from yanflow_tui.backends.local.backend import LocalBackend
from yanflow_tui.backends.local.store import LocalStore
from yanflow_tui.config import ClusterConfig
from yanflow_tui.errors import BackendError
from yanflow_tui.model import GpuState, JobState
from yanflow_tui.spec import load_spec, spec_from_data


@pytest.fixture(autouse=True)
def nvml(fake_nvml):
    """Every test here sees the fake NVML (no driver unless a test says otherwise), never the real one."""
    return fake_nvml


@pytest.fixture
async def make(state):
    made: list[LocalBackend] = []

    def factory() -> LocalBackend:
        backend = LocalBackend(ClusterConfig("local", "local"), state_dir=state)
        made.append(backend)
        return backend

    yield factory
    for backend in made:
        await backend.close()


def spec(command, name: str = "t", gpus: int = 0, **extra):
    return spec_from_data({"name": name, "command": command, "resources": {"gpus": gpus}, **extra})


async def lines(backend: LocalBackend, job_id: str, follow: bool = False, timeout: float = 20) -> list[str]:
    async def collect():
        return [line.text async for line in backend.stream_logs(job_id, follow=follow)]

    return await asyncio.wait_for(collect(), timeout)


async def wait_for_log(backend: LocalBackend, job_id: str, text: str) -> list[str]:
    async def has():
        got = await lines(backend, job_id)
        return got if any(text in line for line in got) else None

    return await async_wait_until(has, what=f"{text!r} in the log of job {job_id}")


async def wait_for_state(backend: LocalBackend, job_id: str, *states: JobState):
    async def reached():
        job = await backend.get_job(job_id)
        return job if job.state in states else None

    return await async_wait_until(reached, what=f"job {job_id} to reach {states}")


def gate_file(tmp_path: Path, name: str = "GO") -> Path:
    return tmp_path / name


def waits_for(path: Path) -> str:
    return f"while [ ! -e '{path}' ]; do sleep 0.05; done"


def child_pids(log: list[str]) -> list[int]:
    return [int(line.split("=", 1)[1]) for line in log if line.startswith("child=")]


# -- running ----------------------------------------------------------------------------------------


async def test_sample_job_completes_with_all_its_output(make):
    backend = make()
    job_id = await backend.submit(load_spec(SAMPLES / "local-shell.yaml"))
    assert job_id.isdigit()
    output = await lines(backend, job_id, follow=True)
    job = await backend.get_job(job_id)
    assert job.state is JobState.COMPLETED
    assert job.exit_code == 0
    assert job.name == "local-shell-demo"
    assert output[0].startswith(f"job {job_id} starting on ")
    assert [line for line in output if line.startswith("step ")] == [f"step {i}/20" for i in range(1, 21)]
    assert output[-1] == "done"
    assert job.start_time is not None and job.end_time is not None and job.end_time >= job.start_time
    assert job.nodes == (backend.hostname,)


async def test_a_rank_that_dies_at_once_keeps_its_traceback_in_the_log(make, tmp_path):
    """Three ranks on this machine under the stub torchrun: rank 1 prints a traceback and exits 1 at
    once. Every rank writes the job's log file itself (no relay to lose it), so the log holds it all."""
    bin_dir = make_launchers(tmp_path / "bin")
    (tmp_path / "train.py").write_text(
        "import os, time\nrank = int(os.environ['RANK'])\nprint(f'hello from rank {rank}', flush=True)\n"
        "if rank == 1:\n    raise RuntimeError('rank 1 failed')\ntime.sleep(0.5)\n"
    )
    command = (
        "torchrun --nnodes=1 --node_rank=0 --nproc_per_node=3 --master_addr=127.0.0.1 --master_port=29500 train.py"
    )
    backend = make()
    job_id = await backend.submit(
        spec(command, workdir=str(tmp_path), env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    )
    output = await lines(backend, job_id, follow=True)
    job = await wait_for_state(backend, job_id, JobState.FAILED)
    assert job.exit_code == 1
    assert {f"hello from rank {r}" for r in range(3)} <= set(output)
    assert "Traceback (most recent call last):" in output and output.count("RuntimeError: rank 1 failed") == 1


async def test_failed_and_killed_jobs(make):
    backend = make()
    failed = await backend.submit(spec("echo before; exit 3"))
    killed = await backend.submit(spec("kill -KILL $$"))
    job = await wait_for_state(backend, failed, JobState.FAILED)
    assert job.exit_code == 3
    assert job.reason == "exit code 3"
    job = await wait_for_state(backend, killed, JobState.FAILED)
    assert job.exit_code == -9
    assert job.reason == "killed by SIGKILL"


async def test_argv_command_is_not_run_by_a_shell(make, tmp_path):
    backend = make()
    job_id = await backend.submit(spec(["printf", "%s|", "a b", "$(touch NOPE)", ";"]))
    await wait_for_state(backend, job_id, JobState.COMPLETED)
    assert await lines(backend, job_id) == ["a b|$(touch NOPE)|;|"]
    assert not list(tmp_path.rglob("NOPE"))


async def test_workdir_and_env(make, tmp_path):
    workdir = tmp_path / "work dir"
    workdir.mkdir()
    backend = make()
    job_id = await backend.submit(
        spec('pwd; echo "FOO=$FOO"; echo "ID=$YANFLOW_JOB_ID"', workdir=str(workdir), env={"FOO": "b a r"})
    )
    await wait_for_state(backend, job_id, JobState.COMPLETED)
    assert await lines(backend, job_id) == [str(workdir), "FOO=b a r", f"ID={job_id}"]


async def test_last_line_without_newline_is_kept(make):
    backend = make()
    job_id = await backend.submit(spec("printf 'a\\nb'"))
    assert await lines(backend, job_id, follow=True) == ["a", "b"]


async def test_list_jobs_newest_first_and_describe(make):
    backend = make()
    first = await backend.submit(spec("true", name="first"))
    second = await backend.submit(spec("true", name="second"))
    await wait_for_state(backend, second, JobState.COMPLETED)
    await wait_for_state(backend, first, JobState.COMPLETED)
    jobs = await backend.list_jobs()
    assert [j.id for j in jobs] == [second, first]
    assert {j.user for j in jobs} == {local.current_user()}
    text = await backend.describe(first)
    assert "Name:" in text and "first" in text and "completed" in text and "Exit code: 0" in text


@pytest.mark.parametrize("bad_id", ["999", "abc", "", "-1", "1.0", "²", "٣", "99999999999999999999999"])
async def test_unknown_job_is_a_backend_error(make, bad_id):
    backend = make()
    for call in (backend.get_job(bad_id), backend.cancel(bad_id), lines(backend, bad_id)):
        with pytest.raises(BackendError, match="no job"):
            await call


# -- cancel -----------------------------------------------------------------------------------------


async def test_cancel_kills_the_whole_process_group(make):
    backend = make()
    job_id = await backend.submit(spec("sleep 300 & echo child=$!; sleep 300 & echo child=$!; echo started; wait"))
    log = await wait_for_log(backend, job_id, "started")
    children = child_pids(log)
    assert len(children) == 2
    pgid = backend.store.get(int(job_id)).pid
    members = procs.group_members(pgid)
    assert pgid in members and set(children) <= set(members)

    await asyncio.wait_for(backend.cancel(job_id), 15)

    assert procs.group_members(pgid) == []
    assert [pid for pid in children + [pgid] if live(pid)] == []
    job = await backend.get_job(job_id)
    assert job.state is JobState.CANCELLED
    assert job.reason == "cancelled by user"
    assert job.end_time is not None


async def test_cancel_escalates_to_sigkill(make, monkeypatch):
    monkeypatch.setattr(local, "CANCEL_GRACE_SECONDS", 0.5)
    backend = make()
    job_id = await backend.submit(spec("trap '' TERM; sleep 300 & echo child=$!; echo started; wait"))
    log = await wait_for_log(backend, job_id, "started")
    children = child_pids(log)
    pgid = backend.store.get(int(job_id)).pid

    start = time.monotonic()
    await asyncio.wait_for(backend.cancel(job_id), 15)
    assert time.monotonic() - start >= 0.5  # SIGTERM was ignored: the grace period ran out

    assert procs.group_members(pgid) == []
    assert not any(live(pid) for pid in children)
    # The state is final as soon as cancel returns: cancel itself settled it (no later refresh needed).
    assert backend.store.get(int(job_id)).state == "cancelled"
    assert (await backend.get_job(job_id)).state is JobState.CANCELLED
    assert await lines(backend, job_id, follow=True, timeout=10) == log


async def test_cancel_a_finished_job_is_refused_and_keeps_its_state(make, tmp_path):
    backend = make()
    job_id = await backend.submit(spec("true"))
    await wait_for_state(backend, job_id, JobState.COMPLETED)
    with pytest.raises(BackendError, match="already completed"):
        await backend.cancel(job_id)
    assert (await backend.get_job(job_id)).state is JobState.COMPLETED


async def test_cancel_a_job_that_ended_unnoticed_keeps_its_real_outcome(make, state):
    """The job ends while no backend looks; a later cancel must not relabel it "cancelled"."""
    first = make()
    job_id = await first.submit(spec("exit 0"))
    await first.close()
    wait_until(lambda: (state / "jobs" / job_id / "exit").exists(), what="the exit file")
    assert LocalStore(state / "local.db").get(int(job_id)).state == "running"  # nobody settled it yet

    second = make()
    with pytest.raises(BackendError, match="already completed"):
        await second.cancel(job_id)
    job = await second.get_job(job_id)
    assert job.state is JobState.COMPLETED and job.exit_code == 0


# -- restart ----------------------------------------------------------------------------------------


async def test_running_job_survives_a_backend_restart(make, tmp_path):
    go = gate_file(tmp_path)
    first = make()
    job_id = await first.submit(spec(f"echo hello; {waits_for(go)}; echo bye"))
    await wait_for_log(first, job_id, "hello")
    await first.close()

    second = make()
    job = {j.id: j for j in await second.list_jobs()}[job_id]
    assert job.state is JobState.RUNNING
    assert await lines(second, job_id) == ["hello"]

    go.touch()
    job = await wait_for_state(second, job_id, JobState.COMPLETED)
    assert job.exit_code == 0
    assert await lines(second, job_id) == ["hello", "bye"]


async def test_cancel_from_a_new_backend(make):
    first = make()
    job_id = await first.submit(spec("sleep 300 & echo child=$!; echo started; wait"))
    log = await wait_for_log(first, job_id, "started")
    pgid = first.store.get(int(job_id)).pid
    await first.close()

    second = make()
    assert (await second.get_job(job_id)).state is JobState.RUNNING
    await asyncio.wait_for(second.cancel(job_id), 15)
    assert procs.group_members(pgid) == []
    assert not any(live(pid) for pid in child_pids(log))
    assert (await second.get_job(job_id)).state is JobState.CANCELLED


@pytest.mark.parametrize("code, expected", [(0, JobState.COMPLETED), (3, JobState.FAILED)])
async def test_job_that_ended_while_no_backend_was_open(make, state, tmp_path, code, expected):
    go = gate_file(tmp_path)
    first = make()
    job_id = await first.submit(spec(f"{waits_for(go)}; exit {code}"))
    await first.close()

    go.touch()
    exit_file = state / "jobs" / job_id / "exit"
    wait_until(exit_file.exists, what="the runner's exit file")
    assert exit_file.read_text().strip() == str(code)

    second = make()
    job = await second.get_job(job_id)
    assert job.state is expected
    assert job.exit_code == code
    assert job.end_time is not None


async def test_jobs_across_processes(state, tmp_path):
    spec_file = tmp_path / "job.yaml"
    go = gate_file(tmp_path)
    spec_file.write_text(
        json.dumps({"name": "from-cli", "command": f"echo first-line; {waits_for(go)}; echo last-line"})
    )

    submitted = run_cli("submit", str(spec_file))
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    assert job_id.isdigit()

    def listed():
        result = run_cli("jobs", "--json")
        assert result.returncode == 0, result.stderr
        return {j["id"]: j for j in json.loads(result.stdout)["jobs"]}.get(job_id)

    job = listed()
    assert job["name"] == "from-cli"
    assert job["state"] == "running"

    wait_until(lambda: "first-line" in run_cli("logs", job_id).stdout, what="first-line in `logs`")
    go.touch()
    followed = run_cli("logs", "--follow", job_id)
    assert followed.returncode == 0, followed.stderr
    assert followed.stdout.splitlines() == ["first-line", "last-line"]
    job = listed()
    assert job["state"] == "completed"
    assert job["exit_code"] == 0


# -- GPUs through the fake NVML ---------------------------------------------------------------------


def gpu(**fields):
    return {"name": "NVIDIA A100-SXM4-80GB", "util": 0, "mem_used": 0, "mem_total": 81920, **fields}


FOREIGN_PID = 4194000


async def test_gpu_picking_skips_busy_gpus(make, nvml, tmp_path):
    nvml.set(
        devices=[
            gpu(util=11),
            gpu(util=99, mem_used=70000, pids=[FOREIGN_PID]),
            gpu(util=22),
            gpu(util=37, mem_used=1024, mem_total=40960),
        ]
    )
    go = gate_file(tmp_path)
    backend = make()
    job_id = await backend.submit(spec(f'echo "CVD=$CUDA_VISIBLE_DEVICES"; {waits_for(go)}', gpus=2))
    assert await wait_for_log(backend, job_id, "CVD=") == ["CVD=0,2"]
    job = await backend.get_job(job_id)
    assert job.gpu_indices == (0, 2)
    assert job.gpus == 2

    (node,) = await backend.list_nodes()
    assert node.gpus_total == 4
    assert node.gpu_type == "NVIDIA A100-SXM4-80GB"
    assert node.reason == ""
    by_index = {g.index: g for g in node.gpus}
    assert [g.index for g in node.gpus] == [0, 1, 2, 3]
    assert (by_index[0].state, by_index[0].job_id) == (GpuState.ALLOCATED, job_id)
    assert (by_index[2].state, by_index[2].job_id) == (GpuState.ALLOCATED, job_id)
    assert by_index[1].state is GpuState.UNAVAILABLE and by_index[1].job_id is None
    assert str(FOREIGN_PID) in by_index[1].reason
    assert (by_index[3].state, by_index[3].job_id) == (GpuState.FREE, None)
    assert (by_index[3].utilization, by_index[3].memory_used_mb, by_index[3].memory_total_mb) == (37.0, 1024, 40960)
    assert (by_index[1].utilization, by_index[1].memory_used_mb) == (99.0, 70000)
    assert by_index[0].uuid == "GPU-fake-0"
    assert node.gpus_allocated == 3 and node.gpus_free == 1

    go.touch()
    await wait_for_state(backend, job_id, JobState.COMPLETED)
    (node,) = await backend.list_nodes()
    assert [g.state for g in node.gpus] == [GpuState.FREE, GpuState.UNAVAILABLE, GpuState.FREE, GpuState.FREE]


async def test_utilisation_is_read_live(make, nvml):
    nvml.set(devices=[gpu(util=5)])
    backend = make()
    assert (await backend.list_nodes())[0].gpus[0].utilization == 5.0
    nvml.set(devices=[gpu(util=80, mem_used=2048)])
    g = (await backend.list_nodes())[0].gpus[0]
    assert (g.utilization, g.memory_used_mb) == (80.0, 2048)


async def test_unsupported_utilisation_is_unknown_not_an_error(make, nvml):
    nvml.set(devices=[gpu(util=None)])
    (node,) = await make().list_nodes()
    assert node.gpus_total == 1
    assert node.gpus[0].utilization is None
    assert node.gpus[0].memory_total_mb == 81920


async def test_more_gpus_than_the_machine_has_is_refused(make, nvml):
    nvml.set(devices=[gpu(), gpu()])
    backend = make()
    with pytest.raises(BackendError, match=r"asks for 3 GPU\(s\) but this machine has 2"):
        await backend.submit(spec("true", gpus=3))
    assert await backend.list_jobs() == []


async def test_job_waits_for_gpus_then_starts(make, nvml, tmp_path):
    nvml.set(devices=[gpu(), gpu()])
    go = gate_file(tmp_path)
    backend = make()
    holder = await backend.submit(spec(f"echo holding; {waits_for(go)}", gpus=2))
    await wait_for_log(backend, holder, "holding")
    waiter = await backend.submit(spec('echo "CVD=$CUDA_VISIBLE_DEVICES"', gpus=1))

    job = await backend.get_job(waiter)
    assert job.state is JobState.PENDING
    assert "waiting for 1 GPU(s)" in job.reason
    assert job.nodes == ()
    # A job without GPUs is not held up behind it.
    cpu_only = await backend.submit(spec('echo "CVD=[$CUDA_VISIBLE_DEVICES]"'))
    await wait_for_state(backend, cpu_only, JobState.COMPLETED)
    assert await lines(backend, cpu_only) == ["CVD=[]"]  # GPUs are hidden from a job that asked for none
    assert (await backend.get_job(waiter)).state is JobState.PENDING

    go.touch()
    await wait_for_state(backend, holder, JobState.COMPLETED)
    job = await wait_for_state(backend, waiter, JobState.COMPLETED)
    assert job.exit_code == 0
    assert await lines(backend, waiter) in (["CVD=0"], ["CVD=1"])


async def test_waiting_job_starts_without_any_console(make, nvml, tmp_path):
    """The background scheduler starts a pending job after the backend that submitted it is closed."""
    nvml.set(devices=[gpu()])
    go = gate_file(tmp_path)
    first = make()
    holder = await first.submit(spec(waits_for(go), gpus=1))
    waiter = await first.submit(spec('echo "CVD=$CUDA_VISIBLE_DEVICES"', gpus=1))
    assert (await first.get_job(waiter)).state is JobState.PENDING
    await first.close()

    go.touch()
    exit_file = first.jobs_dir / waiter / "exit"
    wait_until(exit_file.exists, what="the waiting job to run and end with no backend open")
    second = make()
    assert (await second.get_job(holder)).state is JobState.COMPLETED
    assert (await second.get_job(waiter)).state is JobState.COMPLETED
    assert await lines(second, waiter) == ["CVD=0"]


async def test_cancel_a_pending_job(make, nvml, tmp_path):
    nvml.set(devices=[gpu()])
    go = gate_file(tmp_path)
    backend = make()
    holder = await backend.submit(spec(waits_for(go), gpus=1))
    waiter = await backend.submit(spec("echo ran", gpus=1))
    await backend.cancel(waiter)
    job = await backend.get_job(waiter)
    assert job.state is JobState.CANCELLED
    assert job.reason == "cancelled before start"
    go.touch()
    await wait_for_state(backend, holder, JobState.COMPLETED)
    assert (await backend.get_job(waiter)).state is JobState.CANCELLED
    assert await lines(backend, waiter) == []


async def test_no_driver_gives_a_node_without_gpus(make, nvml):
    nvml.set(driver=False)
    backend = make()
    (node,) = await backend.list_nodes()
    assert node.gpus_total == 0
    assert node.gpus == ()
    assert node.gpu_type is None
    assert "NVML" in node.reason
    assert "\n" not in node.reason
    assert node.state == "up"
    with pytest.raises(BackendError, match="NVML"):
        await backend.submit(spec("true", gpus=1))
    job_id = await backend.submit(spec("echo ok"))
    await wait_for_state(backend, job_id, JobState.COMPLETED)


async def test_no_gpu_at_all(make, nvml):
    nvml.set(driver=True, devices=[])
    (node,) = await make().list_nodes()
    assert node.gpus_total == 0 and node.gpus == ()


# -- hostile input ----------------------------------------------------------------------------------

HOSTILE = "evil[0];rm -rf ~ $(touch PWNED) `touch PWNED2` [red]x[/red] 'q\"uote \\ back"


@pytest.mark.parametrize("name", [HOSTILE, "-" + HOSTILE + " ¬ ünï ☃"], ids=["plain", "dash-unicode"])
async def test_hostile_job_name(make, home, tmp_path, monkeypatch, name):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    workdir = tmp_path / "workdir"
    workdir.mkdir()
    spec_file = tmp_path / "hostile.yaml"
    spec_file.write_text(json.dumps({"name": name, "command": "echo hi", "workdir": str(workdir)}))

    submitted = run_cli("submit", str(spec_file))
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    backend = make()
    job = await wait_for_state(backend, job_id, JobState.COMPLETED)
    assert job.name == name
    assert await lines(backend, job_id) == ["hi"]

    listed = json.loads(run_cli("jobs", "--json").stdout)["jobs"]
    assert [j["name"] for j in listed] == [name]

    table = run_cli("jobs")
    assert table.returncode == 0, table.stderr
    assert "\x1b" not in table.stdout + table.stderr
    assert len(table.stdout.splitlines()) == 2  # header and one row
    assert name in table.stdout  # markup and shell text kept as written

    def pwned() -> list[Path]:
        found = [path for where in (tmp_path, home, cwd, workdir, Path.cwd()) for path in where.rglob("PWNED*")]
        return found + list(Path(os.path.expanduser("~")).glob("PWNED*"))

    assert await asyncio.to_thread(pwned) == []


# -- spec checks ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"image": "pytorch:2.4"}, "cannot run the image 'pytorch:2.4': neither podman nor docker is installed"),
        ({"mounts": ["/data:/data"]}, "mounts '/data' only into a container"),
        ({"resources": {"cpus": 100000}}, "asks for 100000 CPUs"),
        ({"workdir": "/no/such/dir/anywhere"}, "workdir '/no/such/dir/anywhere' is not a directory"),
        ({"kind": "slurm"}, "cannot run slurm jobs; it runs: single"),
    ],
)
async def test_specs_the_local_backend_cannot_run(make, extra, message, monkeypatch, tmp_path):
    if "image" in extra:
        monkeypatch.setenv("PATH", str(tmp_path))  # no container runtime on PATH
    backend = make()
    bad = spec_from_data({"name": "x", "command": "true", **extra})
    with pytest.raises(BackendError) as info:
        await backend.submit(bad)
    assert message in str(info.value)
    if "workdir" in extra:
        assert "cd /no/such/dir/anywhere" in backend.render(bad)  # a dry run touches no filesystem
    else:
        with pytest.raises(BackendError):
            backend.render(bad)
    assert await backend.list_jobs() == []


def test_render_shows_the_native_form(state):
    backend = LocalBackend(ClusterConfig("local", "local"), state_dir=state)
    try:
        text = backend.render(
            spec_from_data(
                {"name": "r", "command": "python train.py --lr 0.1", "env": {"A": "1"}, "resources": {"gpus": 2}}
            )
        )
    finally:
        backend.store.close()
    assert text.splitlines()[0] == f"# local job on {backend.hostname}: 2 GPU(s)"
    assert text.splitlines()[1] == f"cd {Path.home()}"
    assert "/bin/sh -c 'python train.py --lr 0.1'" in text
    assert "A=1" in text and "CUDA_VISIBLE_DEVICES=" in text
    assert backend.store.path.exists() and LocalStore(backend.store.path).all() == []


def test_nvml_init_failure_is_retried_later(fake_nvml, monkeypatch):
    from yanflow_tui.backends.local import nvml

    fake_nvml.set(driver=False)
    probe = nvml.NvmlProbe()
    assert probe.read() is None and "NVML" in probe.reason
    fake_nvml.gpus(2)
    assert probe.read() is None  # not retried at once
    monkeypatch.setattr(nvml, "RETRY_SECONDS", 0.0)
    assert [g.index for g in probe.read()] == [0, 1]
    assert probe.reason == ""


async def test_a_workdir_removed_before_start_fails_the_job(home, fake_nvml, tmp_path):

    from yanflow_tui.backends.local.backend import LocalBackend
    from yanflow_tui.config import ClusterConfig
    from yanflow_tui.model import JobKind, JobSpec, Resources

    fake_nvml.gpus(1)
    backend = LocalBackend(ClusterConfig("local", "local"), state_dir=tmp_path / "state")
    try:
        holder = await backend.submit(JobSpec("holder", JobKind.SINGLE, "sleep 30", resources=Resources(gpus=1)))
        workdir = tmp_path / "wd"
        workdir.mkdir()
        waiting = await backend.submit(
            JobSpec("w", JobKind.SINGLE, "pwd", workdir=str(workdir), resources=Resources(gpus=1))
        )
        assert (await backend.get_job(waiting)).state.value == "pending"
        workdir.rmdir()
        await backend.cancel(holder)
        job = await backend.get_job(waiting)
        assert job.state.value == "failed"
        assert "is not a directory" in job.reason
    finally:
        await backend.close()


async def test_state_files_are_private(home, fake_nvml, tmp_path):
    import stat

    from yanflow_tui.backends.local.backend import LocalBackend
    from yanflow_tui.config import ClusterConfig
    from yanflow_tui.model import JobKind, JobSpec

    state = tmp_path / "state"
    backend = LocalBackend(ClusterConfig("local", "local"), state_dir=state)
    try:
        job_id = await backend.submit(JobSpec("p", JobKind.SINGLE, "echo secret"))

        async def finished():
            return (state / "jobs" / job_id / "exit").exists()

        await async_wait_until(finished, timeout=15)
    finally:
        await backend.close()
    mode = lambda p: stat.S_IMODE(p.stat().st_mode)  # noqa: E731
    assert mode(state) == 0o700 and mode(state / "jobs") == 0o700 and mode(state / "jobs" / job_id) == 0o700
    for path in (state / "local.db", state / "jobs" / job_id / "output.log", state / "jobs" / job_id / "exit"):
        assert mode(path) == 0o600, path


async def test_cancel_reaches_the_group_even_after_its_runner_died(home, fake_nvml, tmp_path):
    import signal

    from yanflow_tui.backends.local.backend import LocalBackend
    from yanflow_tui.config import ClusterConfig
    from yanflow_tui.model import JobKind, JobSpec

    backend = LocalBackend(ClusterConfig("local", "local"), state_dir=tmp_path / "state")
    try:
        job_id = await backend.submit(JobSpec("orphans", JobKind.SINGLE, "sleep 300 & sleep 300 & wait"))
        row = backend.store.get(int(job_id))

        async def started():
            return len(procs.group_members(row.pid)) >= 4  # runner, sh, two sleeps

        await async_wait_until(started, timeout=10)
        os.kill(row.pid, signal.SIGKILL)  # the runner dies (say, the OOM killer); its children live on

        async def runner_gone():
            return row.pid not in procs.group_members(row.pid)

        await async_wait_until(runner_gone, timeout=10)
        assert procs.leaderless_group(row.pid)
        await backend.cancel(job_id)
        assert procs.group_members(row.pid) == []
        assert (await backend.get_job(job_id)).state is JobState.CANCELLED
    finally:
        await backend.close()


async def test_describe_shows_fields_log_path_and_spec(home, fake_nvml, tmp_path):
    from yanflow_tui.backends.local.backend import LocalBackend
    from yanflow_tui.config import ClusterConfig
    from yanflow_tui.model import JobKind, JobSpec

    backend = LocalBackend(ClusterConfig("local", "local"), state_dir=tmp_path / "state")
    try:
        job_id = await backend.submit(JobSpec("desc", JobKind.SINGLE, "echo a\necho b", env={"K": "v"}))
        text = await backend.describe(job_id)
    finally:
        await backend.close()
    assert "Name:      desc" in text
    assert "Command:   echo a\n           echo b" in text
    assert f"Log:       {tmp_path / 'state' / 'jobs' / job_id / 'output.log'}" in text
    assert "Spec:\n  name: desc\n  kind: single\n  env:\n    K: v" in text


@pytest.mark.parametrize("name", ["red \x1b[31m", "two\nlines", "bell\x07"], ids=["escape", "newline", "bell"])
def test_a_job_name_with_control_characters_is_refused_with_its_line(home, tmp_path, name):
    spec_file = tmp_path / "hostile.yaml"
    spec_file.write_text(json.dumps({"name": name, "command": "echo hi"}))
    submitted = run_cli("submit", str(spec_file))
    assert submitted.returncode == 1 and submitted.stdout == ""
    assert f"{spec_file}:1: name:" in submitted.stderr and "\x1b" not in submitted.stderr


async def test_explain_says_which_gpus_are_busy_and_with_what(make, nvml, tmp_path):
    nvml.set(devices=[gpu(), gpu(pids=[FOREIGN_PID]), gpu()])
    go = gate_file(tmp_path)
    backend = make()
    holder = await backend.submit(spec(f"echo holding; {waits_for(go)}", name="holder", gpus=2))
    await wait_for_log(backend, holder, "holding")
    waiter = await backend.submit(spec("true", name="waiter", gpus=1))
    later = await backend.submit(spec("true", name="later", gpus=1))

    found = await backend.explain(waiter)
    assert found.category.value == "resources" and found.state == "PENDING"
    assert "It waits for 1 GPU(s): 0 of 3 free" in found.reason
    assert f"GPU 0 runs job {holder} (holder)" in found.reason and f"GPU 2 runs job {holder} (holder)" in found.reason
    assert f"GPU 1 is used outside yanflow by PID {FOREIGN_PID}" in found.reason
    assert found.short == "waits for 1 GPU(s), 0 free"
    assert (await backend.explain(later)).short == "waits for 1 GPU(s), 0 free, 1 ahead"
    assert (await backend.explain(holder)).category.value == "running"
    go.touch()
    await wait_for_state(backend, holder, JobState.COMPLETED)
