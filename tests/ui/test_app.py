"""Pilot tests of the console against the real local backend and the in-memory fake backend."""

from __future__ import annotations

import time

import pytest
from fakes.backend import FakeActionsBackend, FakeBackend, FakeLoginBackend
from paths import SAMPLES
from textual.app import ScreenStackError
from textual.command import CommandList, CommandPalette
from textual.widgets import Input
from uihelpers import log_lines, make_app, prompt_ready, refreshed, screen_text
from waiting import wait_for

from yanflow_tui.app import YanflowApp
from yanflow_tui.backends.local import procs
from yanflow_tui.commands import YanflowCommands
from yanflow_tui.config import ClusterConfig, Config
from yanflow_tui.errors import ReadOnlyError
from yanflow_tui.hub import Hub
from yanflow_tui.model import JobState
from yanflow_tui.screens.detail import JobDetailScreen
from yanflow_tui.screens.dialogs import ConfirmScreen, HelpScreen
from yanflow_tui.screens.logs.screen import LogsScreen
from yanflow_tui.screens.queue import JobTable, QueueScreen
from yanflow_tui.screens.submit.screen import SubmitScreen
from yanflow_tui.spec import load_spec

LOCAL = ClusterConfig("local", "local", refresh_seconds=0.5)


def fake_cluster(name="hpc", **kw) -> ClusterConfig:
    return ClusterConfig(name, "fake", refresh_seconds=kw.pop("refresh_seconds", 0.5), **kw)


def rows(app) -> list[str]:
    return app.screen.query_one(JobTable).row_keys


def select_row(app, key: str) -> None:
    table = app.screen.query_one(JobTable)
    table.move_cursor_to_key(key)


async def open_from_row(pilot, app, key: str, press: str, screen_type):
    """Wait for the queue row ``key``, highlight it, press ``press``; the screen of ``screen_type`` it opens."""
    await wait_for(pilot, lambda: key in rows(app), what=f"row {key}")
    select_row(app, key)
    await pilot.press(press)
    return await wait_for(pilot, lambda: isinstance(app.screen, screen_type) and app.screen, what=screen_type.__name__)


async def assert_gate_refuses(backend, method: str, *args) -> None:
    """The backend's gate refuses the call, and nothing mutating reached the backend at all."""
    with pytest.raises(ReadOnlyError):
        await getattr(backend, method)(*args)
    assert backend.mutations == []


async def palette_names(app) -> list[str]:
    provider = YanflowCommands(app.screen)
    return [hit.text async for hit in provider.discover()]


# -- the local backend end to end -------------------------------------------------------------------


async def test_submit_screen_runs_local_shell_to_completion_and_logs_show(home):
    app = make_app(LOCAL)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        screen = await wait_for(
            pilot, lambda: isinstance(app.screen, SubmitScreen) and app.screen, what="submit screen"
        )
        screen.query_one("#spec-path", Input).value = str(SAMPLES / "local-shell.yaml")
        await pilot.click("#load")
        await wait_for(pilot, lambda: screen.query_one("#name", Input).value == "local-shell-demo", what="spec loaded")
        # the fields are in the DOM (with their text) before the form is checked and the preview drawn
        await wait_for(pilot, lambda: "/bin/sh -c" in str(screen.query_one("#preview").render()), what="preview")
        await pilot.press("ctrl+s")
        submitted = await wait_for(pilot, lambda: getattr(screen, "last_submitted", None), what="submit")
        cluster, job_id = submitted
        assert cluster == "local"
        await pilot.press("1")
        job = await wait_for(
            pilot,
            lambda: (j := app.hub.find_job("local", job_id)) and j.state is JobState.COMPLETED and j,
            timeout=30,
            what="job completed",
        )
        assert job.exit_code == 0
        select_row(app, f"local/{job_id}")
        await pilot.press("l")
        logs = await wait_for(pilot, lambda: isinstance(app.screen, LogsScreen) and app.screen, what="logs screen")
        await wait_for(pilot, lambda: "done" in log_lines(logs), what="last log line")
        assert [f"step {i}/20" for i in range(1, 21)] == [line for line in log_lines(logs) if line.startswith("step")]


async def test_cancel_from_queue_asks_then_kills_the_process_group(home):
    app = make_app(LOCAL)
    async with app.run_test(size=(120, 40)) as pilot:
        backend = app.hub.backend("local")
        spec = load_spec(SAMPLES / "local-shell.yaml")
        from dataclasses import replace

        job_id = await backend.submit(replace(spec, name="sleeper", command="sleep 300 & sleep 300 & wait"))
        app.request_refresh()
        await wait_for(pilot, lambda: f"local/{job_id}" in rows(app), what="row")
        row = backend.store.get(int(job_id))
        await wait_for(pilot, lambda: len(procs.group_members(row.pid)) >= 3, what="children started")
        select_row(app, f"local/{job_id}")
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirm dialog")
        await pilot.press("y")
        await wait_for(
            pilot,
            lambda: (j := app.hub.find_job("local", job_id)) and j.state is JobState.CANCELLED,
            timeout=15,
            what="cancelled",
        )
        assert procs.group_members(row.pid) == []


