"""The resume key (``C``, ``resume-job`` in the Queue and ``detail-resume`` in the job detail): over a fake
backend whose jobs' output folder is a real folder (listed and copied as the local backend does), the key
opens the Submit form on the job's own spec (the one kept when it was submitted) with
``YANFLOW_RESUME_FROM`` set to its newest checkpoint; choosing another cluster in the form says what must
move; no checkpoint is said plainly, and read-only mode refuses the key. A job this console did not submit
opens as its cluster gives it back (``native_resubmission``: its own script), and is sent with the options it
ran with."""

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
from yanflow_tui.backends.local import upload as local_upload
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


class EmptyFake(FakeBackend):
    """Another cluster, with no jobs (the Queue's first row stays hpc's job 101), that takes no files."""

    kind = "fake-empty"

    def __init__(self, config):
        super().__init__(config)
        self.jobs = []


class UploadFake(EmptyFake):
    """Another cluster that takes files from the console (into its "home", a folder of the test)."""

    kind = "fake-upload"
    capabilities = replace(FakeBackend.capabilities, upload=True)

    async def _upload(self, source, target):
        return local_upload.upload(source, str(OUTPUTS[0].parent / "other-home" / target))


@pytest.fixture
def outputs(home, tmp_path, register_backend):
    folder = tmp_path / "out"
    for n in (1, 2):
        (folder / "checkpoints").mkdir(parents=True, exist_ok=True)
        (folder / "checkpoints" / f"epoch_{n}.json").write_text("{}")
    OUTPUTS[:] = [folder]
    register_backend(FolderFake)
    register_backend(EmptyFake)
    register_backend(UploadFake)
    spec = parse_spec("name: train-resnet\ncommand: python3 train.py --epochs 3\nenv: {WANDB_MODE: offline}\n")
    submitted.remember("hpc", "101", spec)
    return folder


def clusters() -> tuple[ClusterConfig, ClusterConfig]:
    return ClusterConfig("hpc", "fake-folder", refresh_seconds=3600), ClusterConfig(
        "other", "fake-empty", refresh_seconds=3600
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


async def test_submitting_to_a_cluster_with_no_shared_storage_copies_the_checkpoint_first(outputs):
    app = make_app(*clusters(), ClusterConfig("far", "fake-upload", refresh_seconds=3600))
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for(pilot, lambda: app.hub.find_job("hpc", "101"), what="job 101")
        await pilot.press("C")
        screen = await submit_screen(pilot, app)
        second = outputs / "checkpoints" / "epoch_2.json"
        await wait_for(pilot, lambda: f"YANFLOW_RESUME_FROM={second}" in screen.query_one("#env").text, what="env")
        screen.query_one("#cluster", Select).value = "far"
        await wait_for(pilot, lambda: "when you submit" in notes(screen), what="the copy announced")
        await pilot.press("ctrl+s")
        far = next(b for b in FakeBackend.instances if b.name == "far")
        sent = await wait_for(pilot, lambda: [c[1] for c in far.calls if c[0] == "submit"], what="the submit")
        copied = outputs.parent / "other-home" / ".yanflow/resume/hpc-101/epoch_2.json"
        assert sent[0].env["YANFLOW_RESUME_FROM"] == str(copied) and copied.read_text() == second.read_text()
        assert sent[0].command == "python3 train.py --epochs 3"


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


SCRIPT = "#!/bin/sh\n#SBATCH --time=00:03:00\npython3 train.py\n"
RAN_WITH = (("job-name", "by hand"), ("partition", "gpu"))


class GivingFake(FolderFake):
    """A cluster that gives a job back to send again (its script, with the options it ran with)."""

    kind = "fake-giving"
    capabilities = replace(FolderFake.capabilities, resubmission=True, native_files=frozenset({"sbatch"}))

    async def native_resubmission(self, job_id, env):
        from yanflow_tui.backends.slurm import resubmission

        return resubmission.spec_for(job_id, SCRIPT, list(RAN_WITH), env)

    def _render_native(self, spec):
        return spec.native.text

    async def _submit_native(self, spec, tag, retry):
        return await self._submit(spec)


async def test_a_job_not_submitted_here_opens_as_its_cluster_gives_it_back(home, tmp_path, register_backend):
    (tmp_path / "out" / "checkpoints").mkdir(parents=True)
    (tmp_path / "out" / "checkpoints" / "epoch_4.json").write_text("{}")
    OUTPUTS[:] = [tmp_path / "out"]
    register_backend(GivingFake)
    app = make_app(ClusterConfig("hpc", "fake-giving", refresh_seconds=3600))
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for(pilot, lambda: app.hub.find_job("hpc", "101"), what="job 101")
        await pilot.press("C")
        screen = await submit_screen(pilot, app)
        fourth = str(tmp_path / "out" / "checkpoints" / "epoch_4.json")
        await wait_for(pilot, lambda: screen.query_one("#env").text == f"YANFLOW_RESUME_FROM={fourth}", what="env")
        assert screen.query_one("#command").text == "python3 train.py"  # the script's own body
        await wait_for(
            pilot,
            lambda: "with the options it ran with: '--job-name=by hand' --partition=gpu" in notes(screen),
            what="the note",
        )
        await pilot.press("ctrl+s")
        giving = next(b for b in FakeBackend.instances if b.name == "hpc")
        sent = await wait_for(pilot, lambda: [c[1] for c in giving.calls if c[0] == "submit"], what="the submit")
        assert sent[0].native.text == SCRIPT and sent[0].native.recorded == RAN_WITH
        assert sent[0].env == {"YANFLOW_RESUME_FROM": fourth}
