"""The job detail's training curves over a fake backend that serves a directory of real event files
(written by TensorBoard's own writer): the plot and stats, the keys that choose the tag, the x axis and
the smoothing, the section hidden where the backend reads no event files, and a missing tensorboard
package said plainly in its place."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest
from fakes.backend import FakeBackend
from tbhelpers import write_script, writer_command
from textual.widgets import Static
from uihelpers import make_app
from waiting import wait_for

from yanflow_tui.backends.local.tbfiles import list_event_files, read_range
from yanflow_tui.config import ClusterConfig
from yanflow_tui.curves import EventListing
from yanflow_tui.installs import extra_command
from yanflow_tui.screens.detail import JobDetailScreen
from yanflow_tui.screens.widgets.curves import CurvesView

LOGDIR: list[str] = []  # the directory the fake serves (set by the fixture)


class FakeCurvesBackend(FakeBackend):
    kind = "fake-curves"
    capabilities = replace(FakeBackend.capabilities, event_files=True)

    async def event_files(self, job_id):
        return EventListing(LOGDIR[0], tuple(list_event_files(LOGDIR[0])))

    async def read_event_bytes(self, job_id, path, offset, limit):
        return read_range(LOGDIR[0], path, offset, limit)


@pytest.fixture
def served(tmp_path, register_backend):
    logdir = tmp_path / "tb"
    subprocess.run(writer_command(write_script(tmp_path), str(logdir), 25, tmp_path / "go", 0), check=True, timeout=120)
    LOGDIR[:] = [str(logdir)]
    register_backend(FakeCurvesBackend)
    return logdir


async def open_detail(pilot, app, job_id: str = "101") -> JobDetailScreen:
    job = await wait_for(pilot, lambda: app.hub.find_job("hpc", job_id), what=f"job {job_id}")
    app.push_screen(JobDetailScreen(job))
    return await wait_for(
        pilot,
        lambda: isinstance(app.screen, JobDetailScreen) and app.screen.query("#curves") and app.screen,
        what="the detail, composed",
    )


def curves_text(detail) -> str:
    return "".join(str(w.render()) for w in detail.query("#curves").results(Static))


async def test_curves_plot_with_stats_and_keys_choose_tag_axis_and_smoothing(served):
    app = make_app(ClusterConfig("hpc", "fake-curves", refresh_seconds=3600))
    async with app.run_test(size=(140, 70)) as pilot:
        detail = await open_detail(pilot, app)
        await wait_for(pilot, lambda: "(25 points)" in curves_text(detail), what="the curves")
        text = curves_text(detail)
        assert "x: step   smoothing: 0.6   all tags (4 in all)" in text
        assert "loss" in text and "eval/accuracy" in text and "max 2  last" in text
        view = detail.query_one(CurvesView)
        assert view.curves.tags == ["eval/accuracy", "loss", "accuracy", "lr"]  # files in path order
        await pilot.press("c")
        await wait_for(pilot, lambda: "tag 1 of 4" in curves_text(detail), what="one tag")
        await pilot.press("c", "c", "c")
        await wait_for(pilot, lambda: "tag 4 of 4" in curves_text(detail), what="the last tag")
        await pilot.press("c")
        await wait_for(pilot, lambda: "all tags" in curves_text(detail), what="all tags again")
        await pilot.press("w")
        await wait_for(pilot, lambda: "x: wall time" in curves_text(detail), what="wall time")
        for weight in ("0.9", "0.99", "0", "0.6"):
            await pilot.press("m")
            await wait_for(pilot, lambda w=weight: f"smoothing: {w}   " in curves_text(detail), what=weight)
        assert detail.check_action("curves_tag", ()) is True


async def test_no_curves_section_where_the_backend_reads_no_event_files(fake_backend):
    app = make_app(ClusterConfig("hpc", "fake", refresh_seconds=3600))
    async with app.run_test(size=(140, 50)) as pilot:
        detail = await open_detail(pilot, app)
        await wait_for(
            pilot, lambda: not detail.query_one("#download").display, what="on_mount done (it hides #download)"
        )
        assert not detail.query_one("#curves").display and not detail.query_one("#curves-heading").display
        assert detail.check_action("curves_tag", ()) is False
        await pilot.press("c")  # refused by check_action: nothing happens, nothing breaks
        assert isinstance(app.screen, JobDetailScreen)


async def test_without_tensorboard_the_detail_says_how_to_install_it(served, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboard.backend.event_processing.event_file_loader", None)
    app = make_app(ClusterConfig("hpc", "fake-curves", refresh_seconds=3600))
    async with app.run_test(size=(140, 70)) as pilot:
        detail = await open_detail(pilot, app)
        hint = extra_command("tensorboard")  # the command for the way this copy was installed
        await wait_for(pilot, lambda: hint in curves_text(detail), what="hint")