async def test_restarted_console_still_shows_the_job_and_its_log(home):
    first = make_app(LOCAL)
    async with first.run_test(size=(120, 40)) as pilot:
        job_id = await first.hub.backend("local").submit(load_spec(SAMPLES / "local-shell.yaml"))
        await wait_for(
            pilot, lambda: (j := first.hub.find_job("local", job_id)) and j.state.terminal, timeout=30, what="finished"
        )
    second = make_app(LOCAL)
    async with second.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: f"local/{job_id}" in rows(second), what="row after restart")
        assert second.hub.find_job("local", job_id).state is JobState.COMPLETED
        select_row(second, f"local/{job_id}")
        await pilot.press("l")
        logs = await wait_for(pilot, lambda: isinstance(second.screen, LogsScreen) and second.screen, what="logs")
        await wait_for(pilot, lambda: "done" in log_lines(logs), what="log after restart")


async def test_nodes_screen_shows_gpu_cells_and_utilisation_from_nvml(home, fake_nvml):
    fake_nvml.gpus(4, util=37, mem_used=2048)
    app = make_app(LOCAL)
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.press("2")
        await wait_for(pilot, lambda: app.hub.snapshots["local"].nodes, what="nodes")
        text = await wait_for(pilot, lambda: "A100" in (t := screen_text(app)) and t, what="the GPU cells drawn")
        assert "□ 37 □ 37 □ 37 □ 37" in text  # a cell per GPU, its utilisation beside it when there is room
        assert "A100" in text


async def test_nodes_screen_without_a_driver_says_why_in_one_line(home, fake_nvml):
    fake_nvml.set(driver=False)
    app = make_app(LOCAL)
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.press("2")
        await wait_for(pilot, lambda: app.hub.snapshots["local"].nodes, what="nodes")
        await wait_for(
            pilot, lambda: "NVML unavailable: NVML Shared Library Not Found" in screen_text(app), what="the reason"
        )


async def test_data_arriving_while_a_screen_is_still_composing_is_drawn_once_it_mounts(home, fake_backend):
    """Regression: a refresh landing between switching screens and their compose crashed the app."""
    from yanflow_tui.screens.nodes import NodesScreen

    app = make_app(fake_cluster())
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: app.hub.snapshots["hpc"].nodes, what="nodes")
        screen = NodesScreen()
        app.push_screen(screen)
        assert app.screen is screen and not screen.is_mounted
        app._cluster_updated(app.hub.snapshots["hpc"])  # must not raise
        await wait_for(pilot, lambda: screen.is_mounted and "gpu02" in screen_text(app), what="drawn once mounted")
        await screen.query_one("#nodes").remove()  # as at exit: the screen is still mounted, its widgets gone
        app._cluster_updated(app.hub.snapshots["hpc"])  # must not raise either
        real = type(app).screen

        def gone(self):
            raise ScreenStackError("No screens on stack")  # later at exit: no screens at all

        type(app).screen = property(gone)
        try:
            app._cluster_updated(app.hub.snapshots["hpc"])
            app._tick()
        finally:
            type(app).screen = real


async def test_a_failing_worker_is_said_in_one_line_and_its_traceback_goes_to_the_log(home, fake_backend):
    """Workers run with exit_on_error=False: one that fails anyway (a bug) is never silent."""
    from yanflow_tui import applog

    path = applog.setup()
    try:
        app = make_app(fake_cluster())
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: "hpc/101" in rows(app), what="rows")
            notes: list[str] = []
            notify = app.notify
            app.notify = lambda message, *args, **kwargs: (notes.append(message), notify(message, *args, **kwargs))[1]

            async def broken_step() -> None:
                raise RuntimeError("kaput")

            # a screen's worker: Textual tells only the screen (Worker.StateChanged does not bubble)
            app.screen.run_worker(broken_step(), name="broken step", exit_on_error=False)
            await wait_for(pilot, lambda: notes, what="the notification")
            assert notes == ["broken step failed: RuntimeError: kaput (the traceback is in the log: 5 shows where)"]
            assert app.is_running and isinstance(app.screen, QueueScreen)
    finally:
        applog.stop()
    assert path is not None
    text = path.read_text()
    assert "ERROR yanflow_tui.app: broken step failed" in text
    assert "Traceback (most recent call last):" in text and "in broken_step" in text and "RuntimeError: kaput" in text


# -- the fake backend: read-only, rendering, keys ---------------------------------------------------


