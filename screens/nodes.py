"""The Nodes screen: every cluster's nodes in the GPU grid (``gpugrid.GpuGrid``), a summary and
legend line above it, a status line under it describing the cell under the cursor, and ``/`` to
filter by node name, partition, state, GPU type or reason. ``enter`` on a GPU cell opens the job
holding it; on a node's fields, the list of jobs on that node (``node_jobs.NodeJobsScreen``)."""

from __future__ import annotations

from collections.abc import Mapping

from rich.style import StyleType
from rich.text import Text
from textual import on
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Input, Static

from yanflow_tui.capacity import PoolCapacity
from yanflow_tui.keys import CANCEL_KEY
from yanflow_tui.model import GpuState
from yanflow_tui.sanitize import clean
from yanflow_tui.screens.base import DataScreen
from yanflow_tui.screens.detail import JobDetailScreen
from yanflow_tui.screens.node_jobs import NodeJobsScreen
from yanflow_tui.screens.render.cluster_rows import cluster_problems
from yanflow_tui.screens.render.gpu_cells import GLYPHS, LEGEND, Cell, describe_gpu, describe_node
from yanflow_tui.screens.widgets.cluster_bar import ClusterBar
from yanflow_tui.screens.widgets.filter_box import FilterBox
from yanflow_tui.screens.widgets.footer import Footer
from yanflow_tui.screens.widgets.gpugrid import GpuGrid, summary_parts
from yanflow_tui.screens.widgets.status_line import StatusLine

LEGEND_STYLES = {Cell.FREE: "green", Cell.BUSY: "yellow", Cell.IDLE: "bold magenta", Cell.UNAVAILABLE: "red"}


def summary(
    pools_by_cluster: Mapping[str, tuple[int, list[PoolCapacity]]],
    styles: Mapping[Cell, StyleType] = LEGEND_STYLES,
    problems: Mapping[str, str] | None = None,
) -> Text:
    """Per cluster (its node count and its ``capacity.pools``, as ``GpuGrid.pools`` gives them) and
    partition/pool: whole free nodes and free GPUs; then the cell legend (in the grid's cell ``styles``).
    A cluster in ``problems`` (name: its state and error, as one line) with no nodes says that instead."""
    out = Text(no_wrap=True, overflow="ellipsis")
    problems = problems or {}
    for cluster, (count, _pools) in pools_by_cluster.items():  # one line each, before the counts
        if not count and cluster in problems:
            out.append(clean(cluster), "bold")
            out.append(f": {clean(problems[cluster])}", "red")
            out.append("  (5: details)\n", "dim")
    for cluster, (count, cluster_pools) in pools_by_cluster.items():
        if not count and cluster in problems:
            continue
        out.append(clean(cluster), "bold")
        out.append(f": {count} node(s)")
        for pool in cluster_pools:
            if pool.gpus_total:
                out.append(
                    f"  {clean(pool.name)} {pool.whole_free}/{pool.nodes} whole free, "
                    f"{pool.gpus_free}/{pool.gpus_total} GPUs free"
                )
        out.append("   ")
    out.append("  ")
    for cell, label in LEGEND:
        out.append(GLYPHS[cell], styles[cell])
        out.append(f" {label}  ", "dim")
    return out


