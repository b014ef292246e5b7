"""Pilot tests of the Logs screen: panes per job, split by rank, follow/pause, search, wrap, save,
error jumps and spilled logs, against the fake backend and the real local backend."""

from __future__ import annotations

import asyncio
import functools
import os
import stat
from dataclasses import replace

import pytest
from fakes.backend import FakeActionsBackend
from paths import SAMPLES
from textual import events
from textual.widgets import Input
from uihelpers import log_lines, make_app, prompt_ready, refreshed, screen_text
from waiting import async_wait_until, wait_for

from yanflow_tui import keys, logstore
from yanflow_tui.config import ClusterConfig
from yanflow_tui.logstore import LogStore
from yanflow_tui.model import JobState, LogLine
from yanflow_tui.screens.dialogs import ConfirmScreen
from yanflow_tui.screens.logs import pane as log_pane
from yanflow_tui.screens.logs.pane import LogPane
from yanflow_tui.screens.logs.screen import LogsScreen
from yanflow_tui.screens.models import warming
from yanflow_tui.screens.queue import QueueScreen
from yanflow_tui.screens.widgets.logview import LogView
from yanflow_tui.screens.widgets.status_line import StatusLine
from yanflow_tui.spec import load_spec


class StreamingBackend(FakeActionsBackend):
    """The fake whose jobs' logs the test feeds line by line (``None`` ends a log)."""

    kind = "fake-stream"

    def __init__(self, config):
        super().__init__(config)
        self.feeds: dict[str, asyncio.Queue] = {}

    def feed(self, job_id: str, *lines: str, source: str = "") -> None:
        queue = self.feeds.setdefault(job_id, asyncio.Queue())
        for line in lines:
            queue.put_nowait(None if line is None else (source, line))

    async def stream_logs(self, job_id, follow=False, stream=""):
        if job_id not in self.feeds:
            async for line in super().stream_logs(job_id, follow):
                yield line
            return
        queue = self.feeds[job_id]
        while (item := await queue.get()) is not None:
            yield LogLine(job_id, item[1], item[0])


@pytest.fixture
def stream_kind(register_backend):
    return register_backend(StreamingBackend)


@pytest.fixture
def small_stores(monkeypatch):
    """Stores that spill after a few hundred lines, so tests reach the disk quickly."""
    monkeypatch.setattr(log_pane, "LogStore", functools.partial(LogStore, keep_lines=256))
    monkeypatch.setattr(logstore, "SPILL_LINES", 128)
    monkeypatch.setattr(log_pane, "RANK_KEEP_LINES", 128)


def cluster() -> ClusterConfig:
    return ClusterConfig("hpc", "fake-stream", refresh_seconds=0.5)


async def open_logs(app, pilot, *job_ids: str) -> LogsScreen:
    """Open a pane for each job (as the queue's ``l`` does); the Logs screen."""
    await wait_for(pilot, lambda: app.hub.snapshots["hpc"].jobs, what="jobs")
    for job_id in job_ids:
        app.open_logs(app.hub.find_job("hpc", job_id))
        logs = await wait_for(pilot, lambda: isinstance(app.screen, LogsScreen) and app.screen, what="logs screen")
        await wait_for(
            pilot,
            lambda logs=logs, job_id=job_id: (
                logs.pane is not None and logs.pane.job.id == job_id and logs.pane.view.size.height > 0
            ),
            what=f"pane of {job_id}",
        )
    return logs


def backend(app) -> StreamingBackend:
    return app.hub.backend("hpc")


async def log_of_101(app, pilot) -> tuple[StreamingBackend, LogsScreen, LogPane]:
    """Job 101's log open in a pane, its first line ("first") in: the backend, the Logs screen, the pane."""
    fake = backend(app)
    await wait_for(pilot, lambda: fake.jobs, what="jobs")
    fake.feed("101", "first")
    logs = await open_logs(app, pilot, "101")
    pane = logs.pane
    assert pane is not None
    await wait_for(pilot, lambda: len(pane.store) == 1, what="the first line")
    return fake, logs, pane


def row_texts(view: LogView) -> list[str]:
    """What each screen row of ``view`` shows, as plain text."""
    return [
        strip.text.rstrip() for strip in (view.render_line(y) for y in range(view.scrollable_content_region.height))
    ]


