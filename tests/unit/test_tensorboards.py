"""The TensorBoard manager's bookkeeping, over a stand-in backend whose cluster starts the TensorBoard
(no server here): one per job, a start whose caller is cancelled still lands (it is stopped at exit,
never leaked), and stopping everything also stops a start still under way."""

from __future__ import annotations

import asyncio

import pytest
from waiting import async_wait_until

from yanflow_tui.backends.base import Capabilities, TensorBoardTask
from yanflow_tui.backends.tbserver import TensorBoardNotThere, remote_command
from yanflow_tui.errors import BackendError
from yanflow_tui.tensorboards import TensorBoards


class ClusterBoards:
    capabilities = Capabilities(tensorboard=True)
    name = "stand-in"

    def __init__(self) -> None:
        self.go = asyncio.Event()
        self.launched: list[str] = []
        self.stopped: list[str] = []

    async def tensorboard(self, job_id: str) -> TensorBoardTask:
        await self.go.wait()
        self.launched.append(job_id)

        async def stop() -> None:
            self.stopped.append(job_id)

        return TensorBoardTask(f"http://master/proxy/{job_id}/", "a task", stop)


async def test_a_start_whose_caller_is_cancelled_is_kept_and_stopped_at_exit():
    backend, boards = ClusterBoards(), TensorBoards()
    first = asyncio.create_task(boards.start("c/1", backend, "1"))
    second = asyncio.create_task(boards.start("c/1", backend, "1"))  # while it starts: the same start
    await async_wait_until(lambda: "c/1" in boards._starting)
    first.cancel()
    backend.go.set()
    board = await second
    assert backend.launched == ["1"] and boards.open == {"c/1": board}
    assert (await boards.start("c/1", backend, "1")) is board
    await boards.stop_all()
    assert backend.stopped == ["1"] and not boards.open


async def test_stop_all_stops_a_start_under_way():
    backend, boards = ClusterBoards(), TensorBoards()
    waiting = asyncio.create_task(boards.start("c/2", backend, "2"))
    await async_wait_until(lambda: "c/2" in boards._starting)
    await boards.stop_all()
    assert not boards._starting and not boards.open and backend.launched == []
    (outcome,) = await asyncio.wait_for(asyncio.gather(waiting, return_exceptions=True), 5)
    assert isinstance(outcome, asyncio.CancelledError)  # its caller hears it was stopped


class NoServerThere(ClusterBoards):
    async def tensorboard(self, job_id: str) -> TensorBoardTask:
        raise TensorBoardNotThere("the login node has no tensorboard")


async def test_a_cluster_without_tensorboard_and_no_event_files_to_mirror_says_so():
    with pytest.raises(TensorBoardNotThere, match="has no tensorboard"):
        await TensorBoards().start("c/3", NoServerThere(), "3")


def test_the_remote_command_is_a_list_of_words_from_the_cluster_config():
    assert remote_command(None, "c") == ("tensorboard",)
    assert remote_command({"command": ["/opt/py/bin/python", "-m", "tensorboard.main"]}, "c")[-1] == "tensorboard.main"
    assert remote_command({"command": "tensorboard --samples_per_plugin 'scalars=0'"}, "c") == (
        "tensorboard",
        "--samples_per_plugin",
        "scalars=0",
    )
    for wrong in ({"command": []}, {"command": [1]}, ["tensorboard"], {"cmd": "x"}):
        with pytest.raises(BackendError, match="tensorboard: expected"):
            remote_command(wrong, "c")