async def test_read_only_removes_mutating_keys_and_commands_and_nothing_reaches_the_backend(home, fake_backend):
    app = make_app(fake_cluster(), read_only=True)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: "hpc/101" in rows(app), what="rows")
        select_row(app, "hpc/101")  # a running job: cancellable if the gate were open
        await pilot.pause()  # the highlight handled: the bindings follow the selected job
        active = {key: b.binding.action for key, b in app.screen.active_bindings.items() if b.enabled}
        assert {key: active.get(key, "").split("(")[0] for key in ("c", "s", "3", "ctrl+s")} == {
            "c": "app.refuse",
            "s": "app.refuse",
            "3": "refuse",
            "ctrl+s": "",
        }  # only the refusals
        assert not {b.binding.id for b in app.screen.active_bindings.values() if b.binding.show} & {
            "cancel-job",
            "submit-job",
            "show-submit",
            "cancel-job-read-only",
        }  # the footer shows none of them
        assert "READ-ONLY" in screen_text(app)
        names = await palette_names(app)
        assert "job: logs" in names and "job: cancel" not in names and "submit: open" not in names
        notes: list[str] = []
        notify = app.notify
        app.notify = lambda message, *args, **kwargs: (notes.append(message), notify(message, *args, **kwargs))[1]
        for key, what in (("c", "cancel"), ("s", "submit"), ("3", "submit")):
            await pilot.press(key)
            await wait_for(
                pilot,
                lambda what=what: notes and notes[-1].startswith(f"read-only: {what} refused"),
                what=f"the refusal of {key}",
            )
            notes.clear()
            assert isinstance(app.screen, QueueScreen)
        await assert_gate_refuses(FakeBackend.instances[-1], "cancel", "101")


async def test_writable_cluster_offers_cancel_and_submit(home, fake_backend):
    app = make_app(fake_cluster())
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: "hpc/101" in rows(app), what="rows")
        select_row(app, "hpc/101")
        active = await wait_for(
            pilot,
            lambda: (
                {"c", "s", "l"} <= (keys := {key for key, b in app.screen.active_bindings.items() if b.enabled})
                and keys
            ),
            what="cancel, submit and logs keys for the running job",
        )
        assert {"c", "s", "l"} <= active
        assert "job: cancel" in await palette_names(app)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirm")
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, QueueScreen), what="the confirmation closed")
        await pilot.pause()  # whatever the answer started has run
        assert FakeBackend.instances[-1].mutations == []  # declined: nothing sent


async def test_hostile_job_name_renders_as_plain_text(home, fake_backend):
    app = make_app(fake_cluster())
    async with app.run_test(size=(160, 30)) as pilot:
        backend = await wait_for(pilot, lambda: FakeBackend.instances and FakeBackend.instances[-1], what="backend")
        backend.jobs.append(
            backend.job("666", "x[0];rm -rf ~ \x1b[31mRED\x1b]0;title\x07[/] [bold]b", JobState.RUNNING)
        )
        app.request_refresh()
        await wait_for(pilot, lambda: "hpc/666" in rows(app), what="hostile row")
        await wait_for(pilot, lambda: "x[0];rm -rf ~ RED[/] [bold]b" in screen_text(app), what="the name as text")
        assert "\x1b" not in app.export_screenshot()
        select_row(app, "hpc/666")
        await pilot.press("enter")
        detail = await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen, what="detail")
        await wait_for(pilot, lambda: "Name:" in str(detail.query_one("#describe").render()), what="describe")
        assert "x[0];rm -rf ~ RED[/] [bold]b" in screen_text(app)


async def test_filter_keeps_matching_rows_and_escape_clears(home, fake_backend):
    app = make_app(fake_cluster())
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        await pilot.press("slash")
        await pilot.press(*"eval")
        assert rows(app) == ["hpc/102"]
        await pilot.press("enter")
        await refreshed(pilot, app)
        assert rows(app) == ["hpc/102"]  # a refresh keeps the filter
        await pilot.press("escape")
        assert len(rows(app)) == 3


async def test_rows_update_in_place_and_cursor_stays_on_its_job(home, fake_backend):
    app = make_app(fake_cluster())
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        select_row(app, "hpc/103")
        backend = FakeBackend.instances[-1]
        backend.jobs.insert(0, backend.job("100", "older", JobState.PENDING))
        from dataclasses import replace

        backend.jobs[1] = replace(backend.jobs[1], state=JobState.COMPLETED)
        app.request_refresh()
        await wait_for(pilot, lambda: len(rows(app)) == 4, what="new row")
        assert rows(app)[0] == "hpc/100"
        assert app.screen.selected_job().id == "103"
        table = app.screen.query_one(JobTable)
        assert table.cell_text("hpc/101", "state") == "completed"


async def test_a_failing_cluster_is_marked_and_the_app_keeps_running(home, fake_backend):
    app = make_app(fake_cluster("good"), fake_cluster("bad"))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: len(FakeBackend.instances) == 2, what="backends")
        bad = next(b for b in FakeBackend.instances if b.name == "bad")
        await wait_for(pilot, lambda: "bad/101" in rows(app), what="bad rows")
        bad.fail_reads = ConnectionError("connection refused")
        app.request_refresh("bad")
        await wait_for(pilot, lambda: app.hub.snapshots["bad"].health.value == "stale", what="stale")
        await wait_for(pilot, lambda: "bad stale" in screen_text(app), what="the header: one short state a cluster")
        assert "good/101" in rows(app) and "bad/101" in rows(app)  # last good data kept
        await pilot.press("5")  # the whole error is on the Clusters screen
        await wait_for(pilot, lambda: "connection refused" in screen_text(app), what="the error in full")


