"""Local jobs in containers, for real, with podman: an image built from a busybox rootfs, a read-only
bind mount, reclamation (``--rm``), cancel, and a console restart that finds the container again."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import time

import pytest
from waiting import async_wait_until

from yanflow_tui import formfields as ff
from yanflow_tui.backends.local import containers, procs
from yanflow_tui.backends.local.backend import LocalBackend
from yanflow_tui.config import ClusterConfig
from yanflow_tui.errors import BackendError
from yanflow_tui.model import JobKind, JobState
from yanflow_tui.spec import spec_from_data


@pytest.fixture(autouse=True)
def nvml(fake_nvml):
    return fake_nvml


@pytest.fixture
async def make(state, podman):
    made: list[LocalBackend] = []

    def factory() -> LocalBackend:
        config = ClusterConfig("local", "local", options={"container": {"runtime": "podman", "conf": str(podman.conf)}})
        backend = LocalBackend(config, state_dir=state)
        made.append(backend)
        return backend

    yield factory
    last = factory()  # never leave a container behind a failed test
    for job in await last.list_jobs():
        if not job.state.terminal:
            await last.cancel(job.id)
    for backend in made:
        if backend is not last and backend.store.path.exists():
            with contextlib.suppress(sqlite3.ProgrammingError):  # closed by the test (a restart)
                await backend.close()
    await last.close()


def prefix(backend: LocalBackend) -> str:
    return containers.container_name(backend.state_dir, backend.hostname, 0)[:-1]


async def log_of(backend: LocalBackend, job_id: str) -> list[str]:
    return [line.text async for line in backend.stream_logs(job_id)]


async def wait_for_state(backend: LocalBackend, job_id: str, *states: JobState):
    async def reached():
        job = await backend.get_job(job_id)
        return job if job.state in states else None

    return await async_wait_until(reached, timeout=60, what=f"job {job_id} to reach {states}")


async def test_image_job_reads_a_read_only_mount_cannot_write_it_and_is_reclaimed(make, podman, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "hello.txt").write_text("from the host mount\n")
    backend = make()
    spec = spec_from_data(
        {
            "name": "ro",
            "image": podman.image,
            "workdir": "/data",
            "env": {"GREETING": "hi there"},
            "mounts": [{"source": str(data), "target": "/data", "read_only": True}],
            "command": 'cat hello.txt; echo "pwd=$(pwd) greeting=$GREETING"; touch /data/new || echo WRITE-FAILED',
        }
    )
    job_id = await backend.submit(spec)
    job = await wait_for_state(backend, job_id, JobState.COMPLETED, JobState.FAILED)
    log = await log_of(backend, job_id)
    assert job.state is JobState.COMPLETED, log
    assert "from the host mount" in log
    assert "pwd=/data greeting=hi there" in log
    assert any("Read-only file system" in line for line in log), log
    assert "WRITE-FAILED" in log
    assert not (data / "new").exists()
    assert podman.containers(prefix(backend)) == []  # reclaimed: --rm
    assert "Container: " in await backend.describe(job_id)


async def test_cancel_stops_a_running_container_within_ten_seconds(make, podman):
    backend = make()
    job_id = await backend.submit(spec_from_data({"name": "c", "image": podman.image, "command": "echo up; sleep 600"}))
    await async_wait_until(lambda: _has(backend, job_id, "up"), timeout=60, what="the container to start")
    name = containers.container_name(backend.state_dir, backend.hostname, int(job_id))
    assert podman.containers(name) == [name]
    started = time.monotonic()
    await backend.cancel(job_id)
    job = await wait_for_state(backend, job_id, JobState.CANCELLED)
    assert time.monotonic() - started < 10
    assert job.state is JobState.CANCELLED
    assert podman.containers(prefix(backend)) == []


SLOW_START = """#!/bin/sh
# podman, except that `run` creates the container and then hangs before starting it (a slow start).
if [ "$1" = run ]; then
    shift
    [ "$1" = --rm ] && shift
    {podman} create "$@" >/dev/null && echo created && exec sleep 600
fi
exec {podman} "$@"
"""


async def test_a_cancel_before_the_container_started_leaves_none_behind(state, podman, tmp_path, monkeypatch):
    """A cancel that comes while the container is created but not started (the client killed then)
    must not leave it behind: --rm applies only to a container that ran."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "podman").write_text(SLOW_START.format(podman=podman.path))
    (bin_dir / "podman").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    config = ClusterConfig("local", "local", options={"container": {"runtime": "podman", "conf": str(podman.conf)}})
    backend = LocalBackend(config, state_dir=state)
    try:
        job_id = await backend.submit(spec_from_data({"name": "slow", "image": podman.image, "command": "sleep 600"}))
        await async_wait_until(lambda: _has(backend, job_id, "created"), timeout=60, what="the container to be created")
        name = containers.container_name(backend.state_dir, backend.hostname, int(job_id))
        assert podman.containers(name) == [name]
        await backend.cancel(job_id)
        await wait_for_state(backend, job_id, JobState.CANCELLED)
        assert podman.containers(prefix(backend)) == []
    finally:
        await backend.close()


