"""A real TensorBoard for a real local job, started as ``t`` and ``yanflow-tui tensorboard`` start it:
the ``tensorboard`` server runs over the job's log directory on 127.0.0.1; its scalars API lists the
job's tags and values as TensorBoard's own loader reads them, values the job appends show up while it
runs, and stopping it leaves no process behind. Read-only mode does not refuse it (it creates nothing
on a cluster)."""

from __future__ import annotations

import asyncio
import re
import stat
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest
from tbhelpers import (
    api_points,
    ctrl_c,
    loader_points,
    secret_prefix,
    tensorboard_cli,
    write_script,
    writer_command,
)
from textual.widgets import Static
from uihelpers import make_app, refreshed
from waiting import async_wait_until, wait_for

from yanflow_tui import tensorboards
from yanflow_tui.backends.local.backend import LocalBackend
from yanflow_tui.config import ClusterConfig
from yanflow_tui.screens.detail import JobDetailScreen
from yanflow_tui.spec import spec_from_data

FIRST, SECOND = 10, 7


def fetch(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return answer.status, answer.read()


@pytest.fixture(autouse=True)
def nvml(fake_nvml):
    return fake_nvml


@pytest.mark.parametrize("read_only", [False, True])
async def test_a_local_jobs_tensorboard_serves_its_scalars_and_stops(home, tmp_path, read_only):
    backend = LocalBackend(ClusterConfig("local", "local"))
    command = writer_command(write_script(tmp_path), "runs", FIRST, tmp_path / "go", SECOND)
    spec = spec_from_data(
        {"name": "tb-writer", "command": command, "workdir": str(tmp_path), "tensorboard": {"logdir": "runs"}}
    )
    job_id = await backend.submit(spec)
    runs = tmp_path / "runs"

    def first_part():
        return len((loader_points(runs) if runs.is_dir() else {}).get("loss", [])) == FIRST

    await async_wait_until(first_part, what="the job's first part flushed")
    backend.gate.read_only = read_only  # a TensorBoard over files the console reads stays allowed
    boards = tensorboards.TensorBoards()
    try:
        board = await boards.start("local/" + job_id, backend, job_id)
        assert board.url.startswith("http://127.0.0.1:") and board.mirror is None  # the log directory itself
        assert str(runs) in board.what
        status, page = await asyncio.to_thread(fetch, board.url)
        assert status == 200 and b"TensorBoard" in page
        assert (await boards.start("local/" + job_id, backend, job_id)) is board  # one per job
        await async_wait_until(lambda: api_points(board.url) == loader_points(runs), what="the API's first part")
        assert {"loss", "accuracy", "lr", "eval/accuracy"} <= set(api_points(board.url))

        (tmp_path / "go").touch()
        await async_wait_until(
            lambda: len(api_points(board.url).get("loss", [])) == FIRST + SECOND, what="the appended values"
        )
        assert api_points(board.url) == loader_points(runs)
        died = board.process
        assert died is not None
        died.kill()  # a server that died: the next start replaces it
        await died.wait()
        again = await boards.start("local/" + job_id, backend, job_id)
        assert again is not board and again.pid != board.pid and boards.open == {"local/" + job_id: again}
        await async_wait_until(lambda: api_points(again.url) == loader_points(runs), what="the new server's API")
        process = psutil.Process(again.pid)
        family = [process, *process.children(recursive=True)]
    finally:
        await boards.stop_all()
        await backend.close()
    assert not boards.open
    gone, alive = psutil.wait_procs(family, timeout=10)
    assert not alive and not psutil.pid_exists(family[0].pid)


async def test_t_in_the_detail_shows_the_url_a_second_t_shows_it_again_and_quitting_stops_it(home, tmp_path):
    backend = LocalBackend(ClusterConfig("local", "local"))
    command = writer_command(write_script(tmp_path), "runs", FIRST, tmp_path / "go", 0)
    spec = spec_from_data(
        {"name": "tb-writer", "command": command, "workdir": str(tmp_path), "tensorboard": {"logdir": "runs"}}
    )
    job_id = await backend.submit(spec)
    runs = tmp_path / "runs"
    await async_wait_until(
        lambda: len((loader_points(runs) if runs.is_dir() else {}).get("loss", [])) == FIRST, what="the event files"
    )
    await backend.close()
    app = make_app(ClusterConfig("local", "local"), read_only=True)  # the console's own TensorBoard stays allowed
    async with app.run_test(size=(130, 80)) as pilot:
        await refreshed(pilot, app)
        job = next(j for j in app.hub.snapshots["local"].jobs if j.id == job_id)
        app.push_screen(JobDetailScreen(job))
        section = await wait_for(
            pilot,
            lambda: isinstance(app.screen, JobDetailScreen) and next(iter(app.screen.query("#tensorboard")), None),
        )
        assert isinstance(section, Static)
        await wait_for(pilot, lambda: str(section.content) == "none (t: start one)")
        await pilot.press("t")
        board = await wait_for(pilot, lambda: app.tensorboards.of(job.key), what="the TensorBoard", timeout=60)
        await wait_for(pilot, lambda: str(section.content).startswith(board.url), what="the URL in the detail")
        # the notification says it too (a toast wraps a URL this long over lines: its message is read)
        await wait_for(pilot, lambda: any(board.url in n.message for n in app._notifications), what="the URL told")
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/[\w-]{20,}/", board.url)  # its secret path prefix
        assert api_points(board.url).keys() >= {"loss", "accuracy"}
        await pilot.press("t")  # a second t: the same one, the URL again
        await wait_for(pilot, lambda: sum(board.url in n.message for n in app._notifications) >= 2)
        assert app.tensorboards.open == {job.key: board}
        process = psutil.Process(board.pid)
    gone, alive = psutil.wait_procs([process], timeout=10)
    assert not alive and not psutil.pid_exists(process.pid)  # quitting the console stopped it


async def writer_job_done(tmp_path) -> tuple[str, Path]:
    """A local job that wrote its first part of event files (and whose backend is closed): its id and runs."""
    backend = LocalBackend(ClusterConfig("local", "local"))
    command = writer_command(write_script(tmp_path), "runs", FIRST, tmp_path / "go", 0)
    spec = spec_from_data(
        {"name": "tb-writer", "command": command, "workdir": str(tmp_path), "tensorboard": {"logdir": "runs"}}
    )
    job_id = await backend.submit(spec)
    runs = tmp_path / "runs"
    await async_wait_until(
        lambda: len((loader_points(runs) if runs.is_dir() else {}).get("loss", [])) == FIRST, what="the event files"
    )
    await backend.close()
    return job_id, runs


async def test_the_cli_prints_the_url_and_ctrl_c_stops_the_tensorboard(home, tmp_path):
    job_id, runs = await writer_job_done(tmp_path)
    async with tensorboard_cli(job_id, "--cluster", "local") as (cli, line):
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/[\w-]{20,}/", line), line
        assert (await asyncio.to_thread(fetch, line))[0] == 200
        await async_wait_until(lambda: api_points(line) == loader_points(runs), what="the API's scalars")
        servers = psutil.Process(cli.pid).children(recursive=True)
        assert any(tensorboards.WRAPPER in p.cmdline() for p in servers)
        assert await ctrl_c(cli, 30) in (0, 130)
    gone, alive = psutil.wait_procs(servers, timeout=10)
    assert not alive  # Ctrl-C stopped the TensorBoard it started


def board_files() -> tuple[int, list[tuple[str, int, str]]]:
    """The TensorBoards' folder's mode, and (suffix, mode, text) of each file in it."""
    folder = Path(tensorboards.boards_dir())
    files = [(f.suffix, stat.S_IMODE(f.stat().st_mode), f.read_text()) for f in sorted(folder.iterdir())]
    return stat.S_IMODE(folder.stat().st_mode), files


async def test_a_tensorboard_is_private_to_its_user_and_ends_with_a_console_killed_with_sigkill(home, tmp_path):
    """The console (``yanflow-tui tensorboard``, a real process) is killed with SIGKILL: its TensorBoard
    ends within a bounded wait (its stdin, the console's pipe, reached its end). While it ran, a request
    without its secret path prefix got no curves, the prefix was in no process's argv, and its log and
    pid file were 0600 in a 0700 folder."""
    job_id, runs = await writer_job_done(tmp_path)
    async with tensorboard_cli(job_id, "--cluster", "local") as (cli, url):
        await async_wait_until(lambda: api_points(url) == loader_points(runs), what="the API's scalars")
        _, prefix = await asyncio.to_thread(secret_prefix, url)
        servers = [p for p in psutil.Process(cli.pid).children(recursive=True) if tensorboards.WRAPPER in p.cmdline()]
        assert len(servers) == 1
        folder_mode, files = board_files()
        assert folder_mode == 0o700
        assert {suffix for suffix, _, _ in files} == {".log", ".pid"}
        assert all(mode == 0o600 for _, mode, _ in files)
        assert not any(prefix in text for _, _, text in files)
        cli.kill()  # SIGKILL: no handler, no cleanup
        await cli.wait()
    gone, alive = psutil.wait_procs(servers, timeout=15)
    assert not alive  # it ended with its console
    assert tensorboards.sweep() == []  # nothing left to sweep; the files of the gone server are dropped
    assert board_files()[1] == []
