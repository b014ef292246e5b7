"""The resume key (``C``, ``resume-job`` in the Queue and ``detail-resume`` in the job detail): over a fake
backend whose jobs' output folder is a real folder (listed and copied as the local backend does), the key
opens the Submit form on the job's own spec (the one kept when it was submitted) with
``YANFLOW_RESUME_FROM`` set to its newest checkpoint; choosing another cluster in the form says what must
move; no checkpoint is said plainly, and read-only mode refuses the key."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from fakes.backend import FakeBackend
from textual.widgets import Select, Static
from uihelpers import make_app
from waiting import wait_for

from yanflow_tui import submitted
from yanflow_tui.backends.local import inside
from yanflow_tui.config import ClusterConfig
from yanflow_tui.screens.detail import JobDetailScreen
from yanflow_tui.screens.dialogs import HelpScreen
from yanflow_tui.screens.submit.screen import SubmitScreen
from yanflow_tui.spec import parse_spec

OUTPUTS: list[Path] = []


class FolderFake(FakeBackend):
    kind = "fake-folder"
    capabilities = replace(FakeBackend.capabilities, files=True)

    async def list_files(self, job_id, path=""):
        return inside.list_dir(str(OUTPUTS[0]), path)

    async def download(self, job_id, path, target, progress=None):
        return inside.download(str(OUTPUTS[0]), path, target, progress)


@pytest.fixture
def outputs(home, tmp_path, register_backend):
    folder = tmp_path / "out"
    for n in (1, 2):
        (folder / "checkpoints").mkdir(parents=True, exist_ok=True)
        (folder / "checkpoints" / f"epoch_{n}.json").write_text("{}")
    OUTPUTS[:] = [folder]
    register_backend(FolderFake)
    register_backend(FakeBackend)
    spec = parse_spec("name: train-resnet\ncommand: python3 train.py --epochs 3\nenv: {WANDB_MODE: offline}\n")
    submitted.remember("hpc", "101", spec)
    return folder


def clusters() -> tuple[ClusterConfig, ClusterConfig]:
    return ClusterConfig("hpc", "fake-folder", refresh_seconds=3600), ClusterConfig(
        "other", "fake", refresh_seconds=3600
    )


async def submit_screen(pilot, app) -> SubmitScreen:
    return await wait_for(
        pilot,
        lambda: isinstance(app.screen, SubmitScreen) and app.screen.query("#env") and app.screen,
        what="the Submit form",
    )


def notes(screen: SubmitScreen) -> str:
    return str(screen.query_one("#form-notes", Static).render())


async def test_the_key_in_the_queue_opens_submit_with_the_checkpoint_in_env(outputs):
    app = make_app(*clusters())
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for(pilot, lambda: app.hub.find_job("hpc", "101"), what="job 101")
        await pilot.press("question_mark")
        help_screen = await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen) and app.screen, what="help")
        assert ("C", "Resume from checkpoint", "resume-job") in help_screen.rows
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen), what="help closed")
        await pilot.press("C")
        screen = await submit_screen(pilot, app)
        second = str(outputs / "checkpoints" / "epoch_2.json")
        await wait_for(
            pilot,
            lambda: screen.query_one("#env").text == f"WANDB_MODE=offline\nYANFLOW_RESUME_FROM={second}",
            what="the env filled",
        )
        assert screen.query_one("#command").text == "python3 train.py --epochs 3"
        assert screen.query_one("#cluster", Select).value == "hpc"
        await wait_for(pilot, lambda: f"resuming job 101 of hpc from {second}" in notes(screen), what="the note")
        screen.query_one("#cluster", Select).value = "other"
        await wait_for(pilot, lambda: "On other: hpc and other share no storage" in notes(screen), what="the move")
        # the fake "other" takes no files from the console: the note says exactly what to copy
        assert f"copy hpc:{second} (2 bytes) to other yourself" in notes(screen), notes(screen)
        assert not [c for b in FakeBackend.instances for c in b.calls if c[0] == "submit"]  # nothing sent yet


async def test_the_key_in_the_detail_and_no_checkpoint_said_plainly(outputs):
    for name in ("epoch_1.json", "epoch_2.json"):
        (outputs / "checkpoints" / name).unlink()
    app = make_app(*clusters())
    async with app.run_test(size=(160, 50)) as pilot:
        job = await wait_for(pilot, lambda: app.hub.find_job("hpc", "101"), what="job 101")
        app.push_screen(JobDetailScreen(job))
        await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen), what="the detail")
        said: list[str] = []
        app.notify = lambda message, **kw: said.append(str(message))  # type: ignore[method-assign]
        await pilot.press("C")
        await wait_for(pilot, lambda: any("no checkpoint found for job 101 on hpc" in s for s in said), what="said")
        assert isinstance(app.screen, JobDetailScreen)  # the form is not opened
        (outputs / "checkpoints" / "epoch_7.json").write_text("{}")
        await pilot.press("C")
        screen = await submit_screen(pilot, app)
        seventh = str(outputs / "checkpoints" / "epoch_7.json")
        await wait_for(pilot, lambda: f"YANFLOW_RESUME_FROM={seventh}" in screen.query_one("#env").text, what="env")


async def test_no_key_where_no_cluster_can_find_a_checkpoint(fake_backend):
    app = make_app(ClusterConfig("hpc", "fake", refresh_seconds=3600))
    async with app.run_test(size=(160, 50)) as pilot:
        job = await wait_for(pilot, lambda: app.hub.find_job("hpc", "101"), what="job 101")
        assert app.screen.check_action("resume", ()) is False
        app.push_screen(JobDetailScreen(job))
        detail = await wait_for(
            pilot,
            lambda: isinstance(app.screen, JobDetailScreen) and app.screen.query("#why") and app.screen,
            what="detail",
        )
        assert detail.check_action("resume", ()) is False
        detail.dismiss()
        await wait_for(pilot, lambda: not isinstance(app.screen, JobDetailScreen), what="detail closed")


async def test_read_only_refuses_the_key(outputs):
    app = make_app(*clusters(), read_only=True)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for(pilot, lambda: app.hub.find_job("hpc", "101"), what="job 101")
        said: list[str] = []
        app.notify = lambda message, **kw: said.append(str(message))  # type: ignore[method-assign]
        await pilot.press("C")
        await wait_for(pilot, lambda: any("read-only: resume refused" in s for s in said), what="refused")
        assert not isinstance(app.screen, SubmitScreen)