async def test_two_jobs_get_two_panes_that_switch_and_close(home, stream_kind):
    app = make_app(cluster())
    async with app.run_test(size=(120, 30)) as pilot:
        logs = await open_logs(app, pilot, "101", "104")
        assert [pane.job.id for pane in logs.panes] == ["101", "104"]
        assert logs.pane.job.id == "104"
        await wait_for(pilot, lambda: app.focused is logs.pane.view, what="the new pane's view focused")
        await wait_for(pilot, lambda: logs.panes[0].line_count == 30 and logs.panes[1].line_count == 8, what="lines")
        text = screen_text(app)
        assert "hpc/101 train-resnet" in text and "hpc/104 sweep" in text  # one tab each
        assert "rank 0 │ step 0 from rank 0" in text

        await pilot.press("right_square_bracket")
        await wait_for(pilot, lambda: logs.pane.job.id == "101", what="next pane")
        await wait_for(pilot, lambda: "epoch 29 loss=0.033" in screen_text(app), what="101 shown")
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: logs.pane.job.id == "104", what="previous pane")

        app.open_logs(app.hub.find_job("hpc", "101"))  # an open job's pane comes to the front, no new pane
        await wait_for(pilot, lambda: logs.pane.job.id == "101", what="existing pane shown")
        assert len(logs.panes) == 2 and backend(app).calls.count(("stream_logs", "101")) == 1

        await pilot.press("x")
        await wait_for(
            pilot, lambda: [p.job.id for p in logs.panes] == ["104"] and logs.pane.job.id == "104", what="pane closed"
        )
        assert len(app.screen.query(LogPane)) == 1
        await pilot.press("x")
        await wait_for(pilot, lambda: not logs.panes and "No job selected" in screen_text(app), what="no panes")


async def test_split_by_rank_shows_one_view_per_rank_side_by_side(home, stream_kind):
    app = make_app(cluster())
    async with app.run_test(size=(160, 30)) as pilot:
        fake = backend(app)
        await wait_for(pilot, lambda: fake.jobs, what="jobs")
        fake.ranked_logs["104"] += [(f"rank {r}", f"late line of rank {r}") for r in range(2, 6)]
        logs = await open_logs(app, pilot, "104")
        pane = logs.pane
        await wait_for(pilot, lambda: pane.line_count == 12, what="lines")
        assert pane.sources == [f"rank {r}" for r in range(6)]
        await pilot.press("s")
        await wait_for(
            pilot, lambda: len(pane.views) == 6 and all(v.size.height for v in pane.views[:4]), what="rank views"
        )
        assert pane.split and not pane.view.display
        assert [v.border_title for v in pane.views] == [f"rank {r}" for r in range(6)]
        assert row_texts(pane.views[1])[:5] == [f"step {i} from rank 1" for i in range(4)] + [""]
        assert row_texts(pane.views[4])[0] == "late line of rank 4"
        first, fourth, fifth = (pane.views[i].region for i in (0, 3, 4))
        assert first.y == fourth.y and first.x < fourth.x and fourth.right <= 160  # four side by side
        assert fifth.x >= fourth.right  # the rest scroll sideways
        assert "6 ranks side by side" in screen_text(app)
        await pilot.press("tab")
        await wait_for(pilot, lambda: pane.active_view is pane.views[1], what="focus moves to rank 1")
        await wait_for(pilot, lambda: "4 lines" in screen_text(app), what="status of rank 1's view")

        await pilot.press("s")
        await wait_for(
            pilot, lambda: not pane.split and pane.view.display and not pane.rank_views.children, what="joined"
        )
        assert len(log_lines(pane)) == 12


async def test_follow_sticks_to_the_tail_and_pause_holds_the_view(home, stream_kind):
    app = make_app(cluster())
    async with app.run_test(size=(100, 24)) as pilot:
        fake = backend(app)
        await wait_for(pilot, lambda: fake.jobs, what="jobs")
        fake.feed("101", *(f"line {i}" for i in range(200)))
        logs = await open_logs(app, pilot, "101")
        view = logs.pane.view
        await wait_for(pilot, lambda: len(view.store) == 200 and view.top_line > 0, what="first lines")
        height = view.scrollable_content_region.height
        await wait_for(pilot, lambda: view.top_line == 200 - height, what="at the tail")
        assert row_texts(view)[-1] == "line 199"

        await pilot.press("p")
        assert not view.following and "PAUSED" in screen_text(app)
        fake.feed("101", *(f"line {i}" for i in range(200, 400)))
        await wait_for(pilot, lambda: len(view.store) == 400, what="more lines")
        await wait_for(pilot, lambda: view.max_scroll_y >= 400 - height, what="the view grown to hold them")
        assert view.top_line == 200 - height  # paused: the view stays put

        await pilot.press("p")
        await wait_for(pilot, lambda: view.top_line == 400 - height, what="back at the tail")
        fake.feed("101", *(f"line {i}" for i in range(400, 450)))
        await wait_for(pilot, lambda: view.top_line == 450 - height, what="following again")
        assert "following" in screen_text(app)


