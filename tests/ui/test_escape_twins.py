"""Every action on Escape is also on a key the terminal sends at once (a lone Escape waits out the
terminal's escape delay): the screens' Escape bindings each have a twin (``keys.CANCEL_KEY``, in text
fields and on pushed screens alike), and pressing the twin does what Escape does."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from fakes.backend import FakeBackend
from textual.binding import Binding
from textual.dom import DOMNode
from textual.widgets import Input
from uihelpers import make_app
from waiting import wait_for

import yanflow_tui.screens as screens_pkg
from yanflow_tui.app import YanflowApp
from yanflow_tui.config import ClusterConfig
from yanflow_tui.keys import CANCEL_KEY, LEAVE_FIELD_KEY
from yanflow_tui.screens.detail import JobDetailScreen
from yanflow_tui.screens.dialogs import ChoiceScreen, FullTextScreen, HelpScreen, PromptScreen
from yanflow_tui.screens.logs.screen import LogsScreen
from yanflow_tui.screens.queue import JobTable, QueueScreen
from yanflow_tui.screens.submit.screen import WHERE_KEY, SubmitScreen
from yanflow_tui.screens.submit.where import WHERE_CLOSE_KEY
from yanflow_tui.screens.templates import TemplatePickerScreen

ESCAPE_BYTES = {"escape", "ctrl+left_square_bracket"}  # ctrl+[ is Escape's own byte: no twin
# Escape's last resort (the app's ``back``: to the Queue; a pushed screen closes on its own twin) is on 1.
EQUIVALENT = {("YanflowApp", "back"): "show('queue')"}


def our_classes() -> list[type]:
    """The app and every widget and screen class the console defines, subpackages included."""
    walk = pkgutil.walk_packages(screens_pkg.__path__, prefix="yanflow_tui.screens.")
    modules = [importlib.import_module(info.name) for info in walk]
    found = {
        obj
        for module in modules
        for obj in vars(module).values()
        if inspect.isclass(obj) and issubclass(obj, DOMNode) and obj.__module__ == module.__name__
    }
    return sorted(found | {YanflowApp}, key=lambda c: c.__name__)


def own_bindings(cls: type) -> list[Binding]:
    return [b for b in cls.__dict__.get("BINDINGS", []) if isinstance(b, Binding)]


def keys_of(binding: Binding) -> set[str]:
    return {key.strip() for key in binding.key.split(",")}


def test_every_escape_binding_has_a_twin_that_is_not_an_escape_sequence():
    escape_actions = [
        (cls, binding.action) for cls in our_classes() for binding in own_bindings(cls) if keys_of(binding) & {"escape"}
    ]
    assert len(escape_actions) >= 14  # the walk found the screens, dialogs and the Submit panel
    missing = []
    for cls, action in escape_actions:
        wanted = EQUIVALENT.get((cls.__name__, action), action)
        twins = [b for b in own_bindings(cls) if b.action == wanted and keys_of(b) - ESCAPE_BYTES]
        if not twins:
            missing.append(f"{cls.__name__}: {action}")
    assert missing == []


def test_the_twins_are_sent_at_once_and_clash_with_nothing_there():
    """ctrl+g is the Submit screen's editor key: a field is left there on ctrl+n, and its "where soonest"
    panel closes on the key that opened it."""
    assert CANCEL_KEY not in ESCAPE_BYTES and LEAVE_FIELD_KEY not in ESCAPE_BYTES
    assert WHERE_CLOSE_KEY == WHERE_KEY
    submit_keys = {key for b in own_bindings(SubmitScreen) for key in keys_of(b)}
    assert LEAVE_FIELD_KEY not in {
        key for b in own_bindings(SubmitScreen) if b.action != "leave_field" for key in keys_of(b)
    }
    assert CANCEL_KEY in submit_keys  # (the editor: why Submit's twin is another key)
    app_keys = {key for b in own_bindings(YanflowApp) for key in keys_of(b)}
    assert app_keys.isdisjoint({CANCEL_KEY, LEAVE_FIELD_KEY, WHERE_CLOSE_KEY})


def cluster() -> ClusterConfig:
    return ClusterConfig("hpc", "fake", refresh_seconds=3600)


def rows(app) -> list[str]:
    return app.screen.query_one(JobTable).row_keys


async def test_ctrl_g_clears_the_queue_filter_from_the_box(home, fake_backend):
    app = make_app(cluster())
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        await pilot.press("slash", *"eval")
        await wait_for(pilot, lambda: rows(app) == ["hpc/102"], what="filtered")
        await pilot.press(CANCEL_KEY)
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="every row again")
        box = app.screen.query_one("#filter", Input)
        assert not box.display and box.value == "" and isinstance(app.focused, JobTable)


async def test_ctrl_g_closes_the_job_detail(home, fake_backend):
    app = make_app(cluster())
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen), what="detail")
        await pilot.press(CANCEL_KEY)
        await wait_for(pilot, lambda: isinstance(app.screen, QueueScreen), what="back on the Queue")
        assert app.is_running
    assert FakeBackend.instances[-1].mutations == []


async def test_the_dialogs_close_on_their_twin_with_escapes_answer(home, fake_backend, tmp_path):
    app = make_app(cluster())
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        dialogs = [
            (PromptScreen("path?", default="x"), CANCEL_KEY),
            (ChoiceScreen("which?", ["a", "b"]), CANCEL_KEY),
            (HelpScreen([]), CANCEL_KEY),
            (FullTextScreen([]), "i"),  # (its q is the app's quit: a priority key)
            (TemplatePickerScreen([], tmp_path), CANCEL_KEY),
        ]
        for dialog, key in dialogs:
            answers: list[object] = []
            app.push_screen(dialog, answers.append)
            await wait_for(pilot, lambda d=dialog: app.screen is d, what=type(dialog).__name__)
            await pilot.press(key)
            await wait_for(pilot, lambda: isinstance(app.screen, QueueScreen), what=f"{key} closes it")
            assert answers == [None] and app.is_running


async def test_ctrl_g_closes_the_log_search_and_the_help_lists_the_twin(home, fake_backend):
    app = make_app(cluster())
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: len(rows(app)) == 3, what="rows")
        await pilot.press("question_mark")
        help_screen = await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen) and app.screen, what="help")
        assert ("^g", "Clear filter / marks", "clear-filter-alt") in help_screen.rows
        await pilot.press(CANCEL_KEY)
        await wait_for(pilot, lambda: isinstance(app.screen, QueueScreen), what="help closed")
        await pilot.press("l")  # the job's log: search needs a pane
        logs = await wait_for(pilot, lambda: isinstance(app.screen, LogsScreen) and app.screen, what="logs")
        await wait_for(pilot, lambda: logs.pane is not None, what="the job's pane")
        box = logs.query_one("#log-search", Input)
        await pilot.press("slash", *"abc")
        await wait_for(pilot, lambda: box.display and app.focused is box and box.value == "abc", what="search box")
        await pilot.press(CANCEL_KEY)
        await wait_for(pilot, lambda: not box.display and app.focused is not box, what="search closed")
        assert app.current_mode == "logs"


async def test_the_submit_form_leaves_a_field_on_ctrl_n(home, fake_backend):
    app = make_app(cluster())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, SubmitScreen) and app.screen, what="submit")
        await wait_for(pilot, lambda: app.focused is screen.query_one("#cluster"), what="focus on the cluster")
        screen.query_one("#name", Input).focus()
        await pilot.press("1", LEAVE_FIELD_KEY)
        await wait_for(pilot, lambda: app.focused is screen.query_one("#cluster"), what="out of the field")
        assert screen.query_one("#name", Input).value.endswith("1") and app.current_mode == "submit"
        await pilot.press("1")  # single keys work again
        await wait_for(pilot, lambda: app.current_mode == "queue", what="the Queue")


async def test_the_where_panel_closes_on_the_key_that_opened_it(home, fake_backend):
    app = make_app(cluster())
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: all(s.updated for s in app.hub.snapshots.values()), what="first refresh")
        await pilot.press("3")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, SubmitScreen) and app.screen, what="Submit")
        screen.focus_main()
        await pilot.press(WHERE_KEY)
        panel = screen.query_one("#where")
        await wait_for(pilot, lambda: panel.display and screen.where_ranking, what="the panel and its ranking")
        await pilot.press(WHERE_CLOSE_KEY)
        await wait_for(pilot, lambda: not panel.display, what="the panel closed")
        assert app.screen is screen
