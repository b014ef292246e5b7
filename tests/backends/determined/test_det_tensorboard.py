"""Determined's TensorBoard: ``LaunchTensorboard`` for the experiment (or trial) through the SDK's
bindings against the fake master, then the master's proxy URL; stopping kills the task. It creates a
task on the cluster, so read-only mode refuses it at the one gate, before any request."""

from __future__ import annotations

import pytest
from dethelpers import cache_token, make_backend, seed

from yanflow_tui import tensorboards
from yanflow_tui.errors import ReadOnlyError


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