async def test_search_highlights_matches_and_steps_through_them(home, stream_kind):
    app = make_app(cluster())
    async with app.run_test(size=(100, 40)) as pilot:
        logs = await open_logs(app, pilot, "101")
        view = logs.pane.view
        await wait_for(pilot, lambda: len(view.store) == 30, what="lines")
        await pilot.press("slash", *"EPOCH 2", "enter")
        assert list(view.matches) == [2] + list(range(20, 30)) and view.current_line == 2
        match_bg = view.get_component_rich_style("logview--match", partial=True).bgcolor
        current_bg = view.get_component_rich_style("logview--current-match", partial=True).bgcolor
        assert match_bg and current_bg and match_bg != current_bg

        def backgrounds(line: int) -> dict[str, object]:
            strip = view.render_line(line - view.top_line)
            return {segment.text: segment.style and segment.style.bgcolor for segment in strip if segment.text.strip()}

        assert backgrounds(2)["epoch 2"] == current_bg  # the current match
        assert backgrounds(21)["epoch 2"] == match_bg  # another match
        assert match_bg not in backgrounds(3).values() and current_bg not in backgrounds(3).values()
        await pilot.press("n")
        assert view.match_index == 1 and view.current_line == 20
        assert backgrounds(20)["epoch 2"] == current_bg and backgrounds(2)["epoch 2"] == match_bg
        await pilot.press("N", "N")
        assert view.match_index == 10 and view.current_line == 29
        assert "search 'EPOCH 2': 11/11" in screen_text(app)

        await pilot.press("slash", *"no such text", "enter")
        assert not view.matches and "no match" in screen_text(app)
        assert app.screen.check_action("next_match", ()) is None  # n is shown disabled


