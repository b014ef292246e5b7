"""A long session keeps its memory flat (issue 18 point 9): screen switches and filter focus
changes recompose the footer, and the old footer keys must not stay alive. ``benchmarks/soak.py``
measures the same on 10k jobs over 500 cycles."""

from __future__ import annotations

import gc

import pytest
from textual.widgets._footer import FooterKey
from uihelpers import make_app
from waiting import wait_for

from yanflow_tui.config import ClusterConfig

pytestmark = pytest.mark.usefixtures("fake_backend", "home")


def live_footer_keys() -> tuple[int, int]:
    """(FooterKey objects alive, of which mounted on a screen)."""
    gc.collect()
    keys = [o for o in gc.get_objects() if isinstance(o, FooterKey)]
    return len(keys), sum(1 for k in keys if k.is_attached)


async def test_switching_screens_and_filtering_leaves_no_dead_footer_keys():
    app = make_app(ClusterConfig("hpc", "fake", refresh_seconds=3600))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: app.screen.query("FooterKey"), what="the footer")

        async def cycle():
            for key in ("2", "1", "slash", "x", "escape"):
                await pilot.press(key)
            await pilot.pause()  # the screens' mounts and removals handled before counting

        for _ in range(3):  # every screen composed once
            await cycle()
        _, mounted_before = live_footer_keys()
        for _ in range(15):
            await cycle()
        alive, mounted = live_footer_keys()
    # each cycle recomposes footers about 5 times, ~19 keys each: the old code kept them all
    assert mounted <= mounted_before + 5
    assert alive - mounted < 60, f"{alive - mounted} unmounted FooterKeys still alive"
