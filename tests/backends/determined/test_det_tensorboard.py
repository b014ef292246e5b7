"""Determined's TensorBoard: ``LaunchTensorboard`` for the experiment (or trial) through the SDK's
bindings against the fake master, then the master's proxy URL; stopping kills the task. It creates a
task on the cluster, so read-only mode refuses it at the one gate, before any request; ``t`` in the
detail does the same, and quitting the console kills the task."""

from __future__ import annotations

import pytest
from dethelpers import cache_token, cluster, make_backend, seed
from textual.widgets import Static
from uihelpers import make_app, refreshed
from waiting import wait_for

from yanflow_tui import tensorboards
from yanflow_tui.errors import ReadOnlyError
from yanflow_tui.screens.detail import JobDetailScreen


@pytest.mark.parametrize(("job_id", "field"), [("exp-1", "experimentIds"), ("trial-1", "trialIds")])
async def test_launch_tensorboard_gives_the_masters_proxy_url_and_stop_kills_the_task(master, job_id, field):
    cache_token(master)
    seed(master)
    backend = make_backend(master)
    boards = tensorboards.TensorBoards()
    try:
        board = await boards.start(f"det/{job_id}", backend, job_id)
        (task_id,) = master.tensorboards
        assert board.url == f"{master.url}/proxy/{task_id}/" and board.process is None
        launch = next(r for r in master.mutations() if r.path == "/api/v1/tensorboards")
        assert launch.body[field] == [1]
        assert master.tensorboards[task_id].state.value == "STATE_RUNNING"  # waited for it to run
        assert (await boards.start(f"det/{job_id}", backend, job_id)) is board  # one per job: no second launch
        assert [r.path for r in master.mutations()].count("/api/v1/tensorboards") == 1
        assert await boards.stop(f"det/{job_id}")
        assert master.mutations()[-1].path == f"/api/v1/tensorboards/{task_id}/kill"
        assert master.tensorboards[task_id].state.value == "STATE_TERMINATING"
    finally:
        await boards.stop_all()
        await backend.close()


async def test_read_only_refuses_a_determined_tensorboard_before_any_request(master):
    cache_token(master)
    seed(master)
    backend = make_backend(master, read_only=True)
    before = len(master.requests)
    boards = tensorboards.TensorBoards()
    try:
        with pytest.raises(ReadOnlyError, match="read-only: tensorboard refused"):
            await boards.start("det/exp-1", backend, "exp-1")
        assert len(master.requests) == before and not master.tensorboards and not boards.open
    finally:
        await backend.close()


@pytest.mark.parametrize("read_only", [True, False])
async def test_t_in_a_determined_jobs_detail_launches_or_is_refused_read_only(master, read_only):
    cache_token(master)
    seed(master)
    app = make_app(cluster(master, read_only=read_only))
    async with app.run_test(size=(160, 60)) as pilot:
        await refreshed(pilot, app)
        job = next(j for j in app.hub.snapshots["det"].jobs if j.id == "exp-12")
        app.push_screen(JobDetailScreen(job))
        section = await wait_for(
            pilot,
            lambda: isinstance(app.screen, JobDetailScreen) and next(iter(app.screen.query("#tensorboard")), None),
        )
        assert isinstance(section, Static)
        before = len(master.requests)
        await pilot.press("t")
        if read_only:
            await wait_for(pilot, lambda: any("tensorboard refused" in n.message for n in app._notifications))
            assert not [r for r in master.requests[before:] if "tensorboard" in r.path]  # nothing sent
            assert not master.tensorboards and app.tensorboards.of(job.key) is None
            return
        board = await wait_for(pilot, lambda: app.tensorboards.of(job.key), what="the launched TensorBoard")
        (task_id,) = master.tensorboards
        assert board.url == f"{master.url}/proxy/{task_id}/"
        await wait_for(pilot, lambda: str(section.content).startswith(board.url), what="the URL in the detail")
    assert master.tensorboards[task_id].state.value == "STATE_TERMINATING"  # quitting killed the task