async def test_wrap_spreads_a_long_line_over_several_screen_rows(home, stream_kind):
    app = make_app(cluster())
    async with app.run_test(size=(80, 24)) as pilot:
        fake = backend(app)
        await wait_for(pilot, lambda: fake.jobs, what="jobs")
        long_line = "".join(f"<{i:03d}>" for i in range(100))  # 500 characters
        fake.feed("101", "first", long_line, "last")
        logs = await open_logs(app, pilot, "101")
        view = logs.pane.view
        await wait_for(pilot, lambda: len(view.store) == 3, what="lines")
        assert view.row_count(1) == 1
        assert row_texts(view)[:3] == ["first", long_line[: view.scrollable_content_region.width], "last"]
        assert "<099>" not in screen_text(app)

        await pilot.press("z")
        width = view.scrollable_content_region.width
        await wait_for(pilot, lambda: view.wrap and view.scrollable_content_region.width == width, what="wrapped")
        rows = -(-500 // width)
        assert view.row_count(1) == rows > 1
        shown = row_texts(view)
        assert shown[0] == "first" and shown[rows + 1] == "last"
        assert "".join(shown[1 : rows + 1]) == long_line
        assert "<099>" in screen_text(app) and "wrap" in screen_text(app)

        await pilot.press("z")
        await wait_for(pilot, lambda: not view.wrap, what="unwrapped")
        assert view.row_count(1) == 1 and row_texts(view)[2] == "last"


async def test_wrap_scrolls_row_by_row_through_a_line_taller_than_the_view(home, stream_kind):
    app = make_app(cluster())
    async with app.run_test(size=(60, 20)) as pilot:
        fake = backend(app)
        await wait_for(pilot, lambda: fake.jobs, what="jobs")
        fake.feed(
            "101",
            *(f"before {i}" for i in range(50)),
            "".join(f"[{i:04d}]" for i in range(600)),
            *(f"after {i}" for i in range(50)),
        )
        logs = await open_logs(app, pilot, "101")
        view = logs.pane.view
        await wait_for(pilot, lambda: len(view.store) == 101, what="lines")
        await pilot.press("z")
        await wait_for(pilot, lambda: view.wrap and row_texts(view)[-1] == "after 49", what="wrapped at the tail")
        height = view.scrollable_content_region.height
        seen = []
        for _ in range(400):  # scroll up a row at a time (as the mouse wheel does) through the long line
            view.scroll_relative(y=-1, animate=False)
            seen.append(row_texts(view)[0])
            if seen[-1] == "before 40":
                break
        tall = [row for row in seen if not row.startswith(("before", "after"))]
        assert "".join(reversed(tall)) == "".join(f"[{i:04d}]" for i in range(600))  # every row, once
        assert height < len(tall)
        await pilot.press("end")
        await wait_for(pilot, lambda: row_texts(view)[-1] == "after 49", what="back at the bottom")


async def test_save_writes_the_whole_spilled_log_with_mode_0600(home, stream_kind, small_stores, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = make_app(cluster())
    notes: list[str] = []
    notify = app.notify
    app.notify = lambda message, *args, **kwargs: (notes.append(message), notify(message, *args, **kwargs))[1]
    async with app.run_test(size=(100, 24)) as pilot:
        fake = backend(app)
        await wait_for(pilot, lambda: fake.jobs, what="jobs")
        lines = [f"line {i} " + "é" * (i % 7) for i in range(5_000)]
        fake.feed("101", *lines, None)
        logs = await open_logs(app, pilot, "101")
        store = logs.pane.store
        await wait_for(pilot, lambda: len(store) == 5_000 and logs.pane.ended, what="all lines")
        await asyncio.to_thread(store.sync)
        assert store.spilled > 4_000 and store.in_memory < 1_000
        await pilot.press("w")
        prompt = await wait_for(pilot, lambda: prompt_ready(app), what="save prompt")
        saved = tmp_path / "hpc-101-train-resnet.log"  # named after the job, in the current directory
        assert prompt.query_one(Input).value == str(saved)
        await pilot.press("enter")
        await wait_for(pilot, lambda: saved.exists(), what="saved file")
        await wait_for(pilot, lambda: f"saved 5000 lines to {saved}" in notes, what="the toast with the full path")
        assert saved.read_text(encoding="utf-8").splitlines() == lines
        assert stat.S_IMODE(saved.stat().st_mode) == 0o600


async def spilled_view(app, pilot):
    """Job 101's pane after 3,000 lines, most of them spilled to disk (``small_stores``)."""
    fake = backend(app)
    await wait_for(pilot, lambda: fake.jobs, what="jobs")
    fake.feed("101", *(f"line {i}" for i in range(3_000)))
    logs = await open_logs(app, pilot, "101")
    view = logs.pane.view
    await wait_for(pilot, lambda: len(view.store) == 3_000, what="lines")
    await asyncio.to_thread(view.store.sync)
    assert view.store.spilled > 2_000
    return view


async def test_a_spilled_pane_shows_the_right_lines_when_scrolled_to_the_top(home, stream_kind, small_stores):
    app = make_app(cluster())
    async with app.run_test(size=(100, 24)) as pilot:
        view = await spilled_view(app, pilot)
        await pilot.press("home")
        await wait_for(pilot, lambda: view.top_line == 0, what="top")
        await wait_for(pilot, lambda: "line 0" in screen_text(app), what="the first lines drawn")
        assert row_texts(view)[:3] == ["line 0", "line 1", "line 2"]
        view.scroll_to(y=1_234, animate=False)
        await wait_for(pilot, lambda: view.top_line == 1_234, what="middle")
        assert row_texts(view)[0] == "line 1234"


async def test_search_of_a_spilled_log_keeps_up_with_new_lines(home, stream_kind, small_stores):
    app = make_app(cluster())
    async with app.run_test(size=(100, 24)) as pilot:
        view = await spilled_view(app, pilot)
        await pilot.press("slash", *"line 29", "enter")  # the spilled part is searched in a thread
        expected = [29] + list(range(290, 300)) + list(range(2_900, 3_000))
        await wait_for(pilot, lambda: not view.scanning and list(view.matches) == expected, what="matches")
        assert view.current_line == 29 and view.top_line <= 29 < view.top_line + 20  # jumped to the first
        backend(app).feed("101", "line 29 again", "unrelated")
        await wait_for(pilot, lambda: len(view.store) == 3_002, what="new lines")
        assert list(view.matches) == expected + [3_000]
        assert "search 'line 29': 1/112" in screen_text(app)


async def fed_view(app, pilot, special: dict[int, str], total: int, *extra: tuple[str, str]) -> LogView:
    """Job 101's view once it holds ``total`` lines (``special`` ones at their numbers, "line N" the
    others), then each (source, text) of ``extra``."""
    fake = backend(app)
    await wait_for(pilot, lambda: fake.jobs, what="jobs")
    fake.feed("101", *(special.get(i, f"line {i}") for i in range(total)))
    for source, text in extra:
        fake.feed("101", text, source=source)
    logs = await open_logs(app, pilot, "101")
    view = logs.pane.view
    await wait_for(pilot, lambda: len(view.store) == total + len(extra), what="lines")
    return view


async def test_error_keys_jump_to_error_and_traceback_lines(home, stream_kind, small_stores):
    app = make_app(cluster())
    async with app.run_test(size=(100, 24)) as pilot:
        special = {
            100: "MyErrorHandler set up",
            700: "an error occurred",
            1_500: "errors are fine",
            2_000: "Traceback (most recent call last):",
            2_500: "ERROR: disk full",
        }
        view = await fed_view(app, pilot, special, 3_000)
        await asyncio.to_thread(view.store.sync)
        assert view.store.spilled > 700  # the first error is read back from disk (in a thread)
        for expected in (700, 2_000, 2_500):
            await pilot.press("e")
            await wait_for(
                pilot, lambda expected=expected: view.current_line == expected, what=f"error line {expected}"
            )
            assert not view.following
            assert special[expected] in row_texts(view)
        await pilot.press("E")
        await wait_for(pilot, lambda: view.current_line == 2_000, what="previous error")
        await pilot.press("e", "e")
        await wait_for(pilot, lambda: view.current_line == 700, what="wrapped to the first error")


async def test_error_keys_find_exception_lines_cuda_nccl_killed_and_oom(home, stream_kind):
    """e and E stop at Python exception lines (at the line's start or after a rank prefix), CUDA and
    NCCL errors, Killed and OOM, as well as lines saying error; other lines are passed over."""
    app = make_app(cluster())
    async with app.run_test(size=(100, 24)) as pilot:
        special = {
            10: "RuntimeError: CUDA out of memory",
            20: "MyErrorHandler set up",  # not an exception line
            30: "ValueError: bad shape",
            40: "1: KeyError: 'lr'",  # srun --label
            50: "[rank1]: torch.distributed.DistBackendError: NCCL timeout",
            60: "Exception: something broke",
            70: "CUDA_ERROR_LAUNCH_FAILED in kernel",
            80: "NCCL WARN NCCL_ERROR_SYSTEM",
            90: "/bin/sh: line 1: 1234 Killed    python train.py",
            100: "worker 3 OOM",
            110: "terrors of the deep",  # not an error
        }
        after_rank = ("rank 1", "ZeroDivisionError: division by zero")  # after the pane's rank prefix
        view = await fed_view(app, pilot, special, 120, after_rank)
        view.set_following(False)
        view.go_to_line(0, center=False)
        await wait_for(pilot, lambda: view.top_line == 0, what="the top")
        found = []
        for _ in range(10):
            before = view.error_line
            await pilot.press("e")
            await wait_for(pilot, lambda before=before: view.error_line != before, what="the next error")
            found.append(view.current_line)
        assert found == [10, 30, 40, 50, 60, 70, 80, 90, 100, 120]
        await pilot.press("E")
        await wait_for(pilot, lambda: view.current_line == 100, what="the error before")


async def test_save_names_each_stream_and_asks_before_replacing_a_file(home, register_backend, tmp_path, monkeypatch):
    """The stderr pane and the stdout pane offer two names; a name that is taken is replaced only on yes."""

    class TwoStreams(StreamingBackend):
        kind = "fake-two-streams"

        async def log_streams(self, job_id):
            return ("", "stderr")

        async def stream_logs(self, job_id, follow=False, stream=""):
            yield LogLine(job_id, f"{stream or 'stdout'} line")

    register_backend(TwoStreams)
    monkeypatch.chdir(tmp_path)
    app = make_app(ClusterConfig("hpc", "fake-two-streams", refresh_seconds=0.5))
    async with app.run_test(size=(120, 24)) as pilot:
        logs = await open_logs(app, pilot, "101")
        assert [pane.stream_name for pane in logs.panes] == ["stdout", "stderr"]
        names = {}
        for pane in logs.panes:
            logs._activate(pane)
            await wait_for(pilot, lambda pane=pane: len(pane.store) == 1, what="the line")
            assert f"train-resnet  1 lines  {pane.stream_name}  " in screen_text(app)  # the status says which
            await pilot.press("w")
            prompt = await wait_for(pilot, lambda: prompt_ready(app), what="save prompt")
            names[pane.stream_name] = path = prompt.query_one(Input).value
            await pilot.press("enter")
            await wait_for(pilot, lambda path=path: os.path.exists(path), what="saved")
        assert names == {
            "stdout": str(tmp_path / "hpc-101-train-resnet-stdout.log"),
            "stderr": str(tmp_path / "hpc-101-train-resnet-stderr.log"),
        }
        stderr = tmp_path / "hpc-101-train-resnet-stderr.log"
        assert stderr.read_text() == "stderr line\n"
        logs._activate(logs.panes[0])  # the stdout pane saved over the stderr file: asked first, each time
        for answer, kept in (("n", "stderr line\n"), ("y", "stdout line\n")):
            await pilot.press("w")
            prompt = await wait_for(pilot, lambda: prompt_ready(app), what="save prompt")
            prompt.query_one(Input).value = str(stderr)
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="asked before replacing")
            await pilot.press(answer)
            await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="answered")
            await wait_for(pilot, lambda kept=kept: stderr.read_text() == kept, what=f"the file after {answer}")
            await pilot.pause()
            assert stderr.read_text() == kept


