"""Pilot tests of the Nodes screen's GPU grid against fake backends: group summaries, GPU cells and
the status line, opening jobs from a cell or a node, the idle-but-allocated marker, keyed refreshes
that keep the cursor, collapsing, the filter, and drawing only the lines on screen."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fakes.backend import FakeBackend, FakeLongBackend
from textual.widgets import Static
from uihelpers import make_app, screen_text
from waiting import wait_for

from yanflow_tui.capacity import GroupSummary
from yanflow_tui.config import ClusterConfig
from yanflow_tui.idlegpus import IdleRule
from yanflow_tui.model import Gpu, GpuState, JobState, Node
from yanflow_tui.screens.detail import JobDetailScreen
from yanflow_tui.screens.logs.screen import LogsScreen
from yanflow_tui.screens.node_jobs import NodeJobsScreen
from yanflow_tui.screens.nodes import NodesScreen
from yanflow_tui.screens.widgets.gpugrid import GpuGrid


class GridBackend(FakeBackend):
    """The fake plus: gpu03 in partition debug holding job 104 on two GPUs at 1% (idle but
    allocated), and gpu04 whose two allocated GPUs carry no job id (as Slurm reports them) while
    job 105 lists gpu04 among its nodes."""

    kind = "fake-grid"

    def __init__(self, config):
        super().__init__(config)
        self.jobs.append(self.job("104", "idle-notebook", JobState.RUNNING, gpus=2, nodes=("gpu03",)))
        self.jobs.append(self.job("105", "slurm-style", JobState.RUNNING, gpus=2, nodes=("gpu04",)))
        self.nodes.append(
            Node(
                config.name,
                "gpu03",
                "mixed",
                ("debug", "gpu"),
                32,
                4,
                256000,
                8000,
                "H100",
                4,
                2,
                tuple(
                    Gpu(
                        i,
                        GpuState.ALLOCATED if i < 2 else GpuState.FREE,
                        "104" if i < 2 else None,
                        utilization=1.0 if i < 2 else 0.0,
                        memory_used_mb=1024 if i < 2 else 0,
                        memory_total_mb=81920,
                    )
                    for i in range(4)
                ),
            )
        )
        self.nodes.append(
            Node(
                config.name,
                "gpu04",
                "mixed",
                ("debug",),
                32,
                8,
                256000,
                0,
                "H100",
                4,
                2,
                tuple(Gpu(i, GpuState.ALLOCATED if i < 2 else GpuState.FREE) for i in range(4)),
            )
        )


class BigBackend(FakeBackend):
    """2,000 nodes of 8 GPUs in four partitions (a quarter of the GPUs busy), no jobs."""

    kind = "fake-big"

    def __init__(self, config):
        super().__init__(config)
        self.jobs = []
        self.nodes = [big_node(config.name, i) for i in range(2000)]


def big_node(cluster: str, i: int, util: float = 60.0) -> Node:
    gpus = tuple(
        Gpu(
            g,
            GpuState.ALLOCATED if g < 2 else GpuState.FREE,
            f"j{i}" if g < 2 else None,
            utilization=util if g < 2 else 0.0,
        )
        for g in range(8)
    )
    return Node(cluster, f"n{i:04d}", "mixed", (f"p{i % 4}",), 64, 8, 512000, 1000, "A100", 8, 2, gpus)


class ManyLongBackend(FakeLongBackend):
    """``FakeLongBackend``'s nodes and 20 more of 8 GPUs: enough rows for a vertical scrollbar at 80x24."""

    kind = "fake-many-long"

    def __init__(self, config):
        super().__init__(config)
        self.nodes += [replace(self.nodes[0], name=f"dgx-z-node-{i:04d}") for i in range(20)]


@pytest.fixture
def kinds(register_backend):
    for backend in (FakeBackend, GridBackend, BigBackend, FakeLongBackend, ManyLongBackend):
        register_backend(backend)


def cluster(kind="fake-grid", name="hpc") -> ClusterConfig:
    return ClusterConfig(name, kind, refresh_seconds=0.5)


