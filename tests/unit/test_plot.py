"""The braille line plot: known points land where they should; bad values are skipped."""

from __future__ import annotations

import math

from yanflow_tui.screens.render.plot import line_plot


def plain(lines):
    return [line.plain for line in lines]


def test_a_rising_line_goes_from_bottom_left_to_top_right():
    out = plain(line_plot({"acc": [(0, 0.0), (10, 1.0)]}, width=10, height=4))
    grid = [line[line.index("┤" if "┤" in line else "│") + 1 :] for line in out[:4]]
    assert grid[3][0] != " " and grid[0][0] == " "  # starts bottom left
    assert grid[0][-1] != " " and grid[3][-1] == " "  # ends top right
    assert out[0].startswith("1 ┤") and out[3].startswith("0 ┤")
    assert out[5].split() == ["0", "10"]  # the step range
    assert "acc (last 1)" in out[6]


def test_each_series_has_its_own_colour_and_legend():
    lines = line_plot({"loss": [(0, 2), (5, 1)], "val": [(0, 1), (5, 2)]}, width=12, height=5)
    styles = {span.style for line in lines[:5] for span in line.spans}
    assert {"cyan", "magenta"} <= styles
    assert "loss (last 1)" in lines[-1].plain and "val (last 2)" in lines[-1].plain


def test_no_points_and_non_finite_values_never_crash():
    assert plain(line_plot({}, 10, 3)) == ["no metrics reported yet"]
    assert plain(line_plot({"x": [(0, math.nan), (1, math.inf)]}, 10, 3)) == ["no metrics reported yet"]
    flat = plain(line_plot({"x": [(3, 5.0)]}, 10, 3))  # one point, flat range: still drawn
    assert any(ch not in " │┤" for line in flat[:3] for ch in line.split("┤" if "┤" in line else "│", 1)[1])
