"""The unified console over several clusters at once: one slow or broken cluster never delays
another's rows, and each cluster shows its own health in the header.

These tests read the screen as text, so they hold whatever widget draws the queue."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from fakes.backend import FakeBackend
from uihelpers import make_app, screen_text
from waiting import wait_for

from yanflow_tui.config import ClusterConfig
from yanflow_tui.errors import BackendUnavailable
from yanflow_tui.hub import Health
from yanflow_tui.model import JobState


class SlowBackend(FakeBackend):
    """A cluster whose job list hangs until the test releases it."""

    kind = "fake-slow"

    def __init__(self, config):
        super().__init__(config)
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        for i, job in enumerate(self.jobs):
            self.jobs[i] = replace(job, name=f"slow-{job.name}")

    async def list_jobs(self):
        self.started.set()
        await self.release.wait()
        return await super().list_jobs()


class BrokenBackend(FakeBackend):
    kind = "fake-broken"

    def __init__(self, config):
        super().__init__(config)
        self.fail_reads = BackendUnavailable("connection refused by login node")


@pytest.fixture
def kinds(register_backend, home):
    for backend in (FakeBackend, SlowBackend, BrokenBackend):
        register_backend(backend)


def clusters():
    return (
        ClusterConfig("fast", "fake", refresh_seconds=3600),
        ClusterConfig("slow", "fake-slow", refresh_seconds=3600),
        ClusterConfig("broken", "fake-broken", refresh_seconds=3600),
    )


async def test_a_slow_or_broken_cluster_does_not_delay_another_clusters_rows(kinds):
    app = make_app(*clusters())
    async with app.run_test(size=(200, 40)) as pilot:
        fast, slow = app.hub.backend("fast"), app.hub.backend("slow")
        await wait_for(pilot, lambda: "train-resnet" in screen_text(app), what="the fast cluster's rows")
        # The slow cluster's first list is still in flight: it has been asked, and has not answered.
        assert slow.started.is_set() and not slow.release.is_set()
        assert app.hub.snapshots["slow"].health is Health.CONNECTING
        await wait_for(pilot, lambda: app.hub.snapshots["broken"].health is Health.ERROR, what="broken marked")
        text = screen_text(app)
        assert "slow-train-resnet" not in text
        assert "connecting" in text and "connection refused by login node" in text

        # A later change on the fast cluster shows while the slow one still hangs.
        fast.jobs.append(replace(fast.jobs[0], id="150", name="fresh-job", state=JobState.PENDING))
        app.request_refresh("fast")
        await wait_for(pilot, lambda: "fresh-job" in screen_text(app), what="the fast cluster's new row")
        assert not slow.release.is_set() and "slow-train-resnet" not in screen_text(app)

        slow.release.set()
        await wait_for(pilot, lambda: "slow-train-resnet" in screen_text(app), what="the slow cluster's rows")
        text = screen_text(app)
        assert "fresh-job" in text and "train-resnet" in text
        assert app.hub.snapshots["broken"].health is Health.ERROR  # still failing, still contained


async def test_a_cluster_that_goes_away_keeps_its_rows_marked_stale(kinds):
    app = make_app(
        ClusterConfig("fast", "fake", refresh_seconds=3600), ClusterConfig("other", "fake", refresh_seconds=3600)
    )
    async with app.run_test(size=(200, 40)) as pilot:
        await wait_for(pilot, lambda: all(s.health is Health.OK for s in app.hub.snapshots.values()), what="both up")
        other = app.hub.backend("other")
        other.fail_reads = TimeoutError()
        app.request_refresh("other")
        await wait_for(pilot, lambda: app.hub.snapshots["other"].health is Health.STALE, what="other stale")
        await wait_for(pilot, lambda: "other stale" in screen_text(app), what="the header: one short state a cluster")
        assert app.hub.snapshots["other"].jobs  # the last good rows are kept, not dropped
        assert app.hub.snapshots["fast"].health is Health.OK
        await pilot.press("5")  # the whole error: on the Clusters screen
        await wait_for(pilot, lambda: "timed out" in screen_text(app), what="the error in full")
