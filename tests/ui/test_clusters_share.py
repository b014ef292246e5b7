"""My share on the Clusters screen (``5``, issue 30 point 3): under the list, the highlighted cluster's
share where its backend reports one (figures at their limit in red, the note), read in a worker; a
cluster that reports none shows nothing there, and one whose read fails says why."""

from __future__ import annotations

from dataclasses import replace

from fakes.backend import FakeBackend
from textual.widgets import Static
from uihelpers import make_app
from waiting import wait_for

from yanflow_tui.config import ClusterConfig
from yanflow_tui.errors import BackendError
from yanflow_tui.screens.clusters import ClusterList
from yanflow_tui.share import Share, ShareLine


class SharingBackend(FakeBackend):
    kind = "sharing"
    capabilities = replace(FakeBackend.capabilities, share=True)

    async def share(self) -> Share:
        if self.config.options.get("broken"):
            raise BackendError("sshare: Connection refused")
        return Share(
            self.name,
            (
                ShareLine("fair-share in account ml", "fair-share factor", "0.25"),
                ShareLine("QoS gpu4", "MaxTRESPU gres/gpu", "4", "4"),
            ),
        )


async def test_the_highlighted_clusters_share_shows_under_the_list(home, register_backend):
    register_backend(FakeBackend)
    register_backend(SharingBackend)
    app = make_app(
        ClusterConfig("hpc", "sharing", refresh_seconds=3600),
        ClusterConfig("plain", "fake", refresh_seconds=3600),
        ClusterConfig("down", "sharing", refresh_seconds=3600, options={"broken": True}),
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: all(s.updated for s in app.hub.snapshots.values()), what="first refreshes")
        await pilot.press("5")
        await wait_for(pilot, lambda: app.current_mode == "clusters", what="the Clusters screen")
        box = app.screen.query_one("#share", Static)

        def shown() -> str:
            return str(box.render()) if box.display else ""

        await wait_for(pilot, lambda: "MaxTRESPU gres/gpu: 4 of 4" in shown(), what="hpc's share")
        assert "My share of hpc" in shown() and "fair-share factor: 0.25" in shown()
        app.screen.query_one(ClusterList).action_cursor_down()
        await wait_for(pilot, lambda: not box.display, what="no share box for a cluster that reports none")
        app.screen.query_one(ClusterList).action_cursor_down()
        await wait_for(pilot, lambda: "sshare: Connection refused" in shown(), what="the failed read, said")
