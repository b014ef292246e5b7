"""An empty Queue says what to do next: ``s`` to submit, ``5`` for the clusters, where the config file
goes (the real path) with a minimal Slurm example; when a filter hides every job, how many it hides."""

from __future__ import annotations

from textual.widgets import Input
from uihelpers import make_app, screen_text
from waiting import wait_for

from yanflow_tui.app import YanflowApp
from yanflow_tui.config import ClusterConfig, Config
from yanflow_tui.hub import Hub
from yanflow_tui.screens.widgets.queue_hint import QueueHint


def _hint(app) -> str:
    hint = app.screen.query_one(QueueHint)
    return str(hint.render()) if hint.display else ""


async def _first_refresh(pilot, name: str) -> None:
    await wait_for(pilot, lambda: pilot.app.hub.snapshots[name].updated is not None, what="first refresh")
    await pilot.pause()  # its snapshot handled: the hint follows it


async def test_a_first_start_says_how_to_submit_and_where_the_config_goes(home, fake_nvml):
    app = make_app(ClusterConfig("local", "local"))  # no config file: discovered
    async with app.run_test(size=(80, 24)) as pilot:
        await _first_refresh(pilot, "local")
        text = _hint(app)
        assert "No jobs listed. s submits a job." in text
        assert "5 shows each cluster's state." in text
        assert "No config file" in text and "~/.config/yanflow/config.yaml" in text
        assert "kind: slurm" in text and "ssh: you@login.hpc.example" in text
        shown = screen_text(app)
        assert "~/.config/yanflow/config.yaml" in shown and "kind: slurm" in shown  # fits at 80x24


async def test_the_hint_names_the_config_file_in_use(home, fake_nvml, tmp_path):
    file = tmp_path / "site.yaml"
    config = Config(clusters=(ClusterConfig("local", "local"),), source=str(file), read_only=True)
    app = YanflowApp(config, Hub(config))
    async with app.run_test(size=(100, 30)) as pilot:
        await _first_refresh(pilot, "local")
        text = _hint(app)
        assert f"Clusters are configured in {file}" in text
        assert "Read-only: submitting is off." in text and "s submits" not in text


async def test_a_filter_that_hides_every_job_says_how_many(home, fake_backend):
    app = make_app(ClusterConfig("hpc", "fake", refresh_seconds=3600))
    app.all_users = True
    async with app.run_test(size=(100, 30)) as pilot:
        await _first_refresh(pilot, "hpc")
        assert _hint(app) == ""  # jobs listed: no hint
        total = len(app.hub.snapshots["hpc"].jobs)
        assert total > 0
        await pilot.press("slash", *"name:no-such-job-zz", "enter")
        await wait_for(pilot, lambda: _hint(app), what="the hint")
        assert _hint(app) == f"The filter hides {total} jobs: esc clears it, / changes it."
        assert "No jobs listed" not in screen_text(app)
        app.screen.query_one("#filter", Input).value = ""
        await wait_for(pilot, lambda: not _hint(app), what="the hint gone with the filter")


async def test_a_redraw_with_the_same_hint_does_not_paint_it_again(home, fake_nvml, monkeypatch):
    """The hint's text is given again only when it changes: an empty Queue's refreshes (every 5 s) wrote
    the whole box again each time."""
    app = make_app(ClusterConfig("local", "local"))
    async with app.run_test(size=(80, 24)) as pilot:
        await _first_refresh(pilot, "local")
        hint = app.screen.query_one(QueueHint)
        updates: list[object] = []
        monkeypatch.setattr(hint, "update", updates.append)
        app.screen.refresh_data()
        app.screen.refresh_data()
        assert updates == [] and "No jobs listed." in _hint(app)
        hint.show_for(0, 3, filtering=True, mine=True)  # another text: given
        assert [str(text) for text in updates] == ["The filter hides 3 jobs: esc clears it, / changes it."]
