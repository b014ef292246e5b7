"""Terminal line plots drawn with braille dots: a pure function from metric points to text lines.

Each character cell holds a 2x4 grid of dots, so a 60x12 plot has 120x48 points of resolution.
Several series share the axes, each in its own colour; the y range and step range are labelled.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from rich.text import Text

COLOURS = ("cyan", "magenta", "yellow", "green", "red", "blue")
# Braille dot bits for (column, row) in a 2x4 cell.
_DOTS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))
_BLANK = 0x2800


def _finite(points: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in points if math.isfinite(x) and math.isfinite(y)]


def line_plot(series: dict[str, Sequence[tuple[float, float]]], width: int = 60, height: int = 12) -> list[Text]:
    """Lines of a plot of ``series`` ({name: [(step, value), ...]}) in ``width`` x ``height`` cells
    plus a label column on the left and a legend line below. Non-finite values are skipped."""
    clean = {name: sorted(_finite(points)) for name, points in series.items()}
    clean = {name: pts for name, pts in clean.items() if pts}
    if not clean:
        return [Text("no metrics reported yet", style="dim")]
    xs = [x for pts in clean.values() for x, _ in pts]
    ys = [y for pts in clean.values() for _, y in pts]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    if y0 == y1:
        y0, y1 = y0 - 1, y1 + 1
    if x0 == x1:
        x0, x1 = x0 - 1, x1 + 1
    dots_w, dots_h = width * 2, height * 4
    cells = [[0] * width for _ in range(height)]
    owner: list[list[int]] = [[-1] * width for _ in range(height)]

    def plot(px: int, py: int, index: int) -> None:
        if 0 <= px < dots_w and 0 <= py < dots_h:
            row, col = py // 4, px // 2
            cells[row][col] |= _DOTS[px % 2][py % 4]
            owner[row][col] = index

    def to_dot(x: float, y: float) -> tuple[int, int]:
        px = round((x - x0) / (x1 - x0) * (dots_w - 1))
        py = round((y1 - y) / (y1 - y0) * (dots_h - 1))
        return px, py

    for index, pts in enumerate(clean.values()):
        previous = None
        for x, y in pts:
            here = to_dot(x, y)
            if previous is None:
                plot(*here, index)
            else:  # join consecutive points so the line has no gaps
                (ax, ay), (bx, by) = previous, here
                steps = max(abs(bx - ax), abs(by - ay), 1)
                for i in range(steps + 1):
                    plot(round(ax + (bx - ax) * i / steps), round(ay + (by - ay) * i / steps), index)
            previous = here

    top, bottom = _num(y1), _num(y0)
    label_w = max(len(top), len(bottom))
    lines: list[Text] = []
    for row in range(height):
        label = top if row == 0 else bottom if row == height - 1 else ""
        line = Text(f"{label:>{label_w}} ┤" if label else f"{'':>{label_w}} │", style="dim", no_wrap=True)
        for col in range(width):
            bits = cells[row][col]
            line.append(chr(_BLANK + bits) if bits else " ", COLOURS[owner[row][col] % len(COLOURS)] if bits else "")
        lines.append(line)
    axis = Text(f"{'':>{label_w}} └" + "─" * width, style="dim", no_wrap=True)
    lines.append(axis)
    ticks = Text(f"{'':>{label_w}}  {_num(x0)}", style="dim", no_wrap=True)
    right = _num(x1)
    ticks.append(" " * max(1, width - len(_num(x0)) - len(right)) + right)
    lines.append(ticks)
    legend = Text(no_wrap=True, overflow="ellipsis")
    for index, (name, pts) in enumerate(clean.items()):
        legend.append("━━ ", COLOURS[index % len(COLOURS)])
        legend.append(f"{name} (last {_num(pts[-1][1])})  ")
    lines.append(legend)
    return lines


def _num(value: float) -> str:
    if value == int(value) and abs(value) < 1e9:
        return str(int(value))
    return f"{value:.4g}"