def at_once(app):
    """The idle rule's duration set to 0: an allocated GPU under 5 % is marked ``▣`` from its first
    reading (the duration itself: ``test_the_grids_idle_mark_follows_the_idle_rules_duration``)."""
    app.idle.rule = IdleRule(seconds=0)
    return app


async def open_nodes(pilot, app, nodes: int) -> GpuGrid:
    await pilot.press("2")
    grid = await wait_for(
        pilot, lambda: isinstance(app.screen, NodesScreen) and app.screen.query_one(GpuGrid), what="nodes screen"
    )
    await wait_for(pilot, lambda: grid.node_count == nodes, what=f"{nodes} nodes in the grid")
    return grid


def status(app) -> str:
    return str(app.screen.query_one("#node-status", Static).render())


async def put_cursor(pilot, grid: GpuGrid, key, gpu=None) -> None:
    assert grid.select_key(key, gpu)
    await pilot.pause()


async def test_group_rows_summarise_each_cluster_and_partition(home, kinds):
    app = at_once(make_app(cluster()))
    async with app.run_test(size=(160, 30)) as pilot:
        grid = await open_nodes(pilot, app, 4)
        # gpu03 is in debug and gpu: listed once, under its first partition
        assert grid.group("hpc", "gpu").members == ["hpc/gpu01", "hpc/gpu02"]
        assert grid.group("hpc", "debug").members == ["hpc/gpu03", "hpc/gpu04"]
        assert grid.group("hpc", "gpu").summary == GroupSummary(nodes=2, gpus_used=4, gpus_total=16, whole_free=0)
        assert grid.group("hpc", "debug").summary == GroupSummary(nodes=2, gpus_used=4, gpus_total=8, idle=2)
        assert grid.group("hpc").summary == GroupSummary(nodes=4, gpus_used=8, gpus_total=24, idle=2)
        assert grid.row_keys()[:3] == [("cluster", "hpc"), ("pool", "hpc", "gpu"), "hpc/gpu01"]
        text = grid.row_text(("cluster", "hpc"))
        assert "hpc" in text and "4 nodes · GPUs 8/24 used · 0 whole free · ▣ 2 idle-allocated" in text
        assert "2 nodes · GPUs 4/16 used · 0 whole free" in grid.row_text(("pool", "hpc", "gpu"))
        await put_cursor(pilot, grid, ("pool", "hpc", "debug"))
        await wait_for(pilot, lambda: "hpc / debug: 2 nodes" in status(app), what="group status")


async def test_gpu_cells_show_state_utilisation_and_the_status_line_describes_them(home, kinds):
    app = make_app(cluster())
    async with app.run_test(size=(160, 30)) as pilot:
        grid = await open_nodes(pilot, app, 4)
        assert [g.state for g in grid.gpus_of("hpc/gpu01")] == [GpuState.ALLOCATED] * 4 + [GpuState.FREE] * 4
        assert "■ 90 ■ 90 ■ 90 ■ 90 □  0" in grid.row_text("hpc/gpu01")  # wide: utilisation in each cell
        assert "✕  - ✕  -" in grid.row_text("hpc/gpu02") and "maintenance" in grid.row_text("hpc/gpu02")
        await put_cursor(pilot, grid, "hpc/gpu01", None)
        await pilot.press("right", "right")
        assert grid.cursor_gpu_index == 1 and grid.cursor_cell.index == 1
        await wait_for(pilot, lambda: "GPU 1" in status(app), what="cell status")
        assert "allocated to job 101 · util 90%" in status(app) and "train-resnet (alice, running)" in status(app)
        await pilot.press("down")  # same column on the next node
        await wait_for(pilot, lambda: "hpc/gpu02 GPU 1" in status(app), what="next row")
        assert "unavailable: drain (maintenance)" in status(app)
        await pilot.press("left", "left")  # back to the node's own fields
        await wait_for(
            pilot,
            lambda: grid.cursor_gpu_index is None and "enter: jobs on this node" in status(app),
            what="node status",
        )
        assert "drain: maintenance" in status(app)


async def test_enter_on_a_gpu_cell_opens_the_job_holding_it(home, kinds):
    app = make_app(cluster())
    async with app.run_test(size=(160, 30)) as pilot:
        grid = await open_nodes(pilot, app, 4)
        await put_cursor(pilot, grid, "hpc/gpu01", 2)
        await pilot.press("enter")
        detail = await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen, what="detail")
        assert detail.job.id == "101"