async def ranked_pane(app, pilot) -> tuple[LogsScreen, LogPane]:
    """Job 104's pane (two ranks, 8 lines) with every line in: the Logs screen and the pane."""
    logs = await open_logs(app, pilot, "104")
    pane = logs.pane
    assert pane is not None
    await wait_for(pilot, lambda: pane.line_count == 8, what="lines")
    return logs, pane


async def test_the_status_always_says_the_stream_and_the_ranks(home, stream_kind):
    """merged, all ranks; only rank 1 after f."""
    app = make_app(cluster())
    async with app.run_test(size=(140, 24)) as pilot:
        logs, pane = await ranked_pane(app, pilot)
        await wait_for(pilot, lambda: "8 lines  merged, all ranks  " in screen_text(app), what="stream and ranks")
        await pilot.press("f")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ChoiceScreen", what="rank choice")
        await pilot.press("down", "down", "enter")  # all, rank 0, rank 1
        await wait_for(pilot, lambda: "4 lines  merged, only rank 1  " in screen_text(app), what="the filter said")


async def test_split_after_a_rank_filter_shows_every_rank_and_says_so(home, stream_kind):
    """f (rank 1) then s: split shows every rank and clears the filter; the status says so, not "only"."""
    app = make_app(cluster())
    async with app.run_test(size=(140, 24)) as pilot:
        logs, pane = await ranked_pane(app, pilot)
        pane.set_source_filter("rank 1")
        logs._changed()
        await wait_for(pilot, lambda: "only rank 1" in screen_text(app), what="the filter said")
        await pilot.press("s")
        await wait_for(pilot, lambda: pane.split and len(pane.views) == 2, what="split")
        await wait_for(pilot, lambda: "2 ranks side by side" in screen_text(app), what="split said")
        assert "only rank 1" not in screen_text(app) and pane.source_filter is None
        await pilot.press("s")
        await wait_for(pilot, lambda: not pane.split, what="joined")
        await wait_for(pilot, lambda: "8 lines  merged, all ranks  " in screen_text(app), what="every rank again")


