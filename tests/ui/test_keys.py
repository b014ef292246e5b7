"""Keys: every binding of the console has an id (so ``keymap:`` can remap it), one id means one
action everywhere, and every action a screen defines is on a key (shown in the footer and ``?``)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from textual.binding import Binding
from textual.dom import DOMNode

import yanflow_tui.screens as screens_pkg
from yanflow_tui.app import YanflowApp

# Actions run by something other than a key of their own class: a Button, a message, or a key of
# the widget inside the screen.
NOT_KEYED = {
    ("MembersTable", "sort_next"),  # the detail screen's o (sort-members)
    ("MembersTable", "sort_reverse"),  # the detail screen's O (reverse-members)
    ("QueueScreen", "open_job"),  # enter on the job table (open-job)
}


def our_classes() -> list[type]:
    found = {YanflowApp}
    for info in pkgutil.iter_modules(screens_pkg.__path__):
        module = importlib.import_module(f"yanflow_tui.screens.{info.name}")
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, DOMNode) and obj.__module__ == module.__name__:
                found.add(obj)
    return sorted(found, key=lambda c: c.__name__)


def own_bindings(cls: type) -> list[Binding]:
    return [b for b in cls.__dict__.get("BINDINGS", []) if isinstance(b, Binding)]


def test_every_binding_has_an_id_and_a_description():
    missing = [
        (cls.__name__, b.key) for cls in our_classes() for b in own_bindings(cls) if not b.id or not b.description
    ]
    assert missing == []
    assert len([b for cls in our_classes() for b in own_bindings(cls)]) > 40  # the walk found the screens


def test_one_binding_id_means_one_action():
    actions: dict[str, set[str]] = {}
    for cls in our_classes():
        for binding in own_bindings(cls):
            actions.setdefault(binding.id, set()).add(binding.action)
    assert {i: a for i, a in actions.items() if len(a) > 1} == {}


def test_every_action_a_screen_defines_is_on_a_key():
    unkeyed = []
    for cls in our_classes():
        bound = {b.action.split("(")[0] for b in own_bindings(cls)}
        for name, _ in inspect.getmembers(cls, inspect.isfunction):
            if name.startswith("action_") and name in cls.__dict__:
                action = name[len("action_") :]
                if action not in bound and (cls.__name__, action) not in NOT_KEYED:
                    unkeyed.append(f"{cls.__name__}.{action}")
    assert unkeyed == []


async def test_keymap_remaps_keys_of_the_new_screens_by_id(home, fake_backend):
    from textual.widgets import Input
    from uihelpers import make_app
    from waiting import wait_for

    from yanflow_tui.config import ClusterConfig

    app = make_app(
        ClusterConfig("hpc", "fake", refresh_seconds=3600),
        keymap={"filter-nodes": "f", "toggle-theme": "f5", "sort-jobs": "S"},
    )
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: app.hub.snapshots["hpc"].jobs, what="jobs")
        await pilot.press("S")
        await wait_for(pilot, lambda: app.screen.query_one("#jobs").sort_column is not None, what="sorted by S")
        await pilot.press("f5")
        assert not app.current_theme.dark
        await pilot.press("2")
        await wait_for(pilot, lambda: app.screen.query("#node-filter"), what="nodes")
        await pilot.press("f")
        await wait_for(pilot, lambda: app.screen.query_one("#node-filter", Input).display, what="node filter by f")


# -- the keyboard model (yanflow_tui/keys.py), with the pilot; tests/test_terminal.py has it in a real pty --


def fake_app():
    """An app over one fake cluster (the test takes the ``fake_backend`` fixture)."""
    from uihelpers import make_app

    from yanflow_tui.config import ClusterConfig

    return make_app(ClusterConfig("hpc", "fake", refresh_seconds=3600))


async def test_the_app_keys_work_on_the_empty_logs_screen(home, fake_backend):
    from waiting import wait_for

    app = fake_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("4")
        await wait_for(pilot, lambda: app.current_mode == "logs", what="logs")
        assert app.focused is None  # the hidden search box never takes the focus
        for key, mode in (("1", "queue"), ("4", "logs"), ("2", "nodes"), ("4", "logs"), ("3", "submit")):
            await pilot.press(key)
            await wait_for(pilot, lambda mode=mode: app.current_mode == mode, what=mode)
        await pilot.press("4", "question_mark")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "HelpScreen", what="help on the empty logs")
        await pilot.press("question_mark")  # ? again closes it
        await wait_for(pilot, lambda: type(app.screen).__name__ == "LogsScreen", what="help closed")
        await pilot.press("escape")  # nothing to leave: back to the Queue
        await wait_for(pilot, lambda: app.current_mode == "queue", what="escape to the queue")


async def test_submit_starts_on_the_cluster_chooser_and_escape_leaves_a_field_for_it(home, fake_backend):
    from textual.widgets import Input
    from waiting import wait_for

    app = fake_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        await wait_for(pilot, lambda: app.focused is not None and app.focused.id == "cluster", what="cluster chooser")
        await pilot.press("1")  # a screen key, not text in the spec-file box
        await wait_for(pilot, lambda: app.current_mode == "queue", what="queue")
        await pilot.press("3", "tab", "tab")
        await wait_for(
            pilot, lambda: app.focused is not None and app.focused.id == "name", what="name, in reading order"
        )
        await pilot.press("1", "q", "r", "question_mark")
        assert app.current_mode == "submit" and app.screen.query_one("#name", Input).value == "1qr?"
        await pilot.press("escape")
        await wait_for(
            pilot, lambda: app.focused is not None and app.focused.id == "cluster", what="back on the chooser"
        )
        await pilot.press("escape")  # nothing left to leave
        await wait_for(pilot, lambda: app.current_mode == "queue", what="escape to the queue")


async def test_a_screen_key_closes_an_open_dialog_and_q_quits_from_one(home, fake_backend):
    from waiting import wait_for

    app = fake_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: app.hub.snapshots["hpc"].jobs, what="jobs")
        await pilot.press("c")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", what="cancel confirmation")
        await pilot.press("2")
        await wait_for(pilot, lambda: app.current_mode == "nodes", what="nodes")
        await pilot.press("1")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "QueueScreen", what="the queue, not the dialog")
        assert app.hub.backend("hpc").mutations == []  # declined, never sent
        await pilot.press("enter")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "JobDetailScreen", what="job detail")
        await pilot.press("q")
        await wait_for(pilot, lambda: app.return_code is not None or not app.is_running, what="quit")