async def test_enter_on_a_node_lists_its_jobs_which_open_and_show_logs(home, kinds):
    app = make_app(cluster())
    async with app.run_test(size=(160, 30)) as pilot:
        grid = await open_nodes(pilot, app, 4)
        await put_cursor(pilot, grid, "hpc/gpu01", None)
        await pilot.press("enter")
        listing = await wait_for(pilot, lambda: isinstance(app.screen, NodeJobsScreen) and app.screen, what="jobs")
        assert [j.id for j in listing.jobs] == ["101"]
        await pilot.press("enter")
        detail = await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen, what="detail")
        assert detail.job.id == "101"
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is listing, what="back to the list")
        await pilot.press("l")
        await wait_for(pilot, lambda: isinstance(app.screen, LogsScreen), what="logs")
        await wait_for(pilot, lambda: ("stream_logs", "101") in app.hub.backend("hpc").calls, what="job 101's log read")


async def test_an_allocated_gpu_without_a_job_id_falls_back_to_the_nodes_jobs_and_says_so(home, kinds):
    app = make_app(cluster())
    async with app.run_test(size=(160, 30)) as pilot:
        grid = await open_nodes(pilot, app, 4)
        await put_cursor(pilot, grid, "hpc/gpu04", 0)
        await wait_for(pilot, lambda: "the cluster does not say to which job" in status(app), what="status says so")
        await pilot.press("enter")
        listing = await wait_for(pilot, lambda: isinstance(app.screen, NodeJobsScreen) and app.screen, what="jobs")
        assert [j.id for j in listing.jobs] == ["105"]
        assert "does not say which job holds GPU 0" in str(listing.query_one("#node-jobs-note", Static).render())


async def test_idle_but_allocated_gpus_get_their_own_glyph_and_count(home, kinds):
    app = at_once(make_app(cluster()))
    async with app.run_test(size=(160, 30)) as pilot:
        grid = await open_nodes(pilot, app, 4)
        assert "▣  1 ▣  1 □  0 □  0" in grid.row_text("hpc/gpu03")
        assert "▣" not in grid.row_text("hpc/gpu01") and "▣" not in grid.row_text("hpc/gpu04")  # busy; unknown
        assert "▣ allocated, idle (<5%)" in str(app.screen.query_one("#node-summary", Static).render())
        await put_cursor(pilot, grid, "hpc/gpu03", 1)
        await wait_for(pilot, lambda: "IDLE" in status(app), what="idle in the status line")
        assert "under 5% for 0 s: notified" in status(app)
        assert "memory 1.0G/80.0G" in status(app)
        backend = app.hub.backend("hpc")
        backend.nodes[2] = replace(
            backend.nodes[2], gpus=tuple(replace(g, utilization=70.0) if g.job_id else g for g in backend.nodes[2].gpus)
        )
        app.request_refresh("hpc")
        await wait_for(pilot, lambda: grid.group("hpc").summary.idle == 0, what="busy again")
        assert "■ 70 ■ 70" in grid.row_text("hpc/gpu03")