async def test_help_lists_keys_with_binding_ids(home, fake_backend):
    app = make_app(fake_cluster())
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: "hpc/101" in rows(app), what="rows")
        select_row(app, "hpc/101")
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        text = screen_text(app)
        for binding_id in ("cancel-job", "job-logs", "filter-jobs", "show-nodes", "refresh"):
            assert binding_id in text


async def test_keymap_from_config_remaps_a_binding(home, fake_backend):
    app = make_app(fake_cluster(), keymap={"cancel-job": "K"})  # (x is the Queue's job-shell)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: "hpc/101" in rows(app), what="rows")
        select_row(app, "hpc/101")
        await pilot.press("K")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirm via remapped key")
        await pilot.press("y")
        backend = FakeBackend.instances[-1]
        await wait_for(pilot, lambda: backend.mutations == [("cancel", "101")], what="cancel sent")


async def test_submit_form_shows_errors_inline_as_you_type(home, fake_backend):
    app = make_app(fake_cluster())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, SubmitScreen) and app.screen, what="submit")
        screen.query_one("#name", Input).value = "my job"
        screen.query_one("#command").text = "python train.py"
        screen.query_one("#gpus", Input).value = "two"
        await wait_for(
            pilot,
            lambda: (
                'resources.gpus: expected a whole number >= 0, got "two"' in str(screen.query_one("#errors").render())
            ),
            what="the error on gpus",
        )
        assert screen.query_one("#submit").disabled
        screen.query_one("#gpus", Input).value = "2"
        await wait_for(pilot, lambda: str(screen.query_one("#errors").render()) == "none", what="no errors")
        await wait_for(
            pilot,
            lambda: "command: python train.py" in str(screen.query_one("#preview").render()),
            what="preview (debounced)",
        )
        await pilot.press("ctrl+s")
        backend = FakeBackend.instances[-1]
        await wait_for(pilot, lambda: backend.mutations, what="submitted")
        assert backend.mutations[0][1].resources.gpus == 2
        await pilot.press("1", "3")  # the form survives switching screens
        assert screen.query_one("#name", Input).value == "my job"


async def test_submit_form_says_whether_the_request_fits_now(home, fake_backend):
    app = make_app(fake_cluster())
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.hub.snapshots["hpc"].nodes, what="nodes")
        await pilot.press("3")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, SubmitScreen) and app.screen, what="submit")
        capacity = lambda: str(screen.query_one("#capacity").render())  # noqa: E731
        screen.query_one("#gpus", Input).value = "4"  # the verdict shows before the name and command are in
        await wait_for(
            pilot, lambda: "fits now: 1 node in cluster hpc can take 4 GPUs now, 1 needed" in capacity(), what="fits"
        )
        assert "gpu: 0/2 whole nodes free, 4/16 GPUs free" in capacity()  # gpu02 is drained: not free
        screen.query_one("#gpus", Input).value = "8"
        await wait_for(
            pilot, lambda: "waits: 0 nodes in cluster hpc can take 8 GPUs now, 1 needed" in capacity(), what="waits"
        )
        screen.query_one("#name", Input).value = "my job"
        screen.query_one("#command").text = "python train.py"
        await wait_for(pilot, lambda: not screen.query_one("#submit").disabled, what="a job that waits can be sent")
        assert str(screen.query_one("#errors").render()) == "none"
        screen.query_one("#gpus", Input).value = "9"
        await wait_for(pilot, lambda: "never fits" in capacity(), what="never")
        # Never fitting is a problem: it is listed, and the form cannot be submitted.
        assert str(screen.query_one("#errors").render()) == "never fits: no node in cluster hpc has 9 GPUs (largest: 8)"
        assert screen.query_one("#submit").disabled
        await pilot.press("ctrl+s")
        await pilot.pause()  # the key handled: a submission, had one started, has reached the fake
        assert not FakeBackend.instances[-1].mutations


async def open_logs_of_101(app, pilot) -> LogsScreen:
    await wait_for(pilot, lambda: "hpc/101" in rows(app), what="rows")
    select_row(app, "hpc/101")
    await pilot.press("l")
    logs = await wait_for(pilot, lambda: isinstance(app.screen, LogsScreen) and app.screen, what="logs screen")
    await wait_for(pilot, lambda: len(log_lines(logs)) == 30, what="all lines")
    return logs


