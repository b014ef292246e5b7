"""The Submit screen's "where soonest" panel (issue 30 point 2): ``ctrl+f`` ranks every cluster that
takes jobs for the form's job (judged from each one's nodes where the backend has no answer of its
own), soonest first and "never" last with why; enter on a cluster moves the form there, keeps its
values, and says what does not carry over. Pilot tests over the in-memory fakes."""

from __future__ import annotations

from dataclasses import replace

from fakes.backend import FakeBackend
from textual.widgets import Input
from uihelpers import make_app
from waiting import wait_for

from yanflow_tui.config import ClusterConfig
from yanflow_tui.model import Gpu, GpuState, Node
from yanflow_tui.screens.submit.screen import SubmitScreen
from yanflow_tui.screens.submit.where import WhereList


class RoomyBackend(FakeBackend):
    """A fake whose one node has all 8 A100s free, and whose form has no workdir field."""

    kind = "roomy"

    def __init__(self, config):
        super().__init__(config)
        gpus = tuple(Gpu(i, GpuState.FREE) for i in range(8))
        self.nodes = [Node(config.name, "big01", "idle", ("gpu",), 64, 0, 512000, 0, "A100", 8, 0, gpus)]

    def form_fields(self, kind):
        return tuple(f for f in super().form_fields(kind) if f.key != "workdir")


class SmallBackend(RoomyBackend):
    """A free node with 4 GPUs: a job asking 6 on a node never runs here."""

    kind = "small"

    def __init__(self, config):
        super().__init__(config)
        gpus = tuple(Gpu(i, GpuState.FREE) for i in range(4))
        self.nodes = [replace(n, gpus_total=4, gpus=gpus) for n in self.nodes]


class ReadOnlyFake(FakeBackend):
    kind = "fake-monitor"
    capabilities = replace(FakeBackend.capabilities, submit=False)


async def test_ctrl_f_ranks_the_clusters_and_enter_moves_the_form(home, register_backend):
    for cls in (RoomyBackend, SmallBackend, ReadOnlyFake):
        register_backend(cls)
    register_backend(FakeBackend)
    app = make_app(
        ClusterConfig("busy", "fake", refresh_seconds=3600),
        ClusterConfig("small", "small", refresh_seconds=3600),
        ClusterConfig("roomy", "roomy", refresh_seconds=3600),
        ClusterConfig("watch", "fake-monitor", refresh_seconds=3600),
    )
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_for(pilot, lambda: all(s.updated for s in app.hub.snapshots.values()), what="first refreshes")
        await pilot.press("3")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, SubmitScreen) and app.screen, what="Submit")
        assert screen._cluster == "busy"
        for selector, text in (("#name", "where-me"), ("#gpus", "6"), ("#workdir", "/scratch/me")):
            widget = screen.query_one(selector, Input)
            widget.value = text
        await pilot.pause()
        screen.focus_main()
        await pilot.press("ctrl+f")
        await wait_for(pilot, lambda: screen.where_ranking, what="the ranking")
        ranked = [(p.cluster, p.verdict) for p in screen.where_ranking]
        # roomy: 8 free GPUs now; busy: 4 free, the other node drained (waits); small: never; watch takes no jobs
        assert ranked == [("roomy", "now"), ("busy", "waits"), ("small", "never")], ranked
        never = screen.where_ranking[2]
        assert "no node in cluster small has 6 GPUs (largest: 4)" in never.reason, never.reason
        listing = screen.query_one(WhereList)
        assert listing.has_focus and listing.highlighted == 0
        assert screen.query_one("#where").display
        await pilot.press("enter")  # the soonest: roomy
        await wait_for(pilot, lambda: screen._cluster == "roomy", what="the form moved to roomy")
        assert screen.query_one("#name", Input).value == "where-me"
        assert screen.query_one("#gpus", Input).value == "6"
        assert "moved the form to roomy" in screen.moved_note
        assert "not carried over: workdir (no such field on roomy)" in screen.moved_note
        assert not screen.query_one("#where").display


async def test_escape_closes_the_panel_and_a_read_only_cluster_is_not_a_target(home, register_backend):
    register_backend(FakeBackend)
    register_backend(RoomyBackend)
    app = make_app(
        ClusterConfig("busy", "fake", refresh_seconds=3600), ClusterConfig("roomy", "roomy", refresh_seconds=3600)
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: all(s.updated for s in app.hub.snapshots.values()), what="first refreshes")
        await pilot.press("3")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, SubmitScreen) and app.screen, what="Submit")
        screen.query_one("#gpus", Input).value = "2"
        await pilot.pause()
        screen.focus_main()
        await pilot.press("ctrl+f")
        await wait_for(pilot, lambda: screen.where_ranking, what="the ranking")
        assert [p.verdict for p in screen.where_ranking] == ["now", "now"]  # ties keep the config's order
        assert [p.cluster for p in screen.where_ranking] == ["busy", "roomy"]
        await pilot.press("escape")
        await wait_for(pilot, lambda: not screen.query_one("#where").display, what="the panel closed")
        assert app.screen is screen and screen._cluster == "busy"