async def test_a_restarted_console_still_shows_the_container_job_and_cancels_it(make, podman):
    first = make()
    job_id = await first.submit(spec_from_data({"name": "r", "image": podman.image, "command": "echo up; sleep 600"}))
    await async_wait_until(lambda: _has(first, job_id, "up"), timeout=60, what="the container to start")
    await first.close()
    second = make()  # a new console over the same state dir
    job = await second.get_job(job_id)
    assert job.state is JobState.RUNNING
    assert job.image == podman.image  # the detail shows the image it runs in
    started = time.monotonic()
    await second.cancel(job_id)
    await wait_for_state(second, job_id, JobState.CANCELLED)
    assert time.monotonic() - started < 10
    assert podman.containers(prefix(second)) == []


async def test_a_container_whose_supervisor_was_killed_is_found_by_name_and_cancelled(make, podman):
    first = make()
    job_id = await first.submit(spec_from_data({"name": "k", "image": podman.image, "command": "echo up; sleep 600"}))
    await async_wait_until(lambda: _has(first, job_id, "up"), timeout=60, what="the container to start")
    row = first.store.get(int(job_id))
    assert row is not None and row.pid
    procs.signal_group(row.pid, signal.SIGKILL)  # the supervisor and the podman client, not the container
    await first.close()
    await async_wait_until(lambda: not procs.group_members(row.pid), what="the job's process group to go")
    name = containers.container_name(first.state_dir, first.hostname, int(job_id))
    assert podman.containers(name) == [name]  # conmon keeps it running
    second = make()
    assert (await second.get_job(job_id)).state is JobState.RUNNING  # found by name (inspect)
    await second.cancel(job_id)
    assert (await wait_for_state(second, job_id, JobState.CANCELLED)).state is JobState.CANCELLED
    assert podman.containers(prefix(second)) == []


def test_the_form_offers_image_and_mounts_where_the_config_names_a_runtime(make, state):
    assert ff.IMAGE in make().form_fields(JobKind.SINGLE)
    plain = LocalBackend(ClusterConfig("local", "local"), state_dir=state)
    try:
        assert ff.IMAGE not in plain.form_fields(JobKind.SINGLE)  # found on PATH only: specs may use it
    finally:
        plain.store.close()


async def _has(backend: LocalBackend, job_id: str, text: str) -> bool:
    return text in await log_of(backend, job_id)


def test_run_argv_passes_gpus_mounts_and_env_as_words(tmp_path):
    spec = {
        "image": "img:1",
        "command": ["python", "train.py", "--lr", "0.1; rm -rf /"],
        "workdir": "/work",
        "mounts": [{"source": "/d", "target": "/data", "read_only": True}, {"source": "/o", "target": "/out"}],
    }
    podman = containers.Runtime("podman", "/usr/bin/podman", "/etc/c.conf", ("--network", "none"))
    argv = containers.run_argv(podman, "yanflow-x-1", spec, {"A": "1 2"}, [2, 5])
    assert argv[:5] == ["/usr/bin/podman", "run", "--rm", "--name", "yanflow-x-1"]
    assert ["--mount", "type=bind,source=/d,target=/data,readonly"] == argv[5:7]
    assert ["--mount", "type=bind,source=/o,target=/out"] == argv[7:9]
    assert ["--workdir", "/work", "--env", "A=1 2"] == argv[9:13]
    assert ["--device", "nvidia.com/gpu=2", "--device", "nvidia.com/gpu=5"] == argv[13:17]  # CDI names
    assert argv[17:] == ["--network", "none", "img:1", "python", "train.py", "--lr", "0.1; rm -rf /"]
    docker = containers.Runtime("docker", "/usr/bin/docker")
    assert ["--gpus", '"device=2,5"'] == containers.run_argv(docker, "n", spec, {}, [2, 5])[11:13]


def test_no_runtime_is_a_clear_message(tmp_path, monkeypatch, state):
    monkeypatch.setenv("PATH", str(tmp_path))
    backend = LocalBackend(ClusterConfig("local", "local"), state_dir=state)
    try:
        with pytest.raises(BackendError, match="neither podman nor docker is installed"):
            backend.check_spec(spec_from_data({"name": "x", "image": "img:1", "command": "true"}))
    finally:
        backend.store.close()
    with pytest.raises(BackendError, match="container.runtime must be podman or docker"):
        LocalBackend(ClusterConfig("local", "local", options={"container": {"runtime": "lxc"}}), state_dir=state)
    for bad, message in [
        ({"runtime": "podman", "image": "x"}, "container.image is not known"),
        ({"args": "--network none"}, "container.args must be a list of strings"),
        ("podman", "container must be a mapping"),
    ]:
        with pytest.raises(BackendError, match=message):
            containers.configured({"container": bad}, "local")


def test_render_shows_the_container_command(make, podman):
    backend = make()
    text = backend.render(spec_from_data({"name": "x", "image": podman.image, "command": "echo hi"}))
    assert f"export CONTAINERS_CONF={podman.conf}" in text
    assert f"run --rm --name yanflow-JOB {podman.image} /bin/sh -c 'echo hi'" in text


async def test_container_config_travels_with_the_job(make, podman):
    """The background scheduler builds its backend from no config at all: the job's own record says
    which runtime and containers.conf run it."""
    backend = make()
    job_id = await backend.submit(spec_from_data({"name": "s", "image": podman.image, "command": "echo hi"}))
    plain = LocalBackend(ClusterConfig("local", "local"), state_dir=backend.state_dir)
    try:
        runtime = await asyncio.to_thread(plain._job_runtime, int(job_id))
    finally:
        plain.store.close()
    assert runtime is not None and runtime.conf == str(podman.conf)
