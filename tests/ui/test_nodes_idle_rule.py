"""The Nodes grid's ``▣`` follows the idle rule the Queue follows (``idle_gpus``: under the configured
percent for the configured minutes, through the app's ``IdleTracker``), not a single reading: a GPU at
0 % is marked only once the configured time has passed (an injected clock, no sleeping), one at 50 %
never, and the group's idle count and the status line say the same."""

from __future__ import annotations

import pytest
from fakes.backend import FakeBackend
from textual.widgets import Static
from uihelpers import make_app, refreshed
from waiting import ManualClock, wait_for

from yanflow_tui.config import ClusterConfig
from yanflow_tui.idlegpus import IdleRule
from yanflow_tui.model import Gpu, GpuState, JobState, Node
from yanflow_tui.screens.nodes import NodesScreen
from yanflow_tui.screens.widgets.gpugrid import GpuGrid


class IdleBackend(FakeBackend):
    """The fake plus gpu09: GPU 0 held by job 201 at 0 %, GPU 1 by job 202 at 50 %, GPU 2 free at 0 %."""

    kind = "fake-idle-rule"

    def __init__(self, config):
        super().__init__(config)
        self.jobs += [
            self.job("201", "idle-one", JobState.RUNNING, gpus=1, nodes=("gpu09",)),
            self.job("202", "busy-one", JobState.RUNNING, gpus=1, nodes=("gpu09",)),
        ]
        gpus = (
            Gpu(0, GpuState.ALLOCATED, "201", utilization=0.0),
            Gpu(1, GpuState.ALLOCATED, "202", utilization=50.0),
            Gpu(2, GpuState.FREE, None, utilization=0.0),
        )
        self.nodes.append(Node(config.name, "gpu09", "mixed", ("gpu",), 32, 2, 256000, 0, "H100", 3, 2, gpus))


@pytest.fixture
def kinds(register_backend):
    register_backend(IdleBackend)


async def test_the_grids_idle_mark_follows_the_idle_rules_duration(home, kinds):
    app = make_app(ClusterConfig("hpc", IdleBackend.kind, refresh_seconds=60))
    app.idle.rule = IdleRule(below=5, seconds=600)  # the default: under 5 % for 10 minutes
    clock = app.idle.clock = ManualClock()
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.press("2")
        grid = await wait_for(
            pilot, lambda: isinstance(app.screen, NodesScreen) and app.screen.query_one(GpuGrid), what="nodes"
        )
        await wait_for(pilot, lambda: "hpc/gpu09" in grid.row_keys(), what="gpu09 in the grid")
        await refreshed(pilot, app, "hpc")
        # Under 5 % now, but not for 10 minutes: no mark, no idle count (the old rule marked it at once).
        assert "▣" not in grid.row_text("hpc/gpu09") and grid.group("hpc").summary.idle == 0
        clock.now += 599
        await refreshed(pilot, app, "hpc")
        assert "▣" not in grid.row_text("hpc/gpu09") and grid.group("hpc").summary.idle == 0
        clock.now += 1
        await refreshed(pilot, app, "hpc")
        await wait_for(pilot, lambda: "▣" in grid.row_text("hpc/gpu09"), what="the 0 % GPU marked")
        assert "▣  0 ■ 50 □  0" in grid.row_text("hpc/gpu09")  # the 50 % one is not; a free one never
        assert grid.group("hpc").summary.idle == 1 and grid.is_idle("hpc/gpu09", 0)
        assert grid.select_key("hpc/gpu09", 0)
        await pilot.pause()
        status = lambda: str(app.screen.query_one("#node-status", Static).render())  # noqa: E731
        await wait_for(pilot, lambda: "IDLE" in status(), what="the status line")
        assert "under 5% for 10 minutes: notified" in status()
        for _ in range(3):  # the 50 % GPU never, however long
            clock.now += 3600
            await refreshed(pilot, app, "hpc")
            assert not grid.is_idle("hpc/gpu09", 1) and "■ 50" in grid.row_text("hpc/gpu09")
        assert grid.select_key("hpc/gpu09", 1)
        await pilot.pause()
        await wait_for(pilot, lambda: "GPU 1" in status(), what="the 50 % GPU's status")
        assert "IDLE" not in status()
