"""The GPU grid of the Nodes screen: one line per node (name, state, partitions, CPU and memory use,
GPU type, a cell per GPU, the reason), under group header lines per cluster and partition/pool
with their totals, and a cursor over rows and over the GPU cells of a node.

Drawn with Textual's line API: a ``ScrollView`` whose ``render_line`` draws only the lines on
screen, from a rendered ``Strip`` kept per row. Each node has one ``NodeRow`` record (its texts,
GPU cells, counts and drawing caches), each header one ``Group``. ``set_nodes`` compares the new
nodes with the old by key and rebuilds only the records (and group totals) of nodes that changed,
so a refresh costs little more than the comparison even with thousands of nodes.

A node in several partitions is listed once, under its first partition: every GPU is then counted
exactly once, group totals add up to the cluster's, and the cursor never meets the same node
twice. Its other partitions still show in its PARTITIONS column (and per-partition capacity that
counts shared nodes in each is on the summary line above the grid, from ``capacity.pools``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip

from yanflow_tui.capacity import ALL, GroupSummary, PoolCapacity, summarize, usable_free_gpus
from yanflow_tui.model import Gpu, Node
from yanflow_tui.sanitize import clean
from yanflow_tui.screens.render.gpu_cells import (
    GLYPHS,
    Cell,
    cell_kind,
    has_utilization,
    node_fields,
    node_gpus,
    node_matches,
    state_kind,
    util_label,
)
from yanflow_tui.screens.render.rows import natural_key
from yanflow_tui.screens.widgets.scrolling import QuietScrollView

GroupKey = tuple[str, ...]  # ("cluster", name) or ("pool", cluster, partition)
RowKey = str | GroupKey  # a node's "cluster/name", or a group key

HEADERS = ("NODE", "STATE", "PARTITIONS", "CPUS", "MEMORY", "GPU TYPE")
MAX_WIDTHS = (40, 20, 32, 11, 13, 32)
MIN_WIDTHS = (6, 5, 4, 4, 4, 4)
SEP = "  "
INDENT = ("", "  ", "    ")  # cluster header, pool header, node
OPEN, CLOSED = "▾ ", "▸ "
WIDE_CELL = 5  # glyph, three digits of utilisation, a space
SHRINK_ORDER = (0, 2, 5, 1, 4, 3)  # text columns that give way to the GPU cells (the widest first, of these)
MORE = " +{}›"  # drawn at the right edge over a node's GPU cells that are off-screen: how many
CUT = "…"  # drawn at the right edge of a node line that goes on off-screen (a long note)
CELL_STYLE = {
    Cell.FREE: "gpugrid--free",
    Cell.BUSY: "gpugrid--busy",
    Cell.IDLE: "gpugrid--idle",
    Cell.UNAVAILABLE: "gpugrid--unavailable",
}
STATE_STYLE = {"ok": "gpugrid--ok", "busy": "gpugrid--busy", "bad": "gpugrid--bad"}
KEEP = "keep"  # ``move_cursor(gpu=KEEP)``: the GPU column stays as it is

Part = tuple[str, "str | None"]  # text, component class


@dataclass
class Group:
    """A header row: a cluster (level 0) or one of its partitions/pools (level 1)."""

    key: GroupKey
    level: int
    cluster: str
    name: str
    pools: list[GroupKey] = field(default_factory=list)  # a cluster's pool groups
    nodes: list[str] = field(default_factory=list)  # a pool's node keys, in name order
    summary: GroupSummary = GroupSummary()
    parts: list[Part] | None = field(default=None, compare=False, repr=False)  # the line as text, while it holds
    strip: Strip | None = field(default=None, compare=False, repr=False)  # the line without the cursor, drawn

    @property
    def members(self) -> Sequence[RowKey]:
        """Level 0: pool group keys; level 1: node keys."""
        return self.pools if self.level == 0 else self.nodes


@dataclass(eq=False, slots=True)
class NodeRow:
    """One node as the grid keeps it: what its line says, worked out once per change of the node,
    and the line's drawing caches."""

    key: str
    node: Node
    sort: tuple  # natural order of the name, within its pool
    fields: tuple[str, ...] = ()  # ``node_fields``: name, state, partitions, CPUs, memory, GPU type, note
    widths: tuple[int, ...] = ()  # the cell width of each field
    gpus: tuple[Gpu, ...] = ()  # one cell each (per-GPU data, or cells made from the counts)
    counts: tuple[int, ...] = ()  # its ``GroupSummary`` fields, then its usable free GPUs
    util: bool = False  # any GPU's utilisation is known
    idle: frozenset[int] = frozenset()  # the indices of its GPUs the idle tracker holds idle
    pool: GroupKey | None = None  # the pool it is listed under; None while the filter hides it
    parts: list[Part] | None = None
    strip: Strip | None = None

    def update(self, node: Node, idle: frozenset[int] = frozenset()) -> None:
        self.node = node
        self.idle = idle
        self.fields = node_fields(node)
        self.widths = tuple(cell_len(f) for f in self.fields)
        self.gpus = node_gpus(node)
        one = summarize((node,))
        marked = sum(1 for g in self.gpus if g.index in idle and cell_kind(g, True) is Cell.IDLE)
        self.counts = (one.nodes, one.gpus_used, one.gpus_total, one.whole_free, marked, usable_free_gpus(node))
        self.util = has_utilization(node)
        self.parts = self.strip = None


