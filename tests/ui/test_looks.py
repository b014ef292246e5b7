"""Looks: the light/dark theme switch and NO_COLOR."""

from __future__ import annotations

import re

import pytest
from uihelpers import make_app, screen_text
from waiting import wait_for

from yanflow_tui.config import ClusterConfig


def colours(svg: str) -> set[str]:
    return {c.lower() for c in re.findall(r"fill:\s*(#[0-9a-fA-F]{6})", svg)}


def is_grey(colour: str) -> bool:
    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return max(r, g, b) - min(r, g, b) <= 8


async def test_ctrl_t_switches_between_the_light_and_the_dark_theme(fake_backend):
    app = make_app(ClusterConfig("hpc", "fake", refresh_seconds=3600))
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: "train-resnet" in screen_text(app), what="rows")
        assert app.current_theme.dark
        dark = colours(app.export_screenshot())
        assert not all(is_grey(c) for c in dark)  # states are coloured when colour is allowed
        await pilot.press("ctrl+t")
        assert not app.current_theme.dark
        await wait_for(pilot, lambda: colours(app.export_screenshot()) != dark, what="redrawn in the light theme")
        assert "train-resnet" in screen_text(app)  # redrawn, nothing lost
        await pilot.press("ctrl+t")
        assert app.current_theme.dark


async def test_no_color_renders_in_greys_only_and_keeps_the_text(fake_backend, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(ClusterConfig("hpc", "fake", refresh_seconds=3600))
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: "train-resnet" in screen_text(app), what="rows")
        assert app.no_color
        assert all(is_grey(c) for c in colours(app.export_screenshot()))
        await pilot.press("2")
        await wait_for(pilot, lambda: "gpu01" in screen_text(app), what="nodes")
        assert all(is_grey(c) for c in colours(app.export_screenshot()))
        text = screen_text(app)
        assert "gpu02" in text and "■" in text and "✕" in text  # GPU states read from the glyphs alone


async def test_no_color_checkboxes_say_yes_or_no(monkeypatch):
    """A ticked checkbox and an unticked one differ only in colour: the form's say it in words."""
    from textual.app import App
    from textual.widgets import Checkbox

    from yanflow_tui.formfields import FLAG, FormField
    from yanflow_tui.screens.submit.form import SpecForm

    monkeypatch.setenv("NO_COLOR", "1")

    class FormApp(App):
        def compose(self):
            yield SpecForm([FormField("slurm.exclusive", "Exclusive", kind=FLAG)], {})

    app = FormApp()
    async with app.run_test(size=(60, 6)) as pilot:
        box = app.query_one(Checkbox)
        assert not box.value and "no" in screen_text(app).split("Exclusive")[1].split("\n")[0]
        box.focus()
        await pilot.press("space")
        await wait_for(pilot, lambda: box.value, what="ticked")
        await wait_for(pilot, lambda: "yes" in screen_text(app).split("Exclusive")[1].split("\n")[0], what="yes")


LONG_QUESTION = (
    "Resubmit job 4815162 (llama-finetune-deepspeed-2x8) on hpc-prod with twice the time limit (after a TIMEOUT)"
    " or twice the memory (after an OUT_OF_MEMORY)?"
)


@pytest.mark.parametrize("dialog", ["confirm", "prompt", "choice"])
async def test_a_dialogs_long_title_wraps_at_80x24_and_nothing_is_cut(fake_backend, dialog):
    from yanflow_tui.screens.dialogs import ChoiceScreen, ConfirmScreen, PromptScreen

    made = {
        "confirm": lambda: ConfirmScreen(LONG_QUESTION),
        "prompt": lambda: PromptScreen(LONG_QUESTION, "00:02:00"),
        "choice": lambda: ChoiceScreen(LONG_QUESTION, ["yes", "no"]),
    }
    app = make_app(ClusterConfig("hpc", "fake", refresh_seconds=3600))
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(made[dialog]())
        await wait_for(
            pilot, lambda: type(app.screen).__name__.endswith("Screen") and app.screen.query("Label"), what="it"
        )
        await pilot.pause()
        shown = " ".join(re.sub(r"[█▌▐▊▎]", " ", screen_text(app)).split())
        assert " ".join(LONG_QUESTION.split()) in shown