async def test_logs_pause_search_and_save(home, fake_backend, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = make_app(fake_cluster())
    async with app.run_test(size=(120, 20)) as pilot:
        logs = await open_logs_of_101(app, pilot)
        view = logs.pane.view
        assert logs.pane.following and view.following
        await pilot.press("p")
        assert not logs.pane.following and not view.following
        assert "PAUSED" in screen_text(app)
        await pilot.press("p")
        assert logs.pane.following

        await pilot.press("slash")
        await pilot.press(*"epoch 2", "enter")
        assert list(logs.pane.active_view.matches) == [2] + list(range(20, 30))  # "epoch 2" and "epoch 20".."epoch 29"
        assert logs.pane.active_view.match_index == 0 and not logs.pane.following  # jumping to a match pauses the tail
        assert "search 'epoch 2': 1/11" in screen_text(app)
        assert view.pattern.pattern == "epoch\\ 2" and view.current_line == 2
        await pilot.press("n")
        assert logs.pane.active_view.match_index == 1
        await pilot.press("N", "N")
        assert logs.pane.active_view.match_index == 10  # wraps around

        await pilot.press("w")
        await wait_for(pilot, lambda: app.screen.__class__.__name__ == "PromptScreen", what="save prompt")
        await pilot.press("enter")  # accept the default name
        saved = tmp_path / "hpc-101-train-resnet.log"
        await wait_for(pilot, lambda: saved.exists(), what="saved file")
        assert saved.read_text().splitlines() == [f"epoch {i} loss={1 / (i + 1):.3f}" for i in range(30)]
        assert saved.stat().st_mode & 0o777 == 0o600


async def test_palette_commands_run_their_actions(home, fake_backend):
    app = make_app(fake_cluster())
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: "hpc/101" in rows(app), what="rows")
        await pilot.press("ctrl+p")
        palette = await wait_for(
            pilot, lambda: isinstance(app.screen, CommandPalette) and app.screen, what="the command palette"
        )
        await pilot.press(*"nodes: show")
        await wait_for(pilot, lambda: palette.query_one(CommandList).option_count > 0, what="the command found")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.current_mode == "nodes", what="nodes mode via the palette")
        assert all(": " in name for name in await palette_names(app))


async def test_nodes_screen_marks_gpus_held_by_a_local_job(home, fake_nvml):
    fake_nvml.gpus(4, util=50)
    app = make_app(LOCAL)
    async with app.run_test(size=(160, 30)) as pilot:
        from dataclasses import replace

        backend = app.hub.backend("local")
        spec = load_spec(SAMPLES / "local-shell.yaml")
        job_id = await backend.submit(replace(spec, command="sleep 30", resources=replace(spec.resources, gpus=2)))
        try:
            await pilot.press("2")
            app.request_refresh()
            await wait_for(
                pilot,
                lambda: any(g.job_id == job_id for n in app.hub.snapshots["local"].nodes for g in n.gpus),
                what="allocated GPUs",
            )
            await wait_for(pilot, lambda: "■ 50 ■ 50 □ 50 □ 50" in screen_text(app), what="the held GPUs drawn")
            assert "local 0/1 whole free, 2/4 GPUs free" in screen_text(app)
        finally:
            await backend.cancel(job_id)


async def test_typing_in_the_submit_form_never_triggers_keys(home, fake_backend):
    """Letters and digits typed into the form stay text; escape leaves the field and keys work again."""
    app = make_app(fake_cluster())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, SubmitScreen) and app.screen, what="submit")
        path = str(SAMPLES / "local-shell.yaml")
        await wait_for(pilot, lambda: app.focused is screen.query_one("#cluster"), what="focus on the cluster")
        await pilot.press("ctrl+o")  # with no path yet: into the spec-file box
        await wait_for(pilot, lambda: app.focused is screen.query_one("#spec-path"), what="the file box")
        await pilot.press(*path, "enter")  # the path holds s, l, 1... which are keys elsewhere
        await wait_for(pilot, lambda: screen.query_one("#name", Input).value == "local-shell-demo", what="loaded")
        assert app.current_mode == "submit"
        assert screen.query_one("#spec-path", Input).value == path
        assert app.focused is screen.query_one("#cluster")  # out of the text fields: digits switch screens
        screen.query_one("#name", Input).focus()
        await pilot.press("1", "2")
        assert app.current_mode == "submit" and screen.query_one("#name", Input).value.endswith("12")
        await pilot.press("escape", "1")
        assert app.current_mode == "queue"
        assert FakeBackend.instances[-1].mutations == []


async def test_ctrl_o_after_a_load_goes_into_the_file_box(home, fake_backend, tmp_path):
    """With a file loaded, ctrl+o goes into the file box again (its text selected): the next path typed
    replaces it and loads, never running as keys (s, l, 1... of the path)."""
    first = str(SAMPLES / "local-shell.yaml")
    second = tmp_path / "second.yaml"
    second.write_text((SAMPLES / "local-shell.yaml").read_text().replace("local-shell-demo", "second-run"))
    app = make_app(fake_cluster())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, SubmitScreen) and app.screen, what="submit")
        box = screen.query_one("#spec-path", Input)
        await wait_for(pilot, lambda: app.focused is screen.query_one("#cluster"), what="focus on the cluster")
        await pilot.press("ctrl+o", *first, "enter")
        await wait_for(pilot, lambda: screen.query_one("#name", Input).value == "local-shell-demo", what="loaded")
        assert app.focused is screen.query_one("#cluster")
        await pilot.press("ctrl+o")
        await wait_for(pilot, lambda: app.focused is box, what="the file box again")
        await pilot.press(*str(second), "enter")
        await wait_for(pilot, lambda: screen.query_one("#name", Input).value == "second-run", what="the second loaded")
        assert box.value == str(second)
        assert app.current_mode == "submit"
        assert FakeBackend.instances[-1].mutations == []


