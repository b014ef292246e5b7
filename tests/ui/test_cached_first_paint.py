"""The console's first frame comes from the last run's snapshot, marked ``cached <age>``, and the first
good refresh replaces it; a failed first refresh never makes it look fresh; at exit it is kept again."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace

from fakes.backend import FakeBackend
from uihelpers import screen_text
from waiting import wait_for

from yanflow_tui import snapcache
from yanflow_tui.app import YanflowApp
from yanflow_tui.config import ClusterConfig, Config
from yanflow_tui.errors import BackendError
from yanflow_tui.hub import ClusterSnapshot, Health, Hub
from yanflow_tui.model import JobState
from yanflow_tui.screens.queue import JobTable
from yanflow_tui.screens.widgets.cluster_bar import ClusterBar

CLUSTER = ClusterConfig("hpc", "fake", refresh_seconds=60)


class HeldBackend(FakeBackend):
    """The fake, whose reads wait until the test opens ``gate``."""

    gate: asyncio.Event | None = None

    async def list_jobs(self):
        assert HeldBackend.gate is not None
        await HeldBackend.gate.wait()
        return await super().list_jobs()


class DownBackend(FakeBackend):
    """The fake, whose every read fails."""

    def __init__(self, config):
        super().__init__(config)
        self.fail_reads = BackendError("cluster down")


def cached_file(tmp_path, age: float = 300.0):
    old = FakeBackend(CLUSTER)
    jobs = (old.job("900", "cached-run", JobState.RUNNING),)
    snap = ClusterSnapshot("hpc", "fake", False, Health.OK, "", time.time() - age, jobs, tuple(old.nodes))
    gone = ClusterSnapshot(
        "gone", "fake", False, Health.OK, "", time.time(), (old.job("901", "gone-run", JobState.RUNNING),)
    )
    path = tmp_path / "state" / "snapshot.json"
    snapcache.save(path, [snap, gone], time.time())
    return path


def app_over(path) -> YanflowApp:
    config = Config(clusters=(CLUSTER,))
    return YanflowApp(config, Hub(config), snapshot_file=path)


def rows(app) -> list[str]:
    return app.screen.query_one(JobTable).row_keys


async def test_the_first_frame_shows_the_cached_jobs_marked_and_the_first_refresh_replaces_them(
    register_backend, tmp_path
):
    register_backend(HeldBackend, kind="fake")
    HeldBackend.gate = asyncio.Event()
    app = app_over(cached_file(tmp_path))
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: "hpc/900" in rows(app), what="the cached job on the first frame")
        text = screen_text(app)
        assert "cached 5m" in text and "cached-run" in text
        assert "gone-run" not in text  # a cluster no longer configured is not shown
        assert app.hub.snapshots["hpc"].cached and not HeldBackend.instances[0].calls[1:]
        HeldBackend.gate.set()
        await wait_for(pilot, lambda: "hpc/101" in rows(app), what="the fresh jobs")
        await wait_for(pilot, lambda: "cached" not in screen_text(app), what="the header without cached")
        assert "hpc/900" not in rows(app)
        assert not app.hub.snapshots["hpc"].cached
    kept = json.loads((tmp_path / "state" / "snapshot.json").read_text())
    assert [j["id"] for j in kept["clusters"]["hpc"]["jobs"]] == ["101", "102", "103"]  # kept again at exit


async def test_a_failed_first_refresh_keeps_the_cached_data_marked_never_fresh(register_backend, tmp_path):
    register_backend(DownBackend, kind="fake")
    app = app_over(cached_file(tmp_path))
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: app.hub.snapshots["hpc"].failures >= 1, what="the failed refresh")
        await pilot.pause()
        snap = app.hub.snapshots["hpc"]
        assert snap.cached and snap.health is Health.STALE
        assert "hpc/900" in rows(app)
        assert "cached 5m" in screen_text(app)


async def test_a_corrupt_cache_is_ignored_with_a_note(fake_backend, tmp_path):
    path = tmp_path / "snapshot.json"
    path.write_text("{broken")
    app = app_over(path)
    notes: list[str] = []
    notify = app.notify
    app.notify = lambda message, *args, **kwargs: (notes.append(message), notify(message, *args, **kwargs))[1]
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: "hpc/101" in rows(app), what="the fresh jobs")
        assert [n for n in notes if n.startswith("cached snapshot ignored: not JSON")] and "\n" not in notes[0]
        assert "cached" not in app.query_one(ClusterBar).render().plain


class StrangerBackend(HeldBackend):
    """The held fake, which does not know who we are until it has connected (as Slurm over SSH)."""

    @property
    def current_user(self):
        return "alice" if self.calls[1:] else ""


async def test_mine_in_the_cached_frame_is_the_user_it_was_kept_for_until_the_cluster_says(register_backend, tmp_path):
    register_backend(StrangerBackend, kind="fake")
    HeldBackend.gate = asyncio.Event()
    old = FakeBackend(CLUSTER)
    jobs = (
        old.job("900", "alices-run", JobState.RUNNING),
        replace(old.job("901", "bobs-run", JobState.RUNNING), user="bob"),
    )
    snap = ClusterSnapshot("hpc", "fake", False, Health.OK, "", time.time() - 60, jobs, tuple(old.nodes))
    path = tmp_path / "state" / "snapshot.json"
    snapcache.save(path, [snap], time.time(), {"hpc": "alice"})
    app = app_over(path)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: "hpc/900" in rows(app), what="the cached job on the first frame")
        assert not app.hub.backend("hpc").current_user  # not known yet: the cached frame's own user
        assert "hpc/901" not in rows(app) and "bobs-run" not in screen_text(app)
        HeldBackend.gate.set()
        await wait_for(pilot, lambda: "hpc/101" in rows(app), what="the fresh jobs")
        assert not app.hub.snapshots["hpc"].cached and "hpc/105" not in rows(app)  # bob's fresh job: not mine
