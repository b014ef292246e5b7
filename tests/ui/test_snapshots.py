"""SVG snapshot tests of every screen, at 80x24 and 200x50, over the in-memory fake backend.

Update after a deliberate change with ``pytest tests/test_snapshots.py --snapshot-update`` and look at
the report before committing.
"""

from __future__ import annotations

import pytest
from fakes.backend import FakeBackend, FakeLongBackend
from uihelpers import make_app
from waiting import wait_for

from yanflow_tui.config import ClusterConfig
from yanflow_tui.errors import BackendError

SIZES = [(80, 24), (200, 50)]


@pytest.fixture(autouse=True)
def fake_kind(register_backend, home):
    register_backend(FakeBackend)
    register_backend(FakeLongBackend)


def app_for_snapshot(read_only: bool = False):
    return make_app(ClusterConfig("hpc", "fake", refresh_seconds=3600), read_only=read_only, pinned_clock=True)


async def settle(pilot) -> None:
    app = pilot.app
    await wait_for(pilot, lambda: app.hub.snapshots["hpc"].updated is not None, what="first refresh")
    await pilot.pause()  # its snapshot handled: the screen drawn
    await pilot.wait_for_scheduled_animations()
    for widget in app.screen.query("Input, TextArea"):
        widget.cursor_blink = False


def snapshot(snap_compare, app, press=(), size=(80, 24)):
    async def run_before(pilot):
        await settle(pilot)
        if press:
            await pilot.press(*press)
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


HOST_KEY_ERROR = (
    "ssh alice@login.hpc.example: host key not trusted: ssh-ed25519 SHA256:d6GGz1I/IBxze/xfVchVHOutZRf4QT5uWF25pfhuhCk"
    " is not in ~/.ssh/known_hosts (unknown or changed key); refusing to connect.\n"
    "If it is the login node's key, add this line to ~/.ssh/known_hosts:\n"
    "login.hpc.example ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM0+jystmzjtispgv8sRl/wDu9+bOqrIHfireI/0tyKL"
)
DEAD_API_ERROR = (
    "API server unreachable: NewConnectionError: HTTPConnection(host='10.0.0.7', port=6443): "
    "Failed to establish a new connection: [Errno 111] Connection refused"
)


class FailingBackend(FakeBackend):
    """A fake whose every read fails with the error its config names."""

    kind = "fake-failing"

    def __init__(self, config):
        super().__init__(config)
        self.fail_reads = BackendError(config.options["error"])


def test_clusters_screen(snap_compare, register_backend):
    """At 80x24: an unknown host key (fingerprint and known_hosts line), a bad config key
    (file:line) and a dead Kubernetes API, each in full, beside a healthy cluster."""
    from uihelpers import FIXED_NOW

    from yanflow_tui.app import YanflowApp
    from yanflow_tui.config import Config, parse_config
    from yanflow_tui.hub import Hub

    register_backend(FailingBackend)
    bad = parse_config(
        "clusters:\n  - name: badkey\n    kind: slurm\n    sssh: login\n",
        "/home/alice/.config/yanflow/config.yaml",
        lenient=True,
    ).clusters[0]
    config = Config(
        clusters=(
            ClusterConfig("hpc", "fake", refresh_seconds=3600, description="the fake cluster"),
            ClusterConfig("login", "fake-failing", refresh_seconds=3600, options={"error": HOST_KEY_ERROR}),
            bad,
            ClusterConfig("k8s", "fake-failing", refresh_seconds=3600, options={"error": DEAD_API_ERROR}),
        )
    )
    app = YanflowApp(config, Hub(config))
    app.clock = lambda: FIXED_NOW  # type: ignore[method-assign]

    async def run_before(pilot):
        await wait_for(
            pilot,
            lambda: all(s.failures or s.updated for s in app.hub.snapshots.values()),
            what="every cluster refreshed once",
        )
        await pilot.press("5")
        await wait_for(pilot, lambda: app.current_mode == "clusters", what="the Clusters screen")
        await pilot.pause()  # drawn
        await pilot.wait_for_scheduled_animations()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
