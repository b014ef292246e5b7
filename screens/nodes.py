"""The Nodes screen: one row per node with a cell per GPU (free / allocated / unavailable),
utilisation where known, and a per-cluster summary."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Footer, Static

from yanflow_tui.capacity import pools
from yanflow_tui.model import Node
from yanflow_tui.rows import GPU_CELLS, NODE_COLUMNS, NODE_HEADERS, node_cells
from yanflow_tui.sanitize import clean
from yanflow_tui.screens.widgets import ClusterBar, DataScreen


def summary(nodes_by_cluster: dict[str, tuple[Node, ...]]) -> Text:
    """Per cluster and partition/pool: whole free nodes and free GPUs; then the cell legend."""
    out = Text(no_wrap=True, overflow="ellipsis")
    for cluster, nodes in nodes_by_cluster.items():
        out.append(clean(cluster), "bold")
        out.append(f": {len(nodes)} node(s)")
        for pool in pools(nodes):
            if pool.gpus_total:
                out.append(f"  {clean(pool.name)} {pool.whole_free}/{pool.nodes} whole free, "
                           f"{pool.gpus_free}/{pool.gpus_total} GPUs free")
        out.append("   ")
    out.append("  ")
    for state, (glyph, style) in GPU_CELLS.items():
        out.append(glyph, style)
        out.append(f" {state.value}  ", "dim")
    return out


class NodesScreen(DataScreen):
    TITLE_TEXT = "Nodes"

    def __init__(self) -> None:
        super().__init__()
        self._node_rows: dict[str, Node] = {}

    def compose(self) -> ComposeResult:
        yield ClusterBar()
        yield Static(id="node-summary")
        yield DataTable(id="nodes", cursor_type="row", zebra_stripes=True, cursor_foreground_priority="renderable")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#nodes", DataTable)
        for key, header in zip(NODE_COLUMNS, NODE_HEADERS):
            table.add_column(header, key=key)
        table.focus()
        self.refresh_data()

    def refresh_data(self) -> None:
        table = self.query_one("#nodes", DataTable)
        snaps = self.app.hub.snapshots
        wanted = {f"{n.cluster}/{n.name}": n for snap in snaps.values() for n in snap.nodes}
        for key in [k for k in self._node_rows if k not in wanted]:
            table.remove_row(key)
            del self._node_rows[key]
        for key, node in wanted.items():
            old = self._node_rows.get(key)
            if old is None:
                table.add_row(*node_cells(node), key=key)
            elif old != node:
                for column, cell in zip(NODE_COLUMNS, node_cells(node)):
                    table.update_cell(key, column, cell)
            self._node_rows[key] = node
        self.query_one("#node-summary", Static).update(summary({s.name: s.nodes for s in snaps.values()}))