# -- groups and extra actions -------------------------------------------------------------------------


@pytest.fixture
def actions_kind(register_backend):
    return register_backend(FakeActionsBackend)


def actions_cluster(name="det") -> ClusterConfig:
    return ClusterConfig(name, "fake-actions", refresh_seconds=0.5)


async def test_group_rows_start_collapsed_and_space_expands_them_in_natural_order(home, actions_kind):
    app = make_app(actions_cluster())
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_for(pilot, lambda: "det/104" in rows(app), what="rows")
        assert not [r for r in rows(app) if "104_" in r]
        assert "▸ 104" in screen_text(app) and "sweep (3)" in screen_text(app)
        select_row(app, "det/104")
        await pilot.press("e")
        await wait_for(pilot, lambda: "det/104_0" in rows(app), what="expanded")
        order = rows(app)
        assert order[order.index("det/104") :] == ["det/104", "det/104_0", "det/104_1", "det/104_10"]
        await wait_for(pilot, lambda: "└ 104_10" in screen_text(app), what="the group drawn open")
        assert "▾ 104" in screen_text(app)
        await refreshed(pilot, app)  # a refresh keeps the group open and the rows in place
        assert rows(app)[-4:] == ["det/104", "det/104_0", "det/104_1", "det/104_10"]
        select_row(app, "det/104_1")
        await pilot.press("e")  # from a child: collapse its group, cursor on the group row
        await wait_for(pilot, lambda: "det/104_1" not in rows(app), what="collapsed")
        assert app.screen.selected_job().id == "104"


async def test_filter_matching_a_task_shows_it_under_its_group(home, actions_kind):
    app = make_app(actions_cluster())
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_for(pilot, lambda: "det/104" in rows(app), what="rows")
        await pilot.press("slash")
        await pilot.press(*"sweep-10")
        await wait_for(pilot, lambda: rows(app) == ["det/104", "det/104_10"], what="filtered rows")
        await wait_for(pilot, lambda: "▾ 104" in screen_text(app), what="the group drawn open")


async def test_filter_cleared_shows_the_group_closed_again(home, actions_kind):
    app = make_app(actions_cluster())
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_for(pilot, lambda: "det/104" in rows(app), what="rows")
        before = rows(app)
        await pilot.press("slash")
        await pilot.press(*"sweep-10")
        await wait_for(pilot, lambda: rows(app) == ["det/104", "det/104_10"], what="filtered rows")
        await pilot.press("escape")
        await wait_for(pilot, lambda: rows(app) == before, what="every row again")
        await wait_for(pilot, lambda: "▸ 104" in screen_text(app), what="the group drawn closed")
        assert "▾ 104" not in screen_text(app)


async def test_actions_menu_confirms_then_performs_through_the_gate(home, actions_kind):
    app = make_app(actions_cluster())
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_for(pilot, lambda: "det/101" in rows(app), what="rows")
        select_row(app, "det/101")
        await pilot.press("a")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ChoiceScreen", what="choices")
        await pilot.press("down", "enter")  # the second verb: activate
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirm")
        assert "Activate job 101" in screen_text(app)
        await pilot.press("y")
        backend = FakeBackend.instances[-1]
        await wait_for(pilot, lambda: ("activate", "101") in backend.calls, what="perform")
        assert backend.mutations == [("activate", "101")]


async def test_read_only_has_no_actions_key_and_perform_is_refused(home, actions_kind):
    app = make_app(actions_cluster(), read_only=True)
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_for(pilot, lambda: "det/101" in rows(app), what="rows")
        select_row(app, "det/101")
        await pilot.pause()  # the highlight handled: the bindings follow the selected job
        assert "a" not in {k for k, b in app.screen.active_bindings.items() if b.enabled and b.binding.show}
        assert "job: actions" not in await palette_names(app)
        notes: list[str] = []
        notify = app.notify
        app.notify = lambda message, *args, **kwargs: (notes.append(message), notify(message, *args, **kwargs))[1]
        await pilot.press("a")
        await wait_for(
            pilot,
            lambda: notes == ["read-only: job actions refused (--read-only / read_only: true)"],
            what="the refusal",
        )
        assert isinstance(app.screen, QueueScreen)
        await assert_gate_refuses(FakeBackend.instances[-1], "perform", "101", "pause")


