"""Status lines at 80x24: cut at a word boundary with ``… i: full text``, the whole text one key
away in a dialog (Nodes, Logs, the Queue's filter note); ``cut_at_word`` on its own."""

from __future__ import annotations

import pytest
from fakes.backend import FakeLongBackend
from rich.text import Text
from uihelpers import make_app, screen_text
from waiting import wait_for

from yanflow_tui.config import ClusterConfig
from yanflow_tui.errors import BackendError
from yanflow_tui.screens.dialogs import FullTextScreen
from yanflow_tui.screens.nodes import NodesScreen
from yanflow_tui.screens.widgets.gpugrid import GpuGrid
from yanflow_tui.screens.widgets.status_line import StatusLine, cut_at_word


def dialog_drawn(app) -> bool:
    """The full-text dialog is up and its last words are on screen."""
    if not isinstance(app.screen, FullTextScreen):
        return False
    held = " ".join(str(w.render()) for w in app.screen.query(".full-text"))
    return bool(held.split()) and held.split()[-1] in screen_text(app)  # (the last two may wrap apart)


def dialog_text(app) -> str:
    """What the full-text dialog holds, after checking that its last words are on screen."""
    assert isinstance(app.screen, FullTextScreen)
    held = " ".join(str(w.render()) for w in app.screen.query(".full-text"))
    assert held.split()[-1] in screen_text(app)  # drawn to the end, wrapped, not cut
    return " ".join(held.split())


NOTE = "NVML unavailable: NVML Shared Library Not Found on this host"


@pytest.fixture(autouse=True)
def kinds(register_backend, home):
    register_backend(FakeLongBackend)


def site() -> ClusterConfig:
    return ClusterConfig("slurm-site-a", "fake-long", refresh_seconds=3600)


def test_cut_at_word_keeps_whole_words_and_says_where_the_rest_is():
    text = Text("hpc/gpu01 · mixed: NVML unavailable: NVML Shared Library Not Found")
    out = cut_at_word(text, 40, "i: full text").plain
    assert out == "hpc/gpu01 · mixed: NVML… i: full text" and len(out) <= 40
    assert cut_at_word(text, 200, "i: full text") is text  # it fits: unchanged
    assert cut_at_word(Text("a" * 50), 20, "i: full text").plain == "aaaaaa… i: full text"  # one long word
    assert cut_at_word(text, 8, "i: full text").plain == "hpc/gpu…"  # too narrow for the hint


def check_cut(line: StatusLine) -> str:
    """The drawn line ends in the hint, and what it keeps of the full text ends where a word does."""
    drawn = str(line.render())
    full = line.full_text.plain
    assert len(drawn) <= line.content_region.width and drawn.endswith("… i: full text"), drawn
    kept = drawn[: -len("… i: full text")]
    assert full.startswith(kept) and full[len(kept)] in " ·,:;", (kept, full)
    return drawn


async def test_the_nodes_status_line_is_cut_at_a_word_and_i_shows_all_of_it(home):
    app = make_app(site())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        grid = await wait_for(
            pilot, lambda: isinstance(app.screen, NodesScreen) and app.screen.query_one(GpuGrid), what="nodes"
        )
        await wait_for(pilot, lambda: grid.node_count == 3, what="nodes in the grid")
        assert grid.select_key("slurm-site-a/dgx-a100-node-0042", None)
        line = app.screen.query_one("#node-status", StatusLine)
        await wait_for(pilot, lambda: NOTE in line.full_text.plain and line.truncated, what="the note, cut")
        drawn = check_cut(line)
        assert drawn in screen_text(app)
        await pilot.press("i")
        dialog = await wait_for(pilot, lambda: isinstance(app.screen, FullTextScreen) and app.screen, what="dialog")
        await wait_for(pilot, lambda: dialog_drawn(app), what="the dialog drawn to its end")
        text = dialog_text(app)
        assert NOTE in text and "enter: jobs on this node" in text  # the whole line, wrapped
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is not dialog and isinstance(app.screen, NodesScreen), what="closed")


async def test_the_logs_status_line_with_a_long_error_is_cut_at_a_word(home):
    app = make_app(site())
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.hub.snapshots["slurm-site-a"].jobs, what="jobs")
        backend = app.hub.backend("slurm-site-a")

        async def failing(job_id, follow=False, stream=""):
            raise BackendError(
                "the login node closed the connection while reading the job's output file "
                "/scratch/alice/ddp-llama-70b/slurm-4815162.out"
            )
            yield  # pragma: no cover - an async generator

        backend.stream_logs = failing
        await pilot.press("l")
        line = await wait_for(
            pilot,
            lambda: app.screen.query("#log-status") and app.screen.query_one("#log-status", StatusLine),
            what="logs",
        )
        await wait_for(pilot, lambda: "error:" in line.full_text.plain, what="the error in the status")
        await wait_for(pilot, lambda: line.truncated, what="the status cut")
        check_cut(line)
        await pilot.press("i")
        await wait_for(pilot, lambda: isinstance(app.screen, FullTextScreen), what="dialog")
        await wait_for(pilot, lambda: dialog_drawn(app), what="the dialog drawn to its end")
        assert "reading the job's output file /scratch/alice/ddp-llama-70b/slurm-4815162.out" in dialog_text(app)


async def test_a_long_filter_error_is_cut_at_a_word_and_shown_whole_on_i(home):
    app = make_app(site())
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.hub.snapshots["slurm-site-a"].jobs, what="jobs")
        await pilot.press("slash", *"gpus:>four", "enter")
        line = app.screen.query_one("#filter-error", StatusLine)
        await wait_for(pilot, lambda: line.display and line.full_text.plain, what="filter error")
        await wait_for(pilot, lambda: str(line.render()), what="the error drawn")
        if line.truncated:
            check_cut(line)
        await pilot.press("i")
        await wait_for(pilot, lambda: isinstance(app.screen, FullTextScreen), what="dialog")
        await wait_for(pilot, lambda: dialog_drawn(app), what="the dialog drawn to its end")
        assert " ".join(line.full_text.plain.split()) in dialog_text(app)
