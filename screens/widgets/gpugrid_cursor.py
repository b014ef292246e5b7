"""The GPU grid's cursor: over rows (nodes and group headers) and over the GPU cells of a node,
kept in view, moved by keys and clicks, and what it points at. A mixin of ``GpuGrid``, which holds
the rows (``_rows``, ``_index``, ``_node_map``, ``_gpus``, ``_groups``) and draws them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import events

from yanflow_tui.model import Gpu, Node

if TYPE_CHECKING:
    from yanflow_tui.screens.widgets.gpugrid import Group, GroupKey, RowKey


class GridCursor:
    """Cursor state and actions for ``GpuGrid`` (``cursor_row``, ``cursor_gpu`` are its reactives)."""

    # -- cursor ------------------------------------------------------------------------------------
    @property
    def cursor_key(self) -> RowKey | None:
        return self._rows[self.cursor_row] if 0 <= self.cursor_row < len(self._rows) else None

    @property
    def cursor_node(self) -> Node | None:
        key = self.cursor_key
        return self._node_map.get(key) if isinstance(key, str) else None

    @property
    def cursor_group(self) -> Group | None:
        key = self.cursor_key
        return self._groups.get(key) if isinstance(key, tuple) else None

    @property
    def cursor_gpu_index(self) -> int | None:
        """The GPU cell under the cursor on a node row (position in the row), None on its fields."""
        key = self.cursor_key
        if not isinstance(key, str) or self.cursor_gpu is None or not self._gpus.get(key):
            return None
        return min(self.cursor_gpu, len(self._gpus[key]) - 1)

    @property
    def cursor_cell(self) -> Gpu | None:
        """The GPU under the cell cursor."""
        index = self.cursor_gpu_index
        key = self.cursor_key
        return None if index is None else self._gpus[key][index]

    def move_cursor(self, row: int | None = None, gpu: int | None | str = "keep") -> None:
        """Put the cursor on ``row`` (clamped) and, unless "keep", on GPU column ``gpu`` (None: the fields)."""
        if row is not None and self._rows:
            self.cursor_row = max(0, min(row, len(self._rows) - 1))
        if gpu != "keep":
            self.cursor_gpu = gpu  # type: ignore[assignment]
        self._scroll_to_cursor()
        self.refresh()
        self.post_message(self.CursorMoved(self))

    def select_key(self, key: RowKey, gpu: int | None | str = "keep") -> bool:
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
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False, immediate=True)
        elif self.cursor_row >= top + height:
            self.scroll_to(y=self.cursor_row - height + 1, animate=False, immediate=True)
        index = self.cursor_gpu_index
        if index is not None:
            left = self.gpu_x + index * self.cell_width
            right = left + self.cell_width
            x, width = int(self.scroll_offset.x), self.scrollable_content_region.width
            if index < len(self._gpus[self.cursor_key]) - 1:  # keep the cell clear of the off-screen count
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
        key = self.cursor_key
        gpus = self._gpus.get(key) if isinstance(key, str) else None
        if gpus:
            index = self.cursor_gpu_index
            self.move_cursor(gpu=0 if index is None else min(index + 1, len(gpus) - 1))

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
        if key not in self._groups:
            return
        inside = self.cursor_key
        if key in self.collapsed:
            self.collapsed.discard(key)
        else:
            self.collapsed.add(key)
            if key in self._ancestors(inside):
                inside = key
        self._parts.pop(key, None)
        self._strips.pop(key, None)
        old_row, old_top = self.cursor_row, int(self.scroll_offset.y)
        self._reflow_rows()
        self._layout()
        self._restore_cursor(inside, old_row, old_top)
        self._scroll_to_cursor()
        self.refresh()
        self.post_message(self.CursorMoved(self))

    def _ancestors(self, key: RowKey | None) -> tuple[GroupKey, ...]:
        """The groups a row sits in: a node's pool and cluster, a pool's cluster."""
        if isinstance(key, str) and key in self._node_group:
            pool = self._node_group[key]
            return pool, ("cluster", pool[1])
        if isinstance(key, tuple) and key[0] == "pool":
            return (("cluster", key[1]),)
        return ()

    def action_toggle_group(self) -> None:
        key = self.cursor_key
        if isinstance(key, str):
            key = self._node_group.get(key)
        if key is not None:
            self.toggle_group(key)

    def action_select(self) -> None:
        key = self.cursor_key
        if isinstance(key, tuple):
            self.toggle_group(key)
        elif key is not None:
            self.post_message(self.NodeSelected(self, self._node_map[key], self.cursor_cell))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y == 0:
            return
        row = int(self.scroll_offset.y) + offset.y - 1
        if row >= len(self._rows):
            return
        x = int(self.scroll_offset.x) + offset.x
        key = self._rows[row]
        gpu: int | None = None
        if isinstance(key, str) and self._gpus.get(key) and x >= self.gpu_x:
            index = (x - self.gpu_x) // self.cell_width
            gpu = index if index < len(self._gpus[key]) else None
        again = row == self.cursor_row and gpu == self.cursor_gpu_index
        self.move_cursor(row, gpu)
        if again or event.chain > 1:
            self.action_select()