async def test_rank_filter_and_search_follow_the_rank_store(home, stream_kind):
    app = make_app(cluster())
    async with app.run_test(size=(120, 24)) as pilot:
        logs, pane = await ranked_pane(app, pilot)
        await pilot.press("slash", *"step 3", "enter")
        assert list(pane.view.matches) == [6, 7]
        pane.set_source_filter("rank 1")
        await wait_for(pilot, lambda: log_lines(pane) == [f"step {i} from rank 1" for i in range(4)], what="filter")
        assert list(pane.view.matches) == [3]


async def test_local_shell_job_log_streams_into_a_pane_and_jumps_to_its_traceback(home):
    app = make_app(ClusterConfig("local", "local", refresh_seconds=0.5))
    async with app.run_test(size=(120, 30)) as pilot:
        local = app.hub.backend("local")
        command = (
            'i=1; while [ $i -le 3000 ]; do echo "row $i"; i=$((i+1)); done; '
            "echo 'Traceback (most recent call last):'; echo done"
        )
        job_id = await local.submit(replace(load_spec(SAMPLES / "local-shell.yaml"), name="chatty", command=command))
        job = await wait_for(
            pilot,
            lambda: (j := app.hub.find_job("local", job_id)) and j.state is JobState.COMPLETED and j,
            timeout=30,
            what="job completed",
        )
        app.open_logs(job)
        pane = await wait_for(pilot, lambda: isinstance(app.screen, LogsScreen) and app.screen.pane, what="pane")
        await wait_for(pilot, lambda: pane.line_count == 3002, timeout=30, what="every line")
        assert log_lines(pane, 0, 2) == ["row 1", "row 2"] and log_lines(pane, 3000) == [
            "Traceback (most recent call last):",
            "done",
        ]
        await pilot.press("e")
        await wait_for(pilot, lambda: pane.view.current_line == 3000, what="traceback line")
        assert "Traceback (most recent call last):" in screen_text(app)


async def test_error_keys_search_from_where_the_view_is(home, stream_kind):
    """e finds the next error after the lines on show, E the one before them; not the file's first."""
    app = make_app(cluster())
    async with app.run_test(size=(100, 24)) as pilot:
        special = {100: "an error here", 700: "another error", 1_500: "Traceback (most recent call last):"}
        view = await fed_view(app, pilot, special, 2_000)
        view.set_following(False)
        view.go_to_line(1_000, center=False)
        await wait_for(pilot, lambda: view.top_line == 1_000, what="view at line 1000")
        await pilot.press("e")
        await wait_for(pilot, lambda: view.current_line == 1_500, what="the error after the view")
        view.go_to_line(1_000, center=False)
        await wait_for(pilot, lambda: view.top_line == 1_000, what="view at line 1000 again")
        await pilot.press("E")
        await wait_for(pilot, lambda: view.current_line == 700, what="the error before the view")