Row = NodeRow | Group


def _fit(text: str, width: int) -> str:
    """``text`` cut (with an ellipsis) or padded to exactly ``width`` cells."""
    length = cell_len(text)
    if length <= width:
        return text + " " * (width - length)
    out, used = [], 0
    for char in text:
        size = cell_len(char)
        if used + size > width - 1:
            break
        out.append(char)
        used += size
    return "".join(out) + "…" + " " * (width - 1 - used)


def summary_parts(summary: GroupSummary) -> list[Part]:
    parts: list[Part] = [
        (f"{summary.nodes} node{'s' if summary.nodes != 1 else ''}", None),
        (" · GPUs ", "gpugrid--muted"),
        (f"{summary.gpus_used}/{summary.gpus_total}", None),
        (" used · ", "gpugrid--muted"),
        (f"{summary.whole_free}", None),
        (" whole free", "gpugrid--muted"),
    ]
    if summary.idle:
        parts += [(" · ", "gpugrid--muted"), (f"{GLYPHS[Cell.IDLE]} {summary.idle} idle-allocated", "gpugrid--idle")]
    return parts


class GpuGrid(QuietScrollView, can_focus=True):
    """Nodes by cluster and partition, one cell per GPU. Keyed rows: ``set_nodes`` updates in place."""

    COMPONENT_CLASSES = {
        "gpugrid--header",
        "gpugrid--group",
        "gpugrid--cursor",
        "gpugrid--cell-cursor",
        "gpugrid--muted",
        "gpugrid--free",
        "gpugrid--busy",
        "gpugrid--idle",
        "gpugrid--unavailable",
        "gpugrid--ok",
        "gpugrid--bad",
    }
    DEFAULT_CSS = """
    GpuGrid { background: $surface; }
    GpuGrid > .gpugrid--header { color: $foreground-muted; text-style: bold; }
    GpuGrid > .gpugrid--group { color: $foreground; text-style: bold; }
    GpuGrid > .gpugrid--cursor { background: $block-cursor-blurred-background; }
    GpuGrid:focus > .gpugrid--cursor { background: $primary 45%; }
    GpuGrid > .gpugrid--cell-cursor { text-style: reverse bold; }
    GpuGrid > .gpugrid--muted { color: $foreground-muted; }
    GpuGrid > .gpugrid--free { color: $text-success; }
    GpuGrid > .gpugrid--busy { color: $text-warning; }
    GpuGrid > .gpugrid--idle { color: $text-primary; text-style: bold; }
    GpuGrid > .gpugrid--unavailable { color: $text-error; }
    GpuGrid > .gpugrid--ok { color: $text-success; }
    GpuGrid > .gpugrid--bad { color: $text-error; }
    """
    BINDINGS = [
        Binding("enter", "select", "Open", id="open-node"),
        Binding("space", "toggle_group", "Collapse/expand", id="toggle-node-group"),
        Binding("up", "cursor_up", "Previous row", show=False, id="node-cursor-up"),
        Binding("down", "cursor_down", "Next row", show=False, id="node-cursor-down"),
        Binding("left", "cursor_left", "Previous GPU", show=False, id="node-cursor-left"),
        Binding("right", "cursor_right", "Next GPU", show=False, id="node-cursor-right"),
        Binding("pageup", "page_up", "Page up", show=False, id="node-page-up"),
        Binding("pagedown", "page_down", "Page down", show=False, id="node-page-down"),
        Binding("home", "first", "First row", show=False, id="node-first"),
        Binding("end", "last", "Last row", show=False, id="node-last"),
    ]

    class CursorMoved(Message):
        """The cursor moved, or what is under it changed."""

        def __init__(self, grid: GpuGrid) -> None:
            super().__init__()
            self.grid = grid

    class NodeSelected(Message):
        """``enter`` on a node row: ``gpu`` is the GPU cell under the cursor, None on the node's fields."""

        def __init__(self, grid: GpuGrid, node: Node, gpu: Gpu | None) -> None:
            super().__init__()
            self.grid = grid
            self.node = node
            self.gpu = gpu

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._records: dict[str, NodeRow] = {}  # every node given, in cluster order, by key
        self._shown: list[NodeRow] = []  # those the filter lets through
        self._groups: dict[GroupKey, Group] = {}
        self._rows: list[Row] = []  # the visible lines under the column header
        self._index: dict[RowKey, int] = {}  # a visible row's key -> its line
        self._header: Strip | None = None
        self._styles: dict[str, Style] = {}
        self.collapsed: set[GroupKey] = set()
        self.filter_text = ""
        self.cursor_row = 0
        self.cursor_gpu: int | None = None  # the GPU column asked for; None: the node's own fields
        self._widths: tuple[int, ...] = tuple(len(h) for h in HEADERS)
        self._wide = False
        self._room = 0  # the width the layout was made for
        self._max_gpus = 0
        self._most: list[int] = [0] * 7
        self._any_util = False
        self._pools: dict[str, list[PoolCapacity]] | None = None  # ``pools`` of each cluster, until the nodes change
        self._idle: dict[str, frozenset[int]] = {}  # node key -> the GPU indices held idle (``set_idle``)

    # -- data --------------------------------------------------------------------------------------
    @staticmethod
    def node_key(node: Node) -> str:
        return f"{node.cluster}/{node.name}"

    def set_nodes(self, nodes: Iterable[Node]) -> None:
        """Show ``nodes`` (in cluster order): only rows whose node changed are redrawn."""
        before = self.cursor_key
        old_rows = self._records
        rows: dict[str, NodeRow] = {}
        changed: list[tuple[NodeRow, Node, Node | None]] = []  # (record, new node, old node)
        for node in nodes:
            key = self.node_key(node)
            row = old_rows.get(key)
            if row is None:
                row = NodeRow(key, node, natural_key(node.name))
                changed.append((row, node, None))
            elif row.node is not node and row.node != node:
                changed.append((row, node, row.node))
            rows[key] = row
        structural = len(rows) != len(old_rows) or any(k not in rows for k in old_rows)
        if not structural and list(rows) != list(old_rows):
            structural = [r.node.cluster for r in rows.values()] != [r.node.cluster for r in old_rows.values()]
        measure = structural
        for row, node, old in changed:
            if (
                old is None
                or old.partitions[:1] != node.partitions[:1]
                or (self.filter_text and node_matches(old, self.filter_text) != node_matches(node, self.filter_text))
            ):
                structural = True
            widths, gpus, util = row.widths, len(row.gpus), row.util
            row.update(node, self._idle.get(row.key, frozenset()))
            if row.util != util or row.widths != widths or len(row.gpus) != gpus:
                measure = True
        self._records = rows
        if changed or structural:
            self._pools = None
        if structural:
            self._rebuild(before)
        else:
            drawn = (self._widths, self._wide, self.virtual_size)
            self._resummarize({row.pool for row, _, _ in changed if row.pool is not None})
            if measure:
                self._measure()
            self._layout()
            if changed and drawn == (self._widths, self._wide, self.virtual_size):
                # Same columns, same lines: repaint only the changed nodes' lines and their groups' on screen.
                self._refresh_rows([row for row, _, _ in changed])
                self.post_message(self.CursorMoved(self))
                return
        if changed or structural:
            self.refresh()
            self.post_message(self.CursorMoved(self))

    def set_idle(self, idle: Iterable[tuple[str, str, int]]) -> None:
        """Mark ``▣`` the GPUs (cluster, node, index) the idle tracker holds idle (its duration rule;
        ``yanflow_tui.idlegpus``), the rest not: only the rows whose marks changed are redrawn."""
        by_node: dict[str, set[int]] = {}
        for cluster, node, index in idle:
            by_node.setdefault(f"{cluster}/{node}", set()).add(index)
        new = {key: frozenset(found) for key, found in by_node.items()}
        if new == self._idle:
            return
        changed = [
            row for key, row in self._records.items() if new.get(key, frozenset()) != self._idle.get(key, frozenset())
        ]
        self._idle = new
        for row in changed:
            row.update(row.node, new.get(row.key, frozenset()))
        if changed:
            self._pools = None
            self._resummarize({row.pool for row in changed if row.pool is not None})
            self._refresh_rows(changed)
            self.post_message(self.CursorMoved(self))

    def is_idle(self, key: str, index: int) -> bool:
        """Whether the grid marks GPU ``index`` of node ``key`` (``node_key``) idle (``set_idle``)."""
        return index in self._idle.get(key, frozenset())

    def _refresh_rows(self, rows: Iterable[NodeRow]) -> None:
        """Mark for repaint the on-screen lines of ``rows`` and of the groups over them (their totals)."""
        index = self._index
        lines: set[int] = set()
        for row in rows:
            pool = row.pool
            for key in (row.key, pool, ("cluster", pool[1]) if pool is not None else None):
                line = index.get(key) if key is not None else None
                if line is not None:
                    lines.add(line)
        top = int(self.scroll_offset.y)
        height = self.scrollable_content_region.height
        for line in sorted(lines):
            if top <= line < top + height - 1:  # under the header line
                self.refresh_line(line + 1)

    def set_filter(self, text: str) -> None:
        """Show only nodes whose name, partition, state, GPU type or reason contains ``text``."""
        if text != self.filter_text:
            self.filter_text = text
            self._rebuild(self.cursor_key)
            self.refresh()
            self.post_message(self.CursorMoved(self))

    def _rebuild(self, keep: RowKey | None) -> None:
        """Regroup every node and rebuild the row list (nodes added, removed, regrouped or filtered)."""
        old_row, old_top = self.cursor_row, int(self.scroll_offset.y)
        groups: dict[GroupKey, Group] = {}
        pools: dict[GroupKey, list[NodeRow]] = {}
        shown: list[NodeRow] = []
        for row in self._records.values():
            node = row.node
            if self.filter_text and not node_matches(node, self.filter_text):
                row.pool = None
                continue
            ckey: GroupKey = ("cluster", node.cluster)
            if ckey not in groups:
                groups[ckey] = Group(ckey, 0, node.cluster, node.cluster)
            partition = node.partitions[0] if node.partitions else ALL
            pkey: GroupKey = ("pool", node.cluster, partition)
            if pkey not in groups:
                groups[pkey] = Group(pkey, 1, node.cluster, partition)
                groups[ckey].pools.append(pkey)
                pools[pkey] = []
            pools[pkey].append(row)
            row.pool = pkey
            shown.append(row)
        for pkey, members in pools.items():
            groups[pkey].nodes = [r.key for r in sorted(members, key=attrgetter("sort"))]
        self._groups, self._shown = groups, shown
        self._resummarize(set(pools))
        self._reflow_rows()
        self._measure()
        self._layout()
        self._restore_cursor(keep, old_row, old_top)

    def _reflow_rows(self) -> None:
        """The visible rows: each cluster, its pools and their nodes, less what is collapsed."""
        rows: list[Row] = []
        nodes, groups = self._records, self._groups
        for group in groups.values():
            if group.level != 0:
                continue
            rows.append(group)
            if group.key in self.collapsed:
                continue
            for pkey in group.pools:
                pool = groups[pkey]
                rows.append(pool)
                if pkey not in self.collapsed:
                    rows.extend(nodes[k] for k in pool.nodes)
        self._rows = rows
        self._index = {row.key: i for i, row in enumerate(rows)}

    def _restore_cursor(self, keep: RowKey | None, old_row: int, old_top: int) -> None:
        """Put the cursor back on the row ``keep`` (or its collapsed group, or the same line) and keep
        it at the same place on screen."""
        row = self._index.get(keep) if keep is not None else None
        pool = self._records[keep].pool if isinstance(keep, str) and keep in self._records else None
        if row is None and pool is not None:  # its group is collapsed
            row = self._index.get(pool, self._index.get(("cluster", pool[1])))
        if row is None:
            row = min(old_row, len(self._rows) - 1)
        self.cursor_row = max(0, row)
        if self.cursor_row != old_row:  # keep the cursor where it was on screen
            self.scroll_to(y=max(0, self.cursor_row - (old_row - old_top)), animate=False, immediate=True, force=True)

    def _resummarize(self, pool_keys: set[GroupKey]) -> None:
        clusters = set()
        nodes = self._records
        for pkey in pool_keys:
            group = self._groups.get(pkey)
            if group is None:
                continue
            counts = (nodes[k].counts for k in group.nodes)
            group.summary = GroupSummary(*list(map(sum, zip(*counts)))[:5])
            clusters.add(("cluster", group.cluster))
            group.parts = group.strip = None
        for ckey in clusters:
            group = self._groups[ckey]
            group.summary = sum((self._groups[p].summary for p in group.pools), GroupSummary())
            group.parts = group.strip = None

    # -- layout ------------------------------------------------------------------------------------
    def _measure(self) -> None:
        """The widest value of each column, the most GPUs on a node, whether any utilisation is known:
        one pass over the shown nodes, needed only when nodes come, go or change width."""
        shown = self._shown
        self._most = [max(column) for column in zip(*(r.widths for r in shown))] if shown else [0] * 7
        self._max_gpus = max((len(r.gpus) for r in shown), default=0)
        self._any_util = any(r.util for r in shown)

    def _layout(self) -> None:
        """Column widths and the cell mode (utilisation digits when there is data and room for them)."""
        most = self._most
        widths = [min(max(len(h), w), cap) for h, w, cap in zip(HEADERS, most, MAX_WIDTHS)]
        # the width inside the scrollbars: a vertical scrollbar takes two columns from the cells
        room = self._room = self.scrollable_content_region.width or self.size.width or 80
        fixed = len(INDENT[2]) + sum(widths) + len(SEP) * len(widths)
        reserve = len(CUT) if most[6] else 0  # a column to say a note goes on off-screen
        wide = self._any_util and fixed + self._max_gpus * WIDE_CELL + reserve <= room
        cells = self._max_gpus * (WIDE_CELL if wide else 1)
        while fixed + cells + reserve > room:  # narrow terminal: give up room from the widest text columns first
            shrinkable = [i for i in SHRINK_ORDER if widths[i] > MIN_WIDTHS[i]]
            if not shrinkable:
                break
            widest = max(shrinkable, key=lambda i: widths[i] - MIN_WIDTHS[i])
            widths[widest] -= 1
            fixed -= 1
        if tuple(widths) != self._widths or wide != self._wide:
            self._widths, self._wide = tuple(widths), wide
            for row in self._records.values():
                row.parts = row.strip = None
            self._header = None
        group_width = max((sum(cell_len(t) for t, _ in self._group_parts(g)) for g in self._groups.values()), default=0)
        width = max(fixed + max(cells, len("GPUS")) + len(SEP) + most[6], group_width)
        size = Size(width, len(self._rows) + 1)
        if size != self.virtual_size:
            self.virtual_size = size

    @property
    def gpu_x(self) -> int:
        """Where the first GPU cell starts on a node line."""
        return len(INDENT[2]) + sum(self._widths) + len(SEP) * len(self._widths)

    @property
    def cell_width(self) -> int:
        return WIDE_CELL if self._wide else 1

    def on_resize(self, event: events.Resize) -> None:
        laid = (self._widths, self._wide, self.virtual_size)
        self._layout()
        self._scroll_to_cursor()
        if (self._widths, self._wide, self.virtual_size) != laid:
            self.refresh()  # (the same columns: the layout that resized the grid drew it, a frame ago)

    # -- rows as text ------------------------------------------------------------------------------
    def _group_parts(self, group: Group) -> list[Part]:
        marker = CLOSED if group.key in self.collapsed else OPEN
        label = clean(group.name)
        return [
            (INDENT[group.level] + marker, "gpugrid--muted"),
            (label, "gpugrid--group"),
            (SEP, None),
            *summary_parts(group.summary),
        ]

    def _node_parts(self, row: NodeRow) -> list[Part]:
        fields = row.fields
        parts: list[Part] = [(INDENT[2], None)]
        styles = (None, STATE_STYLE[state_kind(row.node)], "gpugrid--muted", None, None, None)
        for text, width, style in zip(fields, self._widths, styles):
            parts.append((_fit(text, width), style))
            parts.append((SEP, None))
        gpus = row.gpus
        if not gpus:
            parts.append((_fit("-", max(1, self._max_gpus * self.cell_width)), "gpugrid--muted"))
        for gpu in gpus:
            kind = cell_kind(gpu, gpu.index in row.idle)
            text = GLYPHS[kind] + (util_label(gpu) + " " if self._wide else "")
            parts.append((text, CELL_STYLE[kind]))
        pad = (self._max_gpus - len(gpus)) * self.cell_width if gpus else 0
        if fields[6]:
            parts.append((" " * pad + SEP, None))
            parts.append((fields[6], "gpugrid--muted"))
        return parts

    def _parts(self, row: Row) -> list[Part]:
        parts = row.parts
        if parts is None:
            parts = row.parts = self._group_parts(row) if isinstance(row, Group) else self._node_parts(row)
        return parts

    def _record(self, key: RowKey) -> Row:
        return self._records[key] if isinstance(key, str) else self._groups[key]

    def row_parts(self, key: RowKey) -> list[Part]:
        return self._parts(self._record(key))

    def row_text(self, key: RowKey) -> str:
        """A row as plain text (for the status line, tests and export)."""
        return "".join(text for text, _ in self.row_parts(key)).rstrip()

    def _header_parts(self) -> list[Part]:
        text = INDENT[2] + "".join(_fit(h, w) + SEP for h, w in zip(HEADERS, self._widths))
        text += "GPUS" + (" (util %)" if self._wide else "")
        return [(text, "gpugrid--header")]

    # -- drawing -----------------------------------------------------------------------------------
    def _style(self, name: str | None) -> Style:
        """A component's own style, its translucent colours blended over the grid's background."""
        if not name:
            return Style()
        style = self._styles.get(name)
        if style is None:
            styles = self.get_component_styles(name)
            under = self.background_colors[1]
            color = (under + styles.color).rich_color if styles.has_rule("color") else None
            background = (under + styles.background).rich_color if styles.has_rule("background") else None
            style = self._styles[name] = Style(color=color, bgcolor=background) + styles.text_style
        return style

    def cell_style(self, cell: Cell) -> Style:
        """The theme's style of a GPU cell kind (for a legend drawn elsewhere)."""
        return self._style(CELL_STYLE[cell])

    def _strip(self, parts: list[Part], base: Style, cell: int | None = None) -> Strip:
        """``parts`` drawn over ``base``; ``cell`` is the index of the part under the cell cursor."""
        cursor = self._style("gpugrid--cell-cursor") if cell is not None else None
        segments = []
        for i, (text, name) in enumerate(parts):
            style = base + self._style(name)
            if i == cell and cursor is not None:
                style += cursor
            segments.append(Segment(text, style))
        return Strip(segments)

    def render_lines(self, crop: Region) -> list[Strip]:
        if self._room != self.scrollable_content_region.width:
            self._layout()  # a scrollbar came or went: the width changed without a resize
        return super().render_lines(crop)

    def offscreen_cells(self, key: str, scroll_x: int | None = None) -> int:
        """How many of a node's GPU cells lie right of the visible width (at ``scroll_x``, or now),
        counting those the ``MORE`` marker would cover."""
        row = self._records.get(key)
        return self._offscreen(len(row.gpus) if row is not None else 0, scroll_x)

    def _offscreen(self, gpus: int, scroll_x: int | None = None) -> int:
        if not gpus:
            return 0
        x = int(self.scroll_offset.x) if scroll_x is None else scroll_x
        right = x + self.scrollable_content_region.width
        step = self.cell_width
        start = self.gpu_x
        if start + gpus * step <= right:
            return 0
        for hidden in range(1, gpus + 1):  # the marker takes room from the last visible cells
            edge = right - len(MORE.format(hidden))
            shown = max(0, min(gpus, (edge - start) // step))
            if gpus - shown <= hidden:
                return gpus - shown
        return gpus

    def _mark_edge(self, row: Row, line: Strip, scroll_x: int, width: int, base: Style) -> Strip:
        """``line`` cropped to the view, saying at the right edge what a node line has off-screen:
        ``+N›`` GPU cells, or ``…`` text (a long note)."""
        strip = line.crop_extend(scroll_x, scroll_x + width, base)
        if not isinstance(row, NodeRow) or width <= 0:
            return strip
        hidden = self._offscreen(len(row.gpus), scroll_x)
        if hidden:
            mark = MORE.format(hidden)
        elif line.cell_length > scroll_x + width and (
            scroll_x + width - len(CUT) >= self.gpu_x + len(row.gpus) * self.cell_width
        ):
            mark = CUT  # never over a GPU cell
        else:
            return strip
        mark = mark[-width:]
        cut = strip.crop(0, width - len(mark))
        return Strip.join([cut, Strip([Segment(mark, base + self._style("gpugrid--muted"))])])

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        base = self.rich_style
        if y == 0:
            if self._header is None:
                self._header = self._strip(self._header_parts(), base)
            return self._header.crop_extend(scroll_x, scroll_x + width, base)
        line = scroll_y + y - 1
        if line >= len(self._rows):
            return Strip.blank(width, base)
        row = self._rows[line]
        if line == self.cursor_row:
            cursor_base = base + self._style("gpugrid--cursor")
            drawn = self._strip(self._parts(row), cursor_base, self._cursor_part(row))
            return self._mark_edge(row, drawn, scroll_x, width, cursor_base)
        cached = row.strip
        if cached is None:
            cached = row.strip = self._strip(self._parts(row), base)
        return self._mark_edge(row, cached, scroll_x, width, base)

    def _cursor_part(self, row: Row) -> int | None:
        """Index of the part the cell cursor is on: a GPU cell, or the node's name."""
        if isinstance(row, Group):
            return 1  # the group's name
        gpu = self.cursor_gpu_index
        return 1 if gpu is None else 1 + 2 * len(HEADERS) + gpu

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = {}
        for node_row in self._records.values():
            node_row.strip = None
        for group in self._groups.values():
            group.strip = None
        self._header = None
        self.refresh()

    def on_focus(self) -> None:
        self._styles.pop("gpugrid--cursor", None)
        self.refresh()

    def on_blur(self) -> None:
        self._styles.pop("gpugrid--cursor", None)
        self.refresh()

    # -- cursor ------------------------------------------------------------------------------------
    def _cursor_record(self) -> Row | None:
        return self._rows[self.cursor_row] if 0 <= self.cursor_row < len(self._rows) else None

    @property
    def cursor_key(self) -> RowKey | None:
        row = self._cursor_record()
        return row.key if row is not None else None

    @property
    def cursor_node(self) -> Node | None:
        row = self._cursor_record()
        return row.node if isinstance(row, NodeRow) else None

    @property
    def cursor_group(self) -> Group | None:
        row = self._cursor_record()
        return row if isinstance(row, Group) else None

    @property
    def cursor_gpu_index(self) -> int | None:
        """The GPU cell under the cursor on a node row (position in the row), None on its fields."""
        row = self._cursor_record()
        if not isinstance(row, NodeRow) or self.cursor_gpu is None or not row.gpus:
            return None
        return min(self.cursor_gpu, len(row.gpus) - 1)

    @property
    def cursor_cell(self) -> Gpu | None:
        """The GPU under the cell cursor."""
        row = self._cursor_record()
        index = self.cursor_gpu_index
        return None if index is None or not isinstance(row, NodeRow) else row.gpus[index]

    def move_cursor(self, row: int | None = None, gpu: int | None | str = KEEP) -> None:
        """Put the cursor on ``row`` (clamped) and, unless ``KEEP``, on GPU column ``gpu`` (None: the fields)."""
        if row is not None and self._rows:
            self.cursor_row = max(0, min(row, len(self._rows) - 1))
        if not isinstance(gpu, str):
            self.cursor_gpu = gpu
        self._scroll_to_cursor()
        self.refresh()
        self.post_message(self.CursorMoved(self))

    def select_key(self, key: RowKey, gpu: int | None | str = KEEP) -> bool:
        """Move the cursor to the row ``key`` (a node's "cluster/name" or a group key); False if not shown."""
        row = self._index.get(key)
        if row is None:
            return False
        self.move_cursor(row, gpu)
        return True

    def _scroll_to_cursor(self) -> None:
        height = self.scrollable_content_region.height - 1  # the column header line stays put
        if height <= 0 or not self._rows:
            return
        top = int(self.scroll_offset.y)
        # force: rows just added show their scrollbar only at the next layout, and until then Textual
        # refuses a scroll (the cursor would stay below the screen)
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False, immediate=True, force=True)
        elif self.cursor_row >= top + height:
            self.scroll_to(y=self.cursor_row - height + 1, animate=False, immediate=True, force=True)
        index = self.cursor_gpu_index
        row = self._cursor_record()
        if index is not None and isinstance(row, NodeRow):
            left = self.gpu_x + index * self.cell_width
            right = left + self.cell_width
            x, width = int(self.scroll_offset.x), self.scrollable_content_region.width
            if index < len(row.gpus) - 1:  # keep the cell clear of the off-screen count
                width -= len(" +99›")
            if right > x + width:
                self.scroll_to(x=right - width, animate=False, immediate=True)
            elif left < x:
                self.scroll_to(x=max(0, left - 4), animate=False, immediate=True)
        elif self.scroll_offset.x and self.cursor_gpu is None:
            self.scroll_to(x=0, animate=False, immediate=True)

    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height - 2)

    def action_cursor_up(self) -> None:
        self.move_cursor(self.cursor_row - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(self.cursor_row + 1)

    def action_cursor_left(self) -> None:
        index = self.cursor_gpu_index
        if index is not None:
            self.move_cursor(gpu=index - 1 if index > 0 else None)

    def action_cursor_right(self) -> None:
        row = self._cursor_record()
        if isinstance(row, NodeRow) and row.gpus:
            index = self.cursor_gpu_index
            self.move_cursor(gpu=0 if index is None else min(index + 1, len(row.gpus) - 1))

    def action_page_up(self) -> None:
        self.move_cursor(self.cursor_row - self._page())

    def action_page_down(self) -> None:
        self.move_cursor(self.cursor_row + self._page())

    def action_first(self) -> None:
        self.move_cursor(0)

    def action_last(self) -> None:
        self.move_cursor(len(self._rows) - 1)

    def toggle_group(self, key: GroupKey) -> None:
        """Collapse or expand a group; the cursor moves to it when it was inside."""
        group = self._groups.get(key)
        if group is None:
            return
        inside = self.cursor_key
        if key in self.collapsed:
            self.collapsed.discard(key)
        else:
            self.collapsed.add(key)
            if key in self._ancestors(inside):
                inside = key
        group.parts = group.strip = None
        old_row, old_top = self.cursor_row, int(self.scroll_offset.y)
        self._reflow_rows()
        self._layout()
        self._restore_cursor(inside, old_row, old_top)
        self._scroll_to_cursor()
        self.refresh()
        self.post_message(self.CursorMoved(self))

    def _ancestors(self, key: RowKey | None) -> tuple[GroupKey, ...]:
        """The groups a row sits in: a node's pool and cluster, a pool's cluster."""
        if isinstance(key, str):
            row = self._records.get(key)
            pool = row.pool if row is not None else None
            return () if pool is None else (pool, ("cluster", pool[1]))
        if isinstance(key, tuple) and key[0] == "pool":
            return (("cluster", key[1]),)
        return ()

    def action_toggle_group(self) -> None:
        row = self._cursor_record()
        key = row.pool if isinstance(row, NodeRow) else row.key if row is not None else None
        if key is not None:
            self.toggle_group(key)

    def action_select(self) -> None:
        row = self._cursor_record()
        if isinstance(row, Group):
            self.toggle_group(row.key)
        elif row is not None:
            self.post_message(self.NodeSelected(self, row.node, self.cursor_cell))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y == 0:
            return
        line = int(self.scroll_offset.y) + offset.y - 1
        if line >= len(self._rows):
            return
        x = int(self.scroll_offset.x) + offset.x
        row = self._rows[line]
        gpu: int | None = None
        if isinstance(row, NodeRow) and row.gpus and x >= self.gpu_x:
            index = (x - self.gpu_x) // self.cell_width
            gpu = index if index < len(row.gpus) else None
        again = line == self.cursor_row and gpu == self.cursor_gpu_index
        self.move_cursor(line, gpu)
        if again or event.chain > 1:
            self.action_select()

    # -- queries -----------------------------------------------------------------------------------
    @property
    def node_count(self) -> int:
        """Nodes shown (after the filter), collapsed groups included."""
        return len(self._shown)

    @property
    def row_count(self) -> int:
        return len(self._rows)

    def row_keys(self) -> list[RowKey]:
        return [row.key for row in self._rows]

    def group(self, cluster: str, partition: str | None = None) -> Group | None:
        return self._groups.get(("cluster", cluster) if partition is None else ("pool", cluster, partition))

    def pools(self, cluster: str) -> list[PoolCapacity]:
        """``capacity.pools`` of one cluster's nodes (a node counts in each of its partitions), from the
        counts kept per node, so a refresh does not walk every GPU again. The filter does not apply.
        Worked out for every cluster in one pass, kept until the nodes change."""
        if self._pools is None:
            by_cluster: dict[str, dict[str, list[int]]] = {}
            for row in self._records.values():
                node = row.node
                found = by_cluster.get(node.cluster)
                if found is None:
                    found = by_cluster[node.cluster] = {}
                _, _, total, whole, _, free = row.counts
                for name in node.partitions or (ALL,):
                    acc = found.get(name)
                    if acc is None:
                        acc = found[name] = [0, 0, 0, 0]
                    acc[0] += 1
                    acc[1] += whole
                    acc[2] += total
                    acc[3] += free
            self._pools = {
                name: [PoolCapacity(pool, *acc) for pool, acc in found.items()] for name, found in by_cluster.items()
            }
        return list(self._pools.get(cluster, ()))

    def gpus_of(self, key: str) -> tuple[Gpu, ...]:
        """The GPU cells of a node row (per-GPU data, or cells made from its counts)."""
        row = self._records.get(key)
        return row.gpus if row is not None else ()