async def test_cursor_and_scroll_survive_refreshes_that_add_and_change_nodes(home, kinds):
    app = make_app(cluster())
    async with app.run_test(size=(160, 14)) as pilot:
        grid = await open_nodes(pilot, app, 4)
        backend = app.hub.backend("hpc")
        backend.nodes += [replace(backend.nodes[0], name=f"gpu9{i}") for i in range(10)]
        app.request_refresh("hpc")
        await wait_for(pilot, lambda: grid.node_count == 14, what="more nodes")
        await put_cursor(pilot, grid, "hpc/gpu97", 3)  # (at once: the new rows' scrollbar is not laid out yet)
        scrolled = grid.scroll_offset.y
        assert scrolled > 0
        screen_row = grid.cursor_row - scrolled
        # one node added above the cursor (gpu00 sorts first), one changed, the cursor's own changed
        backend.nodes.append(replace(backend.nodes[0], name="gpu00"))
        backend.nodes[1] = replace(backend.nodes[1], state="down", reason="dead")
        backend.nodes[-2] = replace(backend.nodes[-2], cpus_allocated=60)
        app.request_refresh("hpc")
        await wait_for(pilot, lambda: grid.node_count == 15 and "dead" in grid.row_text("hpc/gpu02"), what="refreshed")
        assert grid.cursor_key == "hpc/gpu97" and grid.cursor_gpu_index == 3
        assert grid.cursor_row - grid.scroll_offset.y == screen_row  # it stayed where it was on screen
        await pilot.press("down")
        assert grid.cursor_key == "hpc/gpu98"
        await pilot.press("end")  # scrolled to the very bottom, a node comes in above
        last, screen_row = grid.cursor_key, grid.cursor_row - grid.scroll_offset.y
        backend.nodes.append(replace(backend.nodes[0], name="gpu000"))
        app.request_refresh("hpc")
        await wait_for(pilot, lambda: grid.node_count == 16, what="one more")
        assert grid.cursor_key == last and grid.cursor_row - grid.scroll_offset.y == screen_row


async def test_space_collapses_and_expands_groups(home, kinds):
    app = make_app(cluster())
    async with app.run_test(size=(160, 30)) as pilot:
        grid = await open_nodes(pilot, app, 4)
        assert grid.row_count == 7
        await put_cursor(pilot, grid, "hpc/gpu02")
        await pilot.press("space")  # from a node: its group collapses, the cursor lands on it
        assert grid.cursor_key == ("pool", "hpc", "gpu") and grid.row_count == 5
        assert grid.row_text(("pool", "hpc", "gpu")).lstrip().startswith("▸ gpu")
        await pilot.press("home", "space")
        assert grid.row_keys() == [("cluster", "hpc")]
        await pilot.press("enter")  # enter on a group toggles it too
        assert grid.row_count == 5
        await pilot.press("down", "space")
        assert grid.row_count == 7 and grid.cursor_key == ("pool", "hpc", "gpu")


async def test_slash_filters_nodes_by_name_partition_or_state(home, kinds):
    app = make_app(cluster())
    async with app.run_test(size=(160, 30)) as pilot:
        grid = await open_nodes(pilot, app, 4)
        await pilot.press("slash", *"drain")
        await wait_for(pilot, lambda: grid.node_count == 1, what="filtered")
        assert grid.row_keys()[-1] == "hpc/gpu02"
        await pilot.press("enter")  # back to the grid, the filter stays
        assert app.focused is grid and grid.node_count == 1
        await pilot.press("escape")
        await wait_for(pilot, lambda: grid.node_count == 4, what="filter cleared")


async def test_narrow_terminals_get_one_glyph_per_gpu(home, kinds):
    app = at_once(make_app(cluster()))
    async with app.run_test(size=(80, 24)) as pilot:
        grid = await open_nodes(pilot, app, 4)
        await wait_for(pilot, lambda: "■■■■□□□□" in grid.row_text("hpc/gpu01"), what="compact cells")
        assert "✕✕✕✕✕✕✕✕" in grid.row_text("hpc/gpu02") and "▣▣□□" in grid.row_text("hpc/gpu03")
        assert max(len(grid.row_text(k).split("  maint")[0]) for k in grid.row_keys()) <= 80