class NodesScreen(DataScreen):
    TITLE_TEXT = "Nodes"
    CSS_PATH = "nodes.tcss"
    BINDINGS = [
        Binding("slash", "filter", "Filter", id="filter-nodes"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="clear-node-filter"),
        Binding(CANCEL_KEY, "clear_filter", "Clear filter", show=False, id="clear-node-filter-alt"),
    ]

    _summary: Text | None = None  # the summary line last shown, and how many line breaks it has
    _lines = 0

    def compose(self) -> ComposeResult:
        yield ClusterBar()
        yield Static(id="node-summary")
        yield FilterBox(
            self._apply_filter,
            placeholder="filter: text in node name, partition, state, GPU type, reason",
            id="node-filter",
        )
        yield GpuGrid(id="nodes")
        yield StatusLine(id="node-status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#node-filter", Input).display = False
        self.query_one(GpuGrid).focus()
        self.refresh_data()

    def refresh_data(self) -> None:
        grid = self.query_one("#nodes", GpuGrid)
        snaps = self.app.hub.snapshots
        idle = self.app.idle  # the Queue's rule: under the configured percent for the configured minutes
        grid.set_idle((name, node, index) for name in snaps for node, index in idle.idle_gpus(name))
        grid.set_nodes(node for snap in snaps.values() for node in snap.nodes)
        by_cluster = {snap.name: (len(snap.nodes), grid.pools(snap.name)) for snap in snaps.values()}
        styles = {cell: grid.cell_style(cell) for cell, _ in LEGEND}
        text = summary(by_cluster, styles, cluster_problems(snaps.values()))
        if text != self._summary:  # most refreshes leave it as it was; a layout only when its height changes
            lines = text.plain.count("\n")
            self.query_one("#node-summary", Static).update(text, layout=self._summary is None or lines != self._lines)
            self._summary, self._lines = text, lines
        self.show_status()

    # -- the status line ---------------------------------------------------------------------------
    def status_text(self) -> Text:
        grid = self.query_one("#nodes", GpuGrid)
        node, gpu, group = grid.cursor_node, grid.cursor_cell, grid.cursor_group
        out = Text(no_wrap=True, overflow="ellipsis")
        if group is not None:
            where = clean(group.cluster) if group.level == 0 else f"{clean(group.cluster)} / {clean(group.name)}"
            out.append(where, "bold")
            out.append(": ")
            for text, _style in summary_parts(group.summary):
                out.append(text)
            out.append("  (space/enter: collapse or expand)", "dim")
        elif node is not None and gpu is not None:
            job = self.app.hub.find_job(node.cluster, gpu.job_id) if gpu.job_id else None
            out.append(describe_gpu(node, gpu, job, grid.is_idle(grid.node_key(node), gpu.index)))
            if gpu.job_id and (node.name, gpu.index) in self.app.idle.idle_gpus(node.cluster):
                out.append(f" · {self.app.idle.rule.describe()}: notified", "bold")
            if gpu.state is GpuState.ALLOCATED:
                out.append("  (enter: the job)" if gpu.job_id else "", "dim")
        elif node is not None:
            out.append(describe_node(node))
        elif grid.filter_text:
            out.append(f"no node matches {clean(grid.filter_text)!r}", "dim")
        else:
            out.append("no nodes yet", "dim")
        return out

    def show_status(self) -> None:
        status = self.query_one("#node-status", StatusLine)
        text = self.status_text()
        if text != status.full_text:
            status.update(text, layout=False)  # one line high (nodes.tcss): its size never moves

    @on(GpuGrid.CursorMoved)
    def _cursor_moved(self, event: GpuGrid.CursorMoved) -> None:
        self.show_status()

    # -- opening jobs ------------------------------------------------------------------------------
    @on(GpuGrid.NodeSelected)
    def _selected(self, event: GpuGrid.NodeSelected) -> None:
        node, gpu = event.node, event.gpu
        note = ""
        if gpu is not None and gpu.state is GpuState.ALLOCATED:
            if gpu.job_id:
                job = self.app.hub.find_job(node.cluster, gpu.job_id)
                if job is not None:
                    self.app.push_screen(JobDetailScreen(job))
                    return
                note = f"GPU {gpu.index} is held by job {gpu.job_id}, which is not in the job list."
            else:
                note = f"The cluster does not say which job holds GPU {gpu.index}: these are the jobs on {node.name}."
        elif gpu is not None:
            note = f"GPU {gpu.index} is {gpu.state.value}."
        self.app.push_screen(NodeJobsScreen(node, note))

    # -- filter ------------------------------------------------------------------------------------
    def action_filter(self) -> None:
        self.query_one("#node-filter", FilterBox).open()

    def _apply_filter(self, value: str) -> None:
        self.query_one("#nodes", GpuGrid).set_filter(value.strip())
        self.show_status()  # now, in the frame of the keystroke (its CursorMoved comes a message later)

    @on(Input.Submitted, "#node-filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        self.query_one("#node-filter", FilterBox).done(keep=bool(event.value.strip()))
        self.set_focus(self.query_one("#nodes", GpuGrid))

    def action_clear_filter(self) -> None:
        box = self.query_one("#node-filter", FilterBox)
        if not box.display and not box.value:
            raise SkipAction()  # nothing to leave: escape goes back to the Queue
        box.close()
        grid = self.query_one("#nodes", GpuGrid)
        grid.set_filter("")
        self.show_status()
        self.set_focus(grid)