async def test_logs_of_a_multi_rank_job_are_prefixed_and_filter_to_one_rank(home, actions_kind):
    app = make_app(actions_cluster())
    async with app.run_test(size=(140, 30)) as pilot:
        logs = await open_from_row(pilot, app, "det/104", "l", LogsScreen)
        await wait_for(pilot, lambda: len(log_lines(logs)) == 8, what="lines")
        assert log_lines(logs, 0, 2) == ["rank 0 │ step 0 from rank 0", "rank 1 │ step 0 from rank 1"]
        await pilot.press("f")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ChoiceScreen", what="rank choice")
        await pilot.press("down", "down", "enter")  # all, rank 0, rank 1
        await wait_for(pilot, lambda: logs.pane.source_filter == "rank 1", what="filter")
        assert log_lines(logs) == [f"step {i} from rank 1" for i in range(4)]
        await wait_for(pilot, lambda: "only rank 1" in screen_text(app), what="the filter shown")
        logs.pane.set_source_filter(None)
        assert len(log_lines(logs)) == 8


async def test_job_detail_plots_metrics_lists_checkpoints_and_downloads_one(home, actions_kind, tmp_path):
    app = make_app(actions_cluster())
    async with app.run_test(size=(140, 70)) as pilot:
        await wait_for(pilot, lambda: "det/104" in rows(app), what="rows")
        select_row(app, "det/104")
        await pilot.press("e")
        await wait_for(pilot, lambda: "det/104_1" in rows(app), what="expanded")
        select_row(app, "det/104_1")
        await pilot.press("enter")
        detail = await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen, what="detail")
        await wait_for(pilot, lambda: detail.checkpoint_list and detail.metric_points, what="metrics and checkpoints")
        text = await wait_for(pilot, lambda: "ckpt-aaa" in (t := screen_text(app)) and t, what="the checkpoints drawn")
        assert "training.loss (last 0.01099)" in text and "validation.accuracy (last 1)" in text
        assert "ckpt-aaa" in text and "4.0 KiB" in text and "accuracy=0.9" in text
        await pilot.press("d")
        prompt = await wait_for(pilot, lambda: prompt_ready(app), what="prompt")
        prompt.query_one(Input).value = str(tmp_path / "dl")
        await pilot.press("enter")
        await wait_for(pilot, lambda: (tmp_path / "dl" / "state.bin").exists(), what="download")
        await wait_for(pilot, lambda: detail.query_one("#download").progress == 4096, what="progress shown")


def prompt_open(app) -> bool:
    return type(app.screen).__name__ == "PromptScreen"


async def test_a_cluster_that_needs_a_password_asks_once_and_a_failed_login_never_reopens_it(
    home, register_backend, caplog
):
    import logging

    caplog.set_level(logging.DEBUG)
    register_backend(FakeLoginBackend)
    app = make_app(ClusterConfig("det", "fake-login", refresh_seconds=0.5))
    async with app.run_test(size=(120, 30)) as pilot:
        prompt = await wait_for(pilot, lambda: prompt_ready(app), what="password prompt")  # (its Input mounted)
        await wait_for(pilot, lambda: "Password for alice on det" in screen_text(app), what="the prompt drawn")
        assert "det login needed" in screen_text(app)
        box = prompt.query_one(Input)
        assert box.password
        box.value = "wrong"
        await pilot.press("enter")
        backend = app.hub.backend("det")
        await wait_for(pilot, lambda: backend.attempts == ["bad"], what="first attempt")
        reads = backend.reads
        await refreshed(pilot, app)  # its snapshot reaches the app (the old code reopened the prompt here)
        assert backend.reads > reads
        assert not prompt_open(app)  # never reopened by itself, so the next key is not swallowed
        await pilot.press("2")
        await wait_for(pilot, lambda: app.current_mode == "nodes", what="the key went to the app")
        await pilot.press("5")
        await wait_for(pilot, lambda: app.current_mode == "clusters", what="Clusters screen")
        await wait_for(pilot, lambda: "l: log in as alice" in screen_text(app), what="the login hint")
        await pilot.press("l")
        await wait_for(pilot, lambda: prompt_open(app), what="asked on request")
        app.screen.query_one(Input).value = FakeLoginBackend.PASSWORD
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.hub.snapshots["det"].jobs, what="jobs after login")
        assert backend.attempts == ["bad", "ok"]
        assert app.hub.snapshots["det"].login_user == ""
        assert FakeLoginBackend.PASSWORD not in screen_text(app)
    assert FakeLoginBackend.PASSWORD not in caplog.text


async def test_a_login_that_expires_later_says_login_needed_without_prompting(home, register_backend):
    register_backend(FakeLoginBackend)
    app = make_app(ClusterConfig("det", "fake-login", refresh_seconds=0.5))
    async with app.run_test(size=(120, 30)) as pilot:
        box = await wait_for(
            pilot,
            lambda: prompt_open(app) and app.screen.query(Input) and app.screen.query_one(Input),
            what="password prompt",
        )
        box.value = FakeLoginBackend.PASSWORD
        await pilot.press("enter")
        await wait_for(pilot, lambda: "det/101" in rows(app), what="rows after login")
        backend = app.hub.backend("det")
        backend.logged_in = False  # the token expired on the master
        await wait_for(pilot, lambda: app.hub.snapshots["det"].login_user, what="login needed again")
        reads = backend.reads
        await refreshed(pilot, app)  # another refresh, its snapshot handled by the app
        assert backend.reads > reads
        assert not prompt_open(app)
        assert "det login needed" in screen_text(app)
        await app.run_action("app.show('clusters')")
        await wait_for(pilot, lambda: app.current_mode == "clusters", what="Clusters screen")
        await pilot.press("l")
        await wait_for(pilot, lambda: prompt_open(app), what="asked on request")


