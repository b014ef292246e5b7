"""The images catalogue and the template projects in the console: the Submit form's image field offers
the chosen cluster's ``images:`` (completions as you type, listed in its help line) and still takes any
text; the template picker lists the projects and writes one into a folder before loading its spec
(refusing a folder that is not empty); the job detail shows a job's image."""

from __future__ import annotations

from dataclasses import replace

from textual.widgets import Input, OptionList, Static
from uihelpers import make_app
from waiting import wait_for

from yanflow_tui.config import ClusterConfig
from yanflow_tui.model import Image
from yanflow_tui.screens.detail import JobDetailScreen
from yanflow_tui.screens.dialogs import PromptScreen
from yanflow_tui.screens.submit.screen import SubmitScreen
from yanflow_tui.screens.templates import TemplatePickerScreen

CATALOGUE = (
    Image("nvcr.io/nvidia/pytorch:24.05-py3", "NGC PyTorch", ("pytorch", "deepspeed")),
    Image("tensorflow/tensorflow:2.16.1-gpu", "", ("tensorflow",)),
)


def clusters() -> tuple[ClusterConfig, ClusterConfig]:
    return (
        ClusterConfig("hpc", "fake", refresh_seconds=3600, images=CATALOGUE),
        ClusterConfig("plain", "fake", refresh_seconds=3600),
    )


def section(screen, widget_id: str) -> str:
    return "".join(str(w.render()) for w in screen.query(widget_id).results(Static))  # empty until composed


async def open_submit(pilot) -> SubmitScreen:
    await pilot.press("3")
    screen = await wait_for(pilot, lambda: isinstance(pilot.app.screen, SubmitScreen) and pilot.app.screen, what="form")
    await wait_for(pilot, lambda: screen.draft_ready, what="draft checked")
    return screen


async def test_the_image_field_offers_the_clusters_catalogue_and_takes_free_text(fake_backend, home):
    app = make_app(*clusters())
    async with app.run_test(size=(140, 50)) as pilot:
        screen = await open_submit(pilot)
        await wait_for(pilot, lambda: screen.query("#image"), what="image field")
        field = screen.query_one("#image", Input)
        field.focus()
        await pilot.press(*"nv", "right")  # right at the end of the text accepts the completion offered
        await wait_for(pilot, lambda: field.value == CATALOGUE[0].name, what="completed from the catalogue")
        assert screen.form_data()[0]["image"] == CATALOGUE[0].name
        help_line = str(screen.query_one("#field-help", Static).render())
        assert all(image.name in help_line for image in CATALOGUE) and "pytorch, deepspeed" in help_line

        field.value = ""
        await pilot.press(*"my/own:1")  # not in the catalogue: taken as typed
        await wait_for(pilot, lambda: screen.form_data()[0].get("image") == "my/own:1", what="free text")

        screen.query_one("#cluster").value = "plain"  # a cluster without a catalogue offers nothing

        def plain_field() -> Input | None:
            found = list(screen.query("#image").results(Input))
            return found[0] if found and found[0].suggester is None else None

        shown = await wait_for(pilot, plain_field, what="plain's image field, with no completions")
        assert shown.value == "my/own:1"  # the text typed stays


async def pick_project(pilot, name: str) -> PromptScreen:
    await pilot.press("ctrl+l")
    picker = await wait_for(
        pilot, lambda: isinstance(pilot.app.screen, TemplatePickerScreen) and pilot.app.screen, what="picker"
    )
    index = next(i for i, t in enumerate(picker.templates) if t.origin == "project" and t.name == name)
    assert {t.name for t in picker.templates if t.origin == "project"} >= {"torchrun-ddp", "det-trial", "tensorflow"}
    picker.query_one(OptionList).highlighted = index
    await pilot.press("enter")
    return await wait_for(pilot, lambda: isinstance(pilot.app.screen, PromptScreen) and pilot.app.screen, what="dir")


async def test_the_template_picker_writes_a_project_and_loads_its_spec(fake_backend, home, tmp_path):
    app = make_app(*clusters())
    target = tmp_path / "ddp"
    async with app.run_test(size=(140, 50)) as pilot:
        screen = await open_submit(pilot)
        prompt = await pick_project(pilot, "torchrun-ddp")
        prompt.query_one(Input).value = str(target)
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen.query_one("#name", Input).value == "torchrun-ddp", what="spec loaded")
        assert {p.name for p in target.iterdir()} == {"job.yaml", "train.py", "yanflow_events.py"}
        assert screen.query_one("#spec-path", Input).value == str(target / "job.yaml")
        assert screen.form_data()[0]["launcher"] == "torchrun"

        (target / "train.py").write_text("# mine\n")
        prompt = await pick_project(pilot, "deepspeed")
        prompt.query_one(Input).value = str(target)
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("not empty" in str(n.message) for n in app._notifications), what="refusal")
        assert (target / "train.py").read_text() == "# mine\n" and not (target / "ds_config.json").exists()
        assert screen.query_one("#name", Input).value == "torchrun-ddp"  # the form is as it was


async def test_the_detail_shows_the_jobs_image(fake_backend, home):
    app = make_app(clusters()[0])
    async with app.run_test(size=(140, 50)) as pilot:
        await wait_for(pilot, lambda: app.hub.find_job("hpc", "101"), what="job 101")
        backend = app.hub.backend("hpc")
        backend.jobs[0] = replace(backend.jobs[0], image=CATALOGUE[0].name)
        app.request_refresh("hpc")
        job = await wait_for(pilot, lambda: (j := app.hub.find_job("hpc", "101")) and j.image and j, what="image")
        app.push_screen(JobDetailScreen(job))
        detail = await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen, what="detail")
        await wait_for(
            pilot,
            lambda: "Image:" in (text := section(detail, "#describe")) and CATALOGUE[0].name in text,
            what="the image in the detail",
        )