async def test_only_lines_on_screen_are_drawn_and_a_refresh_redraws_only_changed_rows(home, kinds, monkeypatch):
    drawn: list = []
    real = GpuGrid._parts  # a row's text, asked for each time its line is drawn afresh

    def counting(self, row):
        drawn.append(row.key)
        return real(self, row)

    monkeypatch.setattr(GpuGrid, "_parts", counting)
    app = at_once(make_app(cluster("fake-big", "big")))
    async with app.run_test(size=(120, 40)) as pilot:
        grid = await open_nodes(pilot, app, 2000)
        await wait_for(pilot, lambda: drawn, what="the first screenful drawn")
        await pilot.pause()  # the whole first paint done
        assert grid.row_count == 2005
        first = set(drawn)
        assert 0 < len(first) <= 40  # a screenful, not 2,005 rows
        drawn.clear()
        await pilot.press("pagedown", "pagedown")
        await wait_for(pilot, lambda: drawn, what="the rows paged to drawn")
        await pilot.pause()  # the whole repaint done
        assert 0 < len(set(drawn)) <= 2 * 40
        drawn.clear()
        backend = app.hub.backend("big")
        on_screen = [k for k in grid.row_keys()[grid.scroll_offset.y : grid.scroll_offset.y + 30] if isinstance(k, str)]
        changed = {on_screen[3], on_screen[5], "big/n1999"}
        for i, node in enumerate(backend.nodes):
            if f"big/{node.name}" in changed:
                backend.nodes[i] = big_node("big", i, util=2.0)
        app.request_refresh("big")
        await wait_for(pilot, lambda: "▣" in grid.row_text(on_screen[3]), what="changed rows")
        await wait_for(pilot, lambda: {on_screen[3], on_screen[5]} <= set(drawn), what="the changed rows redrawn")
        await pilot.pause()  # the whole repaint done
        node_rows = {k for k in drawn if isinstance(k, str)}
        assert node_rows <= changed | {grid.cursor_key}  # unchanged rows come from the strip cache
        assert "big/n1999" not in drawn  # changed, but off screen: drawn when scrolled to


def test_cluster_text_is_cleaned_and_counts_only_nodes_get_cells():
    from yanflow_tui.screens.render.gpu_cells import describe_gpu, describe_node

    grid = GpuGrid()
    evil = Node(
        "c",
        "n\x1b[31m1",
        "drain\x07",
        ("p\x1b]0;x\x07",),
        gpu_type="A\u202e100",
        gpus_total=2,
        gpus=(Gpu(0, GpuState.UNAVAILABLE, reason="bad\x1b[2Jdisk"), Gpu(1)),
        reason="r\x1b[1m",
    )
    counts = Node("c", "old", "mixed", ("p",), gpus_total=3, gpus_allocated=1)  # no per-GPU data
    grid.set_nodes([evil, counts])
    text = "".join(grid.row_text(k) for k in grid.row_keys())
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "n1" in text and "A100" in text
    assert "\x1b" not in describe_gpu(evil, evil.gpus[0]) + describe_node(evil)
    assert "baddisk" in describe_gpu(evil, evil.gpus[0])
    assert [g.state for g in grid.gpus_of("c/old")] == [GpuState.ALLOCATED, GpuState.FREE, GpuState.FREE]
    assert "■□□" in grid.row_text("c/old")


def test_the_grids_pool_totals_match_capacity_pools():
    from yanflow_tui.capacity import pools

    backend = GridBackend(cluster())
    nodes = backend.nodes + [Node("hpc", "cpu01", "idle"), Node("other", "x", "idle", gpus_total=2)]
    grid = GpuGrid()
    grid.set_nodes(nodes)
    assert grid.pools("hpc") == pools(n for n in nodes if n.cluster == "hpc")
    assert grid.pools("other") == pools(nodes[-1:])
    nodes[0] = replace(
        nodes[0], gpus=tuple(replace(g, state=GpuState.FREE, job_id=None) for g in nodes[0].gpus), gpus_allocated=0
    )
    grid.set_nodes(nodes)  # a change in place updates them too
    assert grid.pools("hpc") == pools(n for n in nodes if n.cluster == "hpc")
    assert grid.pools("hpc")[0].whole_free == 1


async def test_clicking_a_gpu_cell_puts_the_cursor_on_it_and_a_second_click_opens_it(home, kinds):
    app = make_app(cluster())
    async with app.run_test(size=(160, 30)) as pilot:
        grid = await open_nodes(pilot, app, 4)
        line = grid.row_keys().index("hpc/gpu01") + 1  # under the column header line
        where = (grid.gpu_x + 2 * grid.cell_width, line)
        await pilot.click(GpuGrid, offset=where)
        await wait_for(pilot, lambda: grid.cursor_key == "hpc/gpu01" and grid.cursor_gpu_index == 2, what="cursor")
        await pilot.click(GpuGrid, offset=where)
        detail = await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen, what="detail")
        assert detail.job.id == "101"