async def test_all_users_in_the_config_reaches_backends_that_filter_on_the_server(home, actions_kind):
    config = Config(clusters=(actions_cluster(),), all_users=True)
    app = YanflowApp(config, Hub(config))
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_for(pilot, lambda: "det/105" in rows(app), what="bob's job shown")
        assert app.hub.backend("det").all_users_calls[:1] == [True]


async def test_the_queue_shows_my_jobs_and_u_switches_to_everyones(home, actions_kind):
    app = make_app(actions_cluster())
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_for(pilot, lambda: "det/101" in rows(app), what="rows")
        assert "det/105" not in rows(app)  # bob's
        await wait_for(pilot, lambda: "  mine" in screen_text(app), what="mine shown")
        await pilot.press("u")
        await wait_for(pilot, lambda: "det/105" in rows(app), what="bob's job")
        assert FakeBackend.instances[-1].all_users_calls == [False, True]  # told "mine" at start
        await wait_for(pilot, lambda: "all users" in screen_text(app), what="all users shown")
        await pilot.press("u")
        await wait_for(pilot, lambda: "det/105" not in rows(app), what="mine again")
        assert FakeBackend.instances[-1].all_users_calls == [False, True, False]


async def test_a_group_detail_lists_its_members_by_what_differs_and_sorts_them(home, actions_kind):
    app = make_app(actions_cluster())
    async with app.run_test(size=(140, 50)) as pilot:
        detail = await open_from_row(pilot, app, "det/104", "enter", JobDetailScreen)
        table = detail.query_one("#members")
        await wait_for(pilot, lambda: table.row_count == 3, what="members")
        assert table.labels == ["ID", "STATE", "REASON", "hp.lr", "Best validation"]  # "Experiment" is the same
        assert table.column_values("ID") == ["104_0", "104_1", "104_10"]
        for _ in range(5):  # o: ID, STATE, REASON, hp.lr, Best validation
            await pilot.press("o")
        assert table.column_values("Best validation") == ["loss=0.2", "loss=0.5", "loss=0.9"]
        await pilot.press("O")
        assert table.column_values("ID") == ["104_10", "104_0", "104_1"]
        await pilot.press("o", "o", "o", "o")  # wraps to hp.lr, still reversed: numbers, not text
        assert table.column_values("hp.lr") == ["0.1", "0.01", "0.001"]


async def test_a_read_only_clusters_cancel_key_says_why(home, fake_backend):
    app = make_app(
        ClusterConfig("hpc", "fake", refresh_seconds=3600, read_only=True),
        ClusterConfig("lab", "fake", refresh_seconds=3600),
    )
    notes: list[str] = []
    notify = app.notify
    app.notify = lambda message, *args, **kwargs: (notes.append(message), notify(message, *args, **kwargs))[1]
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: "hpc/101" in rows(app) and "lab/101" in rows(app), what="rows")
        assert not app.read_only
        select_row(app, "hpc/101")
        await pilot.pause()  # the highlight handled before the key
        await pilot.press("c")
        await wait_for(
            pilot, lambda: "read-only: cancel refused (the cluster is read_only: true)" in notes, what="the refusal"
        )
        assert isinstance(app.screen, QueueScreen)
        select_row(app, "lab/101")
        await pilot.pause()  # the highlight handled before the key
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="lab's job: the confirmation")


async def test_the_clusters_lists_ages_are_the_headers_and_tick_with_it(home, fake_backend):
    """The Clusters list draws its ages at the header's time (``header_time``: the last refresh's, moved on
    once a minute), so a screen shown again draws alike; when that time moves on while the list is shown,
    the list moves with the header (issue #32)."""
    now = [time.time()]  # (a snapshot's time is the wall clock's)
    app = make_app(fake_cluster(refresh_seconds=3600))
    app.clock = lambda: now[0]  # type: ignore[method-assign]
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: "hpc/101" in rows(app), what="rows")
        await pilot.press("5")
        await wait_for(pilot, lambda: "last good refresh 0s ago" in screen_text(app), what="the list")
        now[0] += 30  # (no tick: the header's time is still the refresh's)
        await pilot.press("1", "5")
        await wait_for(pilot, lambda: app.screen.TITLE_TEXT == "Clusters", what="Clusters again")
        assert "last good refresh 0s ago" in screen_text(app) and "hpc 0s" in screen_text(app)
        now[0] += 40  # a minute since the refresh: the header's time moves on, the list with it
        app._tick()
        await wait_for(pilot, lambda: "last good refresh 1m ago" in screen_text(app), what="the list's age ticked")
        assert "hpc 1m" in screen_text(app)