async def test_a_flush_stops_at_its_time_budget_and_the_rest_comes_in_order_on_later_ticks(
    home, stream_kind, monkeypatch
):
    ticks: list[int] = []  # batches taken in each tick
    batches = [0]
    hold = [False]  # the screen's own timer takes nothing meanwhile
    real_flush = LogPane.flush

    def counting(self):
        if hold[0]:
            return False
        batches[0] += 1
        return real_flush(self, 100)  # batches of 100 lines

    monkeypatch.setattr(LogPane, "flush", counting)
    monkeypatch.setattr(log_pane, "MAX_PENDING", 10**9)
    app = make_app(cluster())
    async with app.run_test(size=(100, 24)) as pilot:
        fake, logs, pane = await log_of_101(app, pilot)
        monkeypatch.setattr("yanflow_tui.screens.logs.screen.FLUSH_BUDGET", 0.0)  # one batch per tick
        yields: list[int] = []
        real_sleep = asyncio.sleep

        async def sleep(delay, *args):
            if delay == 0:
                yields.append(batches[0])
            return await real_sleep(delay, *args)

        monkeypatch.setattr("yanflow_tui.screens.logs.screen.asyncio.sleep", sleep)
        hold[0] = True
        fake.feed("101", *(f"line {i}" for i in range(1000)))
        await wait_for(pilot, lambda: len(pane.pending_texts) == 1000, what="lines buffered")
        hold[0] = False
        while len(pane.store) < 1001 and len(ticks) < 100:
            before = batches[0]
            await logs._flush()  # one tick, as the timer runs it (the timer's own come in between too)
            ticks.append(batches[0] - before)
        assert len(ticks) <= 10 and set(ticks) == {1}  # a batch per tick: the budget stopped each one
        assert pane.store.slice(1, 1001) == [f"line {i}" for i in range(1000)]  # nothing lost or reordered
        fake.feed("101", *(f"line {i}" for i in range(1000, 1500)))
        hold[0] = True
        await wait_for(pilot, lambda: len(pane.pending_texts) == 500, what="more lines")
        monkeypatch.setattr("yanflow_tui.screens.logs.screen.FLUSH_BUDGET", 10.0)  # one tick takes them all
        yields.clear()
        hold[0] = False
        await logs._flush()
        assert len(pane.store) == 1501 and pane.store.get(1500) == "line 1499"
        assert yields == [batches[0] - 4, batches[0] - 3, batches[0] - 2, batches[0] - 1]  # a turn between batches
        await wait_for(pilot, lambda: "1501 lines" in screen_text(app), what="the status line")


async def test_new_lines_repaint_only_what_they_change_on_screen(home, stream_kind, monkeypatch):
    app = make_app(cluster())
    async with app.run_test(size=(100, 24)) as pilot:
        fake = backend(app)
        await wait_for(pilot, lambda: fake.jobs, what="jobs")
        fake.feed("101", *(f"line {i}" for i in range(5)))
        logs = await open_logs(app, pilot, "101")
        view = logs.pane.view
        await wait_for(pilot, lambda: len(view.store) == 5, what="first lines")
        await pilot.pause()
        repaints: list[tuple] = []
        real_refresh = LogView.refresh

        def spy(self, *regions, **kwargs):
            repaints.append(regions)
            return real_refresh(self, *regions, **kwargs)

        monkeypatch.setattr(LogView, "refresh", spy)
        fake.feed("101", "line 5", "line 6")  # the view is not full: only the two new rows repaint
        await wait_for(pilot, lambda: len(view.store) == 7, what="two more")
        assert repaints and all(regions for regions in repaints)
        assert {(r.y, r.height) for regions in repaints for r in regions} == {(5, 2)}
        await pilot.press("p")  # paused at the top of a full view: lines below it repaint nothing
        height = view.scrollable_content_region.height
        fake.feed("101", *(f"line {i}" for i in range(7, 7 + 3 * height)))
        await wait_for(pilot, lambda: len(view.store) == 7 + 3 * height, what="a screenful more")
        repaints.clear()
        fake.feed("101", *(f"line {i}" for i in range(7 + 3 * height, 7 + 4 * height)))
        await wait_for(pilot, lambda: len(view.store) == 7 + 4 * height, what="lines below the view")
        await pilot.pause()
        assert not repaints
        assert row_texts(view)[0] == "line 0"
        bar = view.vertical_scrollbar
        assert bar.window_virtual_size == 7 + 4 * height  # the scrollbar knows of them all the same


