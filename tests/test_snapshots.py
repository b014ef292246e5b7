"""SVG snapshot tests of every screen, at 80x24 and 200x50, over the in-memory fake backend.

Update after a deliberate change with ``pytest tests/test_snapshots.py --snapshot-update`` and look at
the report before committing.
"""

from __future__ import annotations

import pytest
from textual.widgets import Input, TextArea

from yanflow_tui.backends import registry
from yanflow_tui.config import ClusterConfig

from fakes.backend import FakeBackend, FakeLongBackend
from uihelpers import make_app, wait_for

SIZES = [(80, 24), (200, 50)]


@pytest.fixture(autouse=True)
def fake_kind(monkeypatch, home):
    monkeypatch.setitem(registry._BACKENDS, "fake", FakeBackend)
    monkeypatch.setitem(registry._BACKENDS, "fake-long", FakeLongBackend)
    FakeBackend.instances.clear()


def app_for_snapshot(read_only: bool = False):
    return make_app(ClusterConfig("hpc", "fake", refresh_seconds=3600), read_only=read_only, pinned_clock=True)


async def settle(pilot) -> None:
    app = pilot.app
    await wait_for(pilot, lambda: app.hub.snapshots["hpc"].updated is not None, what="first refresh")
    await pilot.pause(0.2)
    for widget in app.screen.query("Input, TextArea"):
        widget.cursor_blink = False


def snapshot(snap_compare, app, press=(), size=(80, 24)):
    async def run_before(pilot):
        await settle(pilot)
        if press:
            await pilot.press(*press)
            await pilot.pause(0.3)
            await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


SCREENS = {  # name: (keys pressed after the first refresh, read-only)
    "queue": ((), False),
    "queue_read_only": ((), True),
    "nodes": (("2",), False),
    "submit": (("3",), False),
    "logs": (("l",), False),
    "job_detail": (("enter",), False),
    "queue_filtered": (("slash", *"state:run", "enter"), False),
    "queue_light_theme": (("ctrl+t",), False),
    "node_jobs": (("2", "down", "down", "enter"), False),
    "submit_templates": (("3", "ctrl+l"), False),
    "help": (("question_mark",), False),
}


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("screen", SCREENS)
def test_screen(snap_compare, screen, size):
    press, read_only = SCREENS[screen]
    snapshot(snap_compare, app_for_snapshot(read_only=read_only), press=press, size=size)


NARROW = {  # name: keys pressed; over the long-names fake with 8- and 16-GPU nodes, at 80x24 only
    "queue_long_names": (),
    "nodes_8_gpu": ("2",),
}


@pytest.mark.parametrize("screen", NARROW)
def test_80x24_hides_nothing(snap_compare, screen):
    app = make_app(ClusterConfig("hpc", "fake-long", refresh_seconds=3600), pinned_clock=True)
    snapshot(snap_compare, app, press=NARROW[screen], size=(80, 24))
