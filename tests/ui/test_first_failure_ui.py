"""The first failure at the top of a failed job's detail, and its one key (``detail-first-failure``)
that opens the failing rank's log at the exception line: over the fake backend with ranked logs (four
ranks: the real cause on rank 2, NCCL timeouts on the others)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fakes.backend import FakeActionsBackend
from textual.widgets import Static
from uihelpers import make_app
from waiting import wait_for

from yanflow_tui.config import ClusterConfig
from yanflow_tui.model import JobState
from yanflow_tui.screens.detail import JobDetailScreen
from yanflow_tui.screens.logs.screen import LogsScreen

NCCL = (
    "[E1206 12:10:0{r}.000000 811 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600042 milliseconds"
)


def ranked_logs() -> list[tuple[str, str]]:
    lines = [(f"rank {r}", f"2026-12-06 12:00:0{r} step 1 from rank {r}") for r in range(4)]
    lines += [(f"rank {r}", NCCL.format(r=r)) for r in (0, 1, 3)]
    lines += [
        ("rank 2", "2026-12-06 12:00:05 loading shard 7"),
        ("rank 2", "Traceback (most recent call last):"),
        ("rank 2", '  File "train.py", line 31, in <module>'),
        ("rank 2", "ValueError: shard 7 is corrupt"),
    ]
    return lines


def block(screen) -> str:
    return "".join(str(w.render()) for w in screen.query("#first-failure").results(Static))


@pytest.fixture
def actions_kind(register_backend):
    return register_backend(FakeActionsBackend)


async def test_the_detail_names_the_first_failure_and_its_key_jumps_to_the_line(actions_kind):
    app = make_app(ClusterConfig("hpc", "fake-actions", refresh_seconds=3600))
    async with app.run_test(size=(140, 50)) as pilot:
        backend = app.hub.backend("hpc")
        failed = replace(backend.job("106", "ddp-train", JobState.FAILED, gpus=4), nodes=("g1", "g2", "g3", "g4"))
        backend.jobs.append(failed)
        backend.ranked_logs["106"] = ranked_logs()
        app.request_refresh("hpc")
        await wait_for(pilot, lambda: app.hub.find_job("hpc", "106"), what="job 106")
        app.push_screen(JobDetailScreen(app.hub.find_job("hpc", "106")))
        detail = await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen, what="detail")
        await wait_for(pilot, lambda: "First failure: rank 2" in block(detail), what="the answer")
        text = block(detail)
        assert "at 2026-12-06 12:00:05 UTC" in text and "ValueError: shard 7 is corrupt" in text
        assert "3 more failed as consequences (an NCCL timeout: ranks 0, 1, 3)" in text
        assert detail.first_failure is not None and detail.first_failure.first.line == 4
        await pilot.press("j")
        logs = await wait_for(pilot, lambda: isinstance(app.screen, LogsScreen) and app.screen, what="logs")
        pane = await wait_for(
            pilot, lambda: logs.pane is not None and logs.pane.jump_to is None and logs.pane, what="jump"
        )
        assert pane.shown_source == "rank 2"
        view = pane.active_view
        assert view.current_line == 4 and view.store.get(4) == "ValueError: shard 7 is corrupt"
        assert not view.following


async def test_no_block_and_no_key_for_a_job_that_did_not_fail(actions_kind):
    app = make_app(ClusterConfig("hpc", "fake-actions", refresh_seconds=3600))
    async with app.run_test(size=(140, 50)) as pilot:
        await wait_for(pilot, lambda: app.hub.find_job("hpc", "101"), what="job 101")
        app.push_screen(JobDetailScreen(app.hub.find_job("hpc", "101")))
        detail = await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen, what="detail")
        await wait_for(pilot, lambda: detail.query("#first-failure"), what="composed")
        assert not detail.query_one("#first-failure").display
        assert detail.check_action("first_failure", ()) is False