async def test_a_key_in_flight_holds_the_stream_until_what_it_changed_is_painted(home, stream_kind, monkeypatch):
    monkeypatch.setattr(keys, "KEY_HOLD", 600.0)  # however slow the machine: the hold's bound is tested below
    app = make_app(cluster())
    async with app.run_test(size=(100, 24)) as pilot:
        fake, logs, pane = await log_of_101(app, pilot)
        taken = lambda: len(pane.store) + len(pane.pending_texts)  # noqa: E731  lines read from the stream
        taken_at_key: list[int] = []  # when the key's action ran
        taken_at_paint: list[int] = []  # when the status line first painted what the key changed
        real_toggle = LogsScreen.action_toggle_follow
        real_render = StatusLine.render_lines

        def toggle(self):
            taken_at_key.append(taken())
            real_toggle(self)

        def render_lines(self, crop):
            if self.id == "log-status" and "PAUSED" in self.full_text.plain and not taken_at_paint:
                taken_at_paint.append(taken())
            return real_render(self, crop)

        monkeypatch.setattr(LogsScreen, "action_toggle_follow", toggle)
        monkeypatch.setattr(StatusLine, "render_lines", render_lines)
        more = 8 * log_pane.YIELD_EVERY
        app.post_message(events.Key("p", "p"))  # as the terminal driver posts it (pilot.press waits for idle)
        assert app.keys_in_flight
        fake.feed("101", *(f"line {i}" for i in range(more)))  # read without a pause but at the reader's yields
        await wait_for(pilot, lambda: taken_at_paint, what="the key's effect painted")
        # The key went from widget to widget, and its frame was painted, while the reader waited: one slice
        # at most was read before the key's action (without the hold, a slice between each two of the key's
        # hops: all of them), and none between the action and the paint.
        assert taken_at_key[0] <= 1 + log_pane.YIELD_EVERY
        assert taken_at_paint == taken_at_key
        await wait_for(pilot, lambda: not app.keys_in_flight, what="the key handled")
        await wait_for(pilot, lambda: len(pane.store) == 1 + more, what="the rest of the lines")
        assert not logs.following
        assert pane.store.slice(1, 1 + more) == [f"line {i}" for i in range(more)]


async def test_a_key_never_handled_holds_the_stream_no_longer_than_key_hold(home, stream_kind, monkeypatch):
    monkeypatch.setattr(keys, "KEY_HOLD", 0.3)  # in all, however many slices wait meanwhile
    monkeypatch.setattr(keys, "MAX_HOLD", 600.0)  # the key stays in flight for the whole test
    app = make_app(cluster())
    async with app.run_test(size=(100, 24)) as pilot:
        fake, logs, pane = await log_of_101(app, pilot)
        release = asyncio.Event()

        async def stuck(self):  # a key whose action does not return: the app handles nothing meanwhile
            await release.wait()

        monkeypatch.setattr(LogsScreen, "action_toggle_follow", stuck)
        app.post_message(events.Key("p", "p"))
        more = 200 * log_pane.YIELD_EVERY  # 200 slices: a minute of waiting if each waited KEY_HOLD
        fake.feed("101", *(f"line {i}" for i in range(more)))
        try:
            # No pilot.pause here: the app's own queue is held by the action.
            await async_wait_until(lambda: len(pane.store) == 1 + more, timeout=20, what="every line, key or not")
            assert app.keys_in_flight
        finally:
            release.set()
        await wait_for(pilot, lambda: not app.keys_in_flight, what="the key handled at last")


async def test_the_hidden_queue_makes_no_rows_ahead_while_logs_are_on_show(home, stream_kind, monkeypatch):
    monkeypatch.setattr(warming, "WARM_ROWS", 1)  # a member row per turn: many turns, a few ms apart
    monkeypatch.setattr(warming, "CATCH_UP_MIN", 0)  # and the refresh leaves them all to those turns
    monkeypatch.setattr(warming, "CATCH_UP", 0)
    app = make_app(cluster())
    async with app.run_test(size=(100, 24)) as pilot:
        fake = backend(app)
        await wait_for(pilot, lambda: fake.jobs, what="jobs")
        queue = app.screen
        assert isinstance(queue, QueueScreen)
        members = 640
        fake.jobs.extend(
            replace(fake.job(f"104_{i}", f"sweep-{i}", JobState.RUNNING), parent="104") for i in range(members)
        )
        await refreshed(pilot, app)
        flat = lambda: len(queue.view.flat)  # noqa: E731  entries to make rows ahead for (the warming's private state)

        def made() -> int:  # entries with their rows made ahead (or made before): 0 until the rows' turns begin
            left = queue.warming.no_row
            return 0 if left is None else flat() - len(left)

        await wait_for(pilot, lambda: flat() > members and 0 < made(), what="rows being made ahead")
        app.post_message(events.Key("4", "4"))  # (pilot.press would wait for the warming to end)
        logs = await wait_for(pilot, lambda: isinstance(app.screen, LogsScreen) and app.screen, what="logs")
        at, ticks = made(), logs._ticks
        assert at < flat()  # still warming when the Queue was left (a turn per member row)
        await wait_for(pilot, lambda: logs._ticks >= ticks + 10, what="half a second of Logs ticks")
        assert made() == at  # no turn while hidden (without the pause: a turn every few ms)
        await pilot.press("1")
        await wait_for(pilot, lambda: app.screen is queue, what="the Queue again")
        await wait_for(pilot, lambda: made() == flat(), what="rows made ahead to the end")