async def test_at_80x24_every_gpu_cell_of_8_and_16_gpu_nodes_is_on_screen(home, kinds):
    """Regression: the cells were laid out for the grid's whole width, scrollbar included, so a
    vertical scrollbar hid the last two of a node's 8 cells."""
    app = make_app(cluster("fake-many-long"))
    async with app.run_test(size=(80, 24)) as pilot:
        grid = await open_nodes(pilot, app, 23)
        text = await wait_for(pilot, lambda: "■■■■■■■■" in (t := screen_text(app)) and t, what="the cells drawn")
        assert grid.scrollable_content_region.width < grid.size.width  # the scrollbar is there
        assert "■■■■■■■■" in text  # dgx-a100-node-0041: all 8 busy
        assert "■■■■■□□□" in text  # dgx-a100-node-0042: 5 of 8
        assert "■■■□□□□□□□□□□□□□" in text  # dgx-h100-node-0101: 3 of 16
        assert "+" not in text.split("GPUS", 1)[1].split("slurm", 1)[0]  # nothing said to be off-screen
        for key in grid.row_keys():
            if isinstance(key, str):
                assert grid.offscreen_cells(key) == 0
        # a node's long note goes on past the edge: the line says so, never over a cell
        line = grid.render_line(1 + grid.row_keys().index("hpc/dgx-a100-node-0042")).text
        assert "■■■■■□□□" in line and line.rstrip().endswith("…")


async def test_gpu_cells_that_cannot_fit_are_counted_at_the_edge_and_reached_with_the_cursor(home, kinds):
    app = make_app(cluster("fake-long"))
    async with app.run_test(size=(50, 24)) as pilot:
        grid = await open_nodes(pilot, app, 3)
        key = "hpc/dgx-h100-node-0101"
        hidden = await wait_for(pilot, lambda: grid.offscreen_cells(key), what="cells past the edge")
        row = 1 + grid.row_keys().index(key)
        assert grid.render_line(row).text.rstrip().endswith(f"+{hidden}›")
        assert f"+{hidden}›" in screen_text(app)
        await put_cursor(pilot, grid, key, 15)  # the last GPU: the grid scrolls to it
        await wait_for(pilot, lambda: grid.offscreen_cells(key) == 0, what="scrolled to the last GPU")
        assert grid.cursor_cell.index == 15
        assert not grid.render_line(row).text.rstrip().endswith("›")


async def test_a_node_change_repaints_its_lines_only_and_a_refresh_without_changes_keeps_every_cache(
    home, kinds, monkeypatch
):
    app = at_once(make_app(cluster("fake-big", "big")))
    async with app.run_test(size=(120, 40)) as pilot:
        grid = await open_nodes(pilot, app, 2000)
        await pilot.pause()  # the first paint done
        repaints: list[tuple] = []  # the regions of each GpuGrid.refresh; () is the whole grid
        real_refresh = GpuGrid.refresh

        def spy(self, *regions, **kwargs):
            repaints.append(regions)
            return real_refresh(self, *regions, **kwargs)

        layouts: list[int] = []
        screen = app.screen
        real_layout = type(screen)._refresh_layout
        monkeypatch.setattr(
            type(screen), "_refresh_layout", lambda s, *a, **k: (layouts.append(1), real_layout(s, *a, **k))[1]
        )
        monkeypatch.setattr(GpuGrid, "refresh", spy)
        top = int(grid.scroll_offset.y)
        on_screen = [k for k in grid.row_keys()[top : top + 30] if isinstance(k, str)]
        key = on_screen[4]
        strips = {k: grid._records[k].strip for k in on_screen if k not in (key, grid.cursor_key)}
        assert all(strips.values())
        backend = app.hub.backend("big")
        i = next(i for i, n in enumerate(backend.nodes) if f"big/{n.name}" == key)
        backend.nodes[i] = big_node("big", i, util=2.0)
        app.request_refresh("big")
        await wait_for(pilot, lambda: "▣" in grid.row_text(key), what="the changed node")
        await pilot.pause()
        assert repaints and all(repaints), "only regions repainted, never the whole grid"
        line = grid.row_keys().index(key) + 1 - top  # under the header line
        assert any(r.y == line for regions in repaints for r in regions)  # the changed node's line
        assert {r.y for regions in repaints for r in regions} <= {
            line,
            *(grid.row_keys().index(g) + 1 - top for g in (grid._records[key].pool, ("cluster", "big"))),
        }
        assert all(grid._records[k].strip is s for k, s in strips.items())  # the other lines come from the cache
        assert not layouts  # same summary height, same status line: no layout of the screen
        repaints.clear()
        served = app.hub.snapshots["big"]
        kept = {k: r.strip for k, r in grid._records.items() if r.strip is not None}
        app.request_refresh("big")  # the same nodes again
        await wait_for(pilot, lambda: app.hub.snapshots["big"] is not served, what="a refresh without changes")
        await pilot.pause()
        assert not repaints and not layouts
        assert {k: r.strip for k, r in grid._records.items() if r.strip is not None} == kept
        assert all(grid._records[k].strip is s for k, s in kept.items())


