"""``y`` copies (the sequences themselves are checked in a real terminal: test_terminal_notices.py):
the Queue's highlighted job id, or the marked ones; the detail's id or a path or URL it shows, chosen
when there are several; a log pane's marked line, else the lines in view. The toast says what."""

from __future__ import annotations

from dataclasses import replace

from uihelpers import make_app
from waiting import wait_for

from yanflow_tui.config import ClusterConfig
from yanflow_tui.screens.detail import JobDetailScreen
from yanflow_tui.screens.dialogs import ChoiceScreen
from yanflow_tui.screens.logs.screen import LogsScreen
from yanflow_tui.screens.queue import JobTable


def toasts(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_y_copies_the_highlighted_job_id_then_the_marked_ones(fake_backend):
    app = make_app(ClusterConfig("hpc", "fake", refresh_seconds=3600))
    async with app.run_test(size=(120, 30)) as pilot:
        table = await wait_for(pilot, lambda: app.screen.query(JobTable).first(), what="the queue")
        await wait_for(pilot, lambda: len(table.row_keys) == 3, what="rows")
        first = table.row_keys[0].split("/")[1]
        await pilot.press("y")
        await wait_for(pilot, lambda: app.clipboard == first, what="the id copied")
        assert f"copied job id: {first}" in toasts(app)
        await pilot.press("space", "space")
        await pilot.press("y")
        second = table.row_keys[1].split("/")[1]
        await wait_for(pilot, lambda: app.clipboard == f"{first}\n{second}", what="the marked ids copied")
        assert "copied 2 job ids" in toasts(app)


async def test_y_in_the_detail_offers_its_paths_and_urls(fake_backend):
    app = make_app(ClusterConfig("hpc", "fake", refresh_seconds=3600))
    async with app.run_test(size=(140, 50)) as pilot:
        await wait_for(pilot, lambda: app.hub.find_job("hpc", "101"), what="job 101")
        job = replace(app.hub.find_job("hpc", "101"), details=(("StdOut", "/scratch/alice/slurm-101.out"),))
        app.push_screen(JobDetailScreen(job))
        await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen), what="detail")
        await pilot.press("y")
        choice = await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen) and app.screen, what="the choice")
        assert choice.choices == ["job id: 101", "StdOut: /scratch/alice/slurm-101.out"]
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: app.clipboard == "/scratch/alice/slurm-101.out", what="the path copied")
        assert "copied StdOut: /scratch/alice/slurm-101.out" in toasts(app)


async def test_y_in_a_log_pane_copies_the_lines_in_view(fake_backend):
    app = make_app(ClusterConfig("hpc", "fake", refresh_seconds=3600))
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: app.hub.find_job("hpc", "103"), what="job 103")
        backend = app.hub.backend("hpc")
        backend.logs["103"] = [f"line {i}" for i in range(5)]
        app.open_logs(app.hub.find_job("hpc", "103"))
        screen = await wait_for(pilot, lambda: isinstance(app.screen, LogsScreen) and app.screen, what="logs")
        await wait_for(pilot, lambda: screen.pane is not None and len(screen.pane.store) == 5, what="the lines")
        await pilot.press("y")
        await wait_for(pilot, lambda: app.clipboard == "\n".join(f"line {i}" for i in range(5)), what="copied")
        assert "copied 5 log lines" in toasts(app)
