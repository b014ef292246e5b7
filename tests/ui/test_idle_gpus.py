"""Idle GPUs in the console: a local job whose GPUs (the NVML test double) stay under 5 % for the
configured 10 minutes (an injected clock: no sleeping) gets the Queue's ``▣`` mark, one notice, and its
detail's live-use block says so; a job at 50 % gets none of them."""

from __future__ import annotations

from uihelpers import make_app, refreshed
from waiting import ManualClock, wait_for

from yanflow_tui.config import ClusterConfig
from yanflow_tui.screens.detail import JobDetailScreen
from yanflow_tui.screens.queue import JobTable
from yanflow_tui.spec import spec_from_data

LOCAL = ClusterConfig("local", "local", refresh_seconds=0.5)


def told(app) -> list[str]:
    return [str(n.message) for n in app._notifications if n.title == "idle GPUs"]


async def test_a_job_idle_for_the_configured_time_is_marked_in_the_queue_and_told_once(home, fake_nvml):
    fake_nvml.set(devices=[{"util": 0, "mem_used": 10}, {"util": 1}, {"util": 50}, {"util": 50}])
    app = make_app(LOCAL)
    clock = app.idle.clock = ManualClock()
    async with app.run_test(size=(160, 30)) as pilot:
        backend = app.hub.backend("local")
        spec = {"command": "sleep 60", "resources": {"gpus": 2}}
        idle = await backend.submit(spec_from_data({"name": "effic-idle", **spec}))
        busy = await backend.submit(spec_from_data({"name": "effic-busy", **spec}))
        try:
            table = app.screen.query_one(JobTable)
            await wait_for(
                pilot,
                lambda: (
                    {idle, busy} <= {g.job_id for n in app.hub.snapshots["local"].nodes for g in n.gpus}
                    and table.row_text(f"local/{busy}") is not None
                ),
                what="both jobs holding GPUs and shown",
            )
            await refreshed(pilot, app, "local")
            assert "▣" not in (table.row_text(f"local/{idle}") or "") and told(app) == []  # under 5 %, not yet 10 min
            clock.now += 599
            await refreshed(pilot, app, "local")
            assert "▣" not in (table.row_text(f"local/{idle}") or "") and told(app) == []
            clock.now += 1
            await refreshed(pilot, app, "local")
            await wait_for(pilot, lambda: "▣" in (table.row_text(f"local/{idle}") or ""), what="the idle mark")
            assert "▣" not in (table.row_text(f"local/{busy}") or "")
            assert len(told(app)) == 1 and f"job {idle} holds 2 idle GPUs" in told(app)[0]
            for _ in range(3):
                clock.now += 60
                await refreshed(pilot, app, "local")
            assert len(told(app)) == 1  # once per episode
            job = next(j for j in app.hub.snapshots["local"].jobs if j.id == idle)
            await app.push_screen(JobDetailScreen(job))
            await wait_for(
                pilot,
                lambda: "IDLE for 13 min" in str(app.screen.query_one("#health").render()),
                what="the detail's live-use block",
            )
            block = str(app.screen.query_one("#health").render())
            assert "util 0%, memory 10 MiB of 81920" in block and "NVML" in block
            # Its CPU and memory from /proc, read in a worker (a sleeping job: its processes' RSS).
            await wait_for(
                pilot, lambda: "CPU busy" in str(app.screen.query_one("#health").render()), what="the /proc figures"
            )
            block = str(app.screen.query_one("#health").render())
            assert "CPU and memory from: /proc" in block and "Memory" in block and "would come from" not in block
        finally:
            for job_id in (idle, busy):
                await backend.cancel(job_id)