async def test_the_header_counts_jobs_by_state_again_only_when_a_refresh_brings_new_jobs(home, kinds, monkeypatch):
    from collections import Counter

    from yanflow_tui.screens.widgets import cluster_bar
    from yanflow_tui.screens.widgets.cluster_bar import ClusterBar

    counted: list[int] = []

    class Counting(Counter):
        def update(self, iterable=None, /, **kwargs):
            if iterable is not None:  # (``Counter()`` itself calls it with nothing)
                counted.append(1)
            return super().update(iterable, **kwargs)

    monkeypatch.setattr(cluster_bar, "Counter", Counting)
    app = make_app(ClusterConfig("hpc", "fake-grid", refresh_seconds=600))  # no refresh but those asked for
    async with app.run_test(size=(160, 30)) as pilot:
        await open_nodes(pilot, app, 4)
        bar = app.screen.query_one(ClusterBar)
        await wait_for(pilot, lambda: "running" in str(bar.render()), what="the header's counts")
        counted.clear()
        for _ in range(3):  # redrawn (each second, each refresh) with the same jobs: no count again
            bar.redraw()
            bar.refresh()
            await pilot.pause()
        assert "running" in str(bar.render()) and not counted
        backend = app.hub.backend("hpc")
        backend.jobs.append(backend.job("190", "new-one", JobState.FAILED))
        served = app.hub.snapshots["hpc"]
        app.request_refresh("hpc")
        await wait_for(pilot, lambda: app.hub.snapshots["hpc"] is not served, what="a refresh")
        await wait_for(pilot, lambda: "failed" in str(bar.render()), what="the new job counted")
        assert counted


async def test_the_filter_is_applied_as_typed_and_drawn_with_the_box_in_one_frame(home, kinds, monkeypatch):
    """The box's text filters the grid and updates the status line in the box's own turn, / and escape
    move the focus at once, and the grid resized with the same columns (the box shown or hidden) is
    not painted again a frame after the layout that drew it. Its scrollbars are ``QuietScrollBar``s."""
    from textual import events
    from textual.widgets import Input

    from yanflow_tui.screens.widgets.scrolling import QuietScrollBar
    from yanflow_tui.screens.widgets.status_line import StatusLine

    app = make_app(cluster())
    async with app.run_test(size=(160, 30)) as pilot:
        grid = await open_nodes(pilot, app, 4)
        assert isinstance(grid.vertical_scrollbar, QuietScrollBar)
        screen, box = app.screen, app.screen.query_one("#node-filter", Input)
        status = screen.query_one("#node-status", StatusLine)
        screen.action_filter()
        assert app.focused is box and box.display
        box.value = "drain"
        assert grid.node_count == 1 and "hpc: 1 node" in status.full_text.plain
        screen.action_clear_filter()
        assert app.focused is grid and not box.display and grid.node_count == 4
        await pilot.pause()
        painted = []
        monkeypatch.setattr(grid, "refresh", lambda *a, **k: painted.append(1))
        grid.on_resize(events.Resize(grid.size, grid.virtual_size, grid.container_size))
        assert painted == []
        grid._widths = ()  # other columns: painted again
        grid.on_resize(events.Resize(grid.size, grid.virtual_size, grid.container_size))
        assert painted == [1]
