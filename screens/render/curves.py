"""Training curves as cells: the chosen tags of a ``Curves`` drawn with the braille ``line_plot``, by
step or by wall time, with TensorBoard's smoothing, then min / max / last per tag. Pure: a million
points are thinned to the plot's columns (each column keeps its lowest and highest point) before
they are drawn, so the cost is one pass over the points."""

from __future__ import annotations

import bisect
import itertools
import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text

from yanflow_tui.curves import CurvePoint, Curves, smooth, stats
from yanflow_tui.screens.render.plot import COLOURS, line_plot
from yanflow_tui.speed import collector_off

MAX_TAGS = len(COLOURS)  # tags drawn at once when "all" are chosen
_STEP, _WALL_TIME, _VALUE, _X, _Y = (operator.itemgetter(i) for i in (0, 1, 2, 0, 1))


@dataclass(frozen=True)
class CurveOptions:
    """What the user chose: ``tag`` -1 for all tags (the first ``MAX_TAGS``), else one tag's index;
    the x axis by wall time (seconds since the first point) or by step; the smoothing weight."""

    tag: int = -1
    wall_time: bool = False
    smoothing: float = 0.6


def chosen_tags(curves: Curves, tag: int) -> list[str]:
    tags = curves.tags
    if 0 <= tag < len(tags):
        return [tags[tag]]
    return tags[:MAX_TAGS]


def thin(points: Sequence[tuple[float, float]], columns: int) -> list[tuple[float, float]]:
    """At most two points per column of ``columns`` across the x range (its lowest and highest, in x
    order; the first of equal ones): the same line at that resolution. ``points`` sorted by x, so a
    column is a run of them: found by bisection, its lowest and highest by ``min`` / ``max`` (C loops,
    not one Python step per point)."""
    if len(points) <= 2 * columns or columns <= 0:
        return list(points)
    x0, x1 = points[0][0], points[-1][0]
    scale = columns / ((x1 - x0) or 1.0)
    last = columns - 1

    def column(point: tuple[float, float]) -> int:
        found = int((point[0] - x0) * scale)
        return found if found < last else last

    ys = list(map(_Y, points))
    out: list[tuple[float, float]] = []
    start, count = 0, len(points)
    while start < count:
        end = bisect.bisect_right(points, column(points[start]), lo=start, key=column)
        run = ys[start:end]
        lo, hi = points[start + run.index(min(run))], points[start + run.index(max(run))]
        out.extend((lo, hi) if lo[0] <= hi[0] else (hi, lo))
        start = end
    return out


def _xy(points: Sequence[CurvePoint], wall_time: bool, origin: float, weight: float) -> list[tuple[float, float]]:
    values = list(map(_VALUE, points))  # map over C getters: a million points each pass
    if weight:
        values = smooth(values, weight)
    if wall_time:
        xs = [t - origin for t in map(_WALL_TIME, points)]
    else:
        xs = list(map(float, map(_STEP, points)))
    pairs = list(zip(xs, values))
    if not all(map(operator.le, xs, itertools.islice(xs, 1, None))):
        pairs.sort(key=_X)
    return pairs


def _num(value: float) -> str:
    return f"{value:.4g}"


def curve_lines(curves: Curves, options: CurveOptions, width: int = 60, height: int = 10) -> list[Text]:
    """The plot of the chosen tags, a line saying what is shown, and a stats line per tag."""
    tags = chosen_tags(curves, options.tag)
    if not tags:
        return [Text("no scalars in the event files yet", style="dim")]
    origin = min((curves.series[t][0].wall_time for t in tags if curves.series[t]), default=0.0)
    if not math.isfinite(origin):
        origin = 0.0
    with collector_off():  # a million (x, y) pairs: none can be in a cycle (see ``speed.collector_off``)
        series: dict[str, Sequence[tuple[float, float]]] = {
            tag: thin(_xy(curves.series[tag], options.wall_time, origin, options.smoothing), width * 2) for tag in tags
        }
    lines = line_plot(series, width, height)
    axis = "wall time (s since the first point)" if options.wall_time else "step"
    shown = "all tags" if options.tag < 0 or len(tags) > 1 else f"tag {options.tag + 1} of {len(curves.tags)}"
    lines.append(
        Text(f"x: {axis}   smoothing: {options.smoothing:g}   {shown} ({len(curves.tags)} in all)", style="dim")
    )
    tag_w = max(len(t) for t in tags)
    for index, tag in enumerate(tags):
        found = stats(curves.series[tag])
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append("━━ ", COLOURS[index % len(COLOURS)])
        line.append(f"{tag:<{tag_w}}")
        if found is None:
            line.append("  no finite values", "dim")
        else:
            line.append(
                f"  min {_num(found.minimum)}  max {_num(found.maximum)}  last {_num(found.last)}"
                f"  ({found.count} points)"
            )
        lines.append(line)
    return lines
