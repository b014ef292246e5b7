"""The job detail's training curves: a ``Static`` that owns a ``CurveReader`` over the job's event
files (through its backend's ``event_files`` / ``read_event_bytes``), re-reads only what was
appended at each ``reload``, and draws ``render.curves`` with the tag, x axis and smoothing the user
chose. Parsing and drawing run in threads; reloads never overlap (one still running skips the next)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

from yanflow_tui.curves import SMOOTHING_WEIGHTS, CurveReader, Curves
from yanflow_tui.hub import error_text
from yanflow_tui.sanitize import clean
from yanflow_tui.screens.render.curves import CurveOptions, curve_lines

if TYPE_CHECKING:
    from textual import getters

    from yanflow_tui.app import YanflowApp

PLOT_HEIGHT = 10


class CurvesView(Static):
    """Curves of one job; ``curves`` is what the plot was last drawn from."""

    if TYPE_CHECKING:
        app = getters.app(YanflowApp)

    def __init__(self, cluster: str, job_id: str, **kwargs) -> None:
        super().__init__(Text("reading the event files…", style="dim"), **kwargs)
        self.cluster = cluster
        self.job_id = job_id
        self.reader = CurveReader()
        self.curves = Curves()
        self.options = CurveOptions()
        self.reloads = 0  # finished reloads (tests wait on it)
        self.problem = ""
        self._busy = False

    def on_unmount(self) -> None:
        self.reader.close()

    async def reload(self) -> None:
        """Read what the event files gained since the last reload, then redraw."""
        if self._busy:
            return
        self._busy = True
        try:
            backend = self.app.hub.backend(self.cluster)
            await self.reader.refresh(backend, self.job_id, parse=asyncio.to_thread, call=self.app.hub.call)
            self.curves = self.reader.curves
            self.problem = ""
        except Exception as exc:
            self.problem = f"cannot read the event files under {self.reader.logdir or 'the log directory'}: " + (
                error_text(exc)
            )
        finally:
            self._busy = False
            self.reloads += 1
        await self.redraw()

    async def redraw(self) -> None:
        curves, options = self.curves, self.options
        width = max(20, min(100, (self.content_region.width or 60) - 14))
        if not curves.series:
            where = clean(self.reader.logdir) if self.reader.logdir else "its log directory"
            body = Text(f"no scalars yet in the event files under {where}", style="dim")
        else:
            lines = await asyncio.to_thread(curve_lines, curves, options, width, PLOT_HEIGHT)
            body = Text("\n", no_wrap=True, overflow="crop").join(lines)
        if self.problem:
            body = Text.assemble(Text(clean(self.problem), style="red"), "\n", body)
        if self.is_mounted:
            self.update(body)

    def next_tag(self) -> None:
        count = len(self.curves.tags)
        tag = self.options.tag + 1
        self.options = replace(self.options, tag=tag if tag < count else -1)

    def toggle_x_axis(self) -> None:
        self.options = replace(self.options, wall_time=not self.options.wall_time)

    def next_smoothing(self) -> None:
        weights = SMOOTHING_WEIGHTS
        now = self.options.smoothing
        after = [w for w in weights if w > now]
        self.options = replace(self.options, smoothing=after[0] if after else weights[0])
