"""The Queue's one column table (``yanflow_tui.queuecolumns``) and its three readers: the renderer
(``screens/render/rows.py``), the Queue's table columns (``screens/queue.py`` ``COLUMNS``) and the early
painter (``earlypaint``). Each reader is checked on what it derived or draws, against the table; a
reader drifted on purpose shows that the check would see it."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timezone

import pytest
from rich.style import Style
from rich.text import Text

from yanflow_tui import earlypaint, queuecolumns, snapcache
from yanflow_tui.hub import ClusterSnapshot, Health
from yanflow_tui.model import Job, JobState
from yanflow_tui.screens import queue
from yanflow_tui.screens.render import rows

TABLE = queuecolumns.COLUMNS
NOW = 1_800_000_000.0
SUBMITTED = datetime.fromtimestamp(NOW - 4000, timezone.utc)
JOBS = (  # (job, members of its closed group): each cell rule met, empty and not
    (Job("7", "hpc", "train", "alice", JobState.RUNNING, gpus=8, nodes=("n1", "n2"), submit_time=SUBMITTED), 0),
    (Job("12", "lab", "sweep", "bob", JobState.PENDING, reason="Priority", submit_time=None), 3),
    (Job("9\x1b[2J", "hpc", "x\x1b]0;t\x07y", "日本", JobState.FAILED, nodes=("\x1b[0m",), submit_time=SUBMITTED), 0),
    *((Job(str(i), "hpc", "s", "u", state), 0) for i, state in enumerate(JobState)),
)


def _plain(cell: object) -> str:
    shown = cell() if callable(cell) else cell
    return shown.plain if isinstance(shown, Text) else str(shown)


def _words(style: str) -> tuple[str, bool, bool]:
    """A table style as Rich reads it (the renderer's side): (colour name or "", bold, dim)."""
    parsed = Style.parse(style)
    return (parsed.color.name if parsed.color else "", bool(parsed.bold), bool(parsed.dim))


def disagreements() -> list[str]:
    """Where the renderer, the screen's columns or the early painter differ from the table."""
    out: list[str] = []

    def check(what: str, got: object, want: object) -> None:
        if got != want:
            out.append(f"{what}: {got!r} != {want!r}")

    keys = [column.key for column in TABLE]
    # the screen's table columns, field by field
    check("screen keys", [c.key for c in queue.COLUMNS], keys)
    for column, want in zip(queue.COLUMNS, TABLE):
        check(f"screen {want.key}.label", column.label, want.header)
        for name in ("flex", "floor", "give_way", "justify", "min_width", "style"):
            check(f"screen {want.key}.{name}", getattr(column, name), getattr(want, name))
    # the renderer: its keys and headers, a value per column in its cells and sort values, its styles
    check("renderer keys", list(rows.JOB_COLUMNS), keys)
    check("renderer headers", list(rows.JOB_HEADERS), [column.header for column in TABLE])
    check("renderer column styles", rows.JOB_STYLES, {c.key: c.style for c in TABLE if c.style})
    state_at = keys.index("state")
    for job, members in JOBS:
        cells = rows.job_live_cells(job, lambda: NOW, earlypaint.GROUP_CLOSED if members else "", members)
        check(f"renderer cells of {job.id!r}", len(cells), len(TABLE))
        check(f"renderer sort values of {job.id!r}", len(rows.job_sort_values(job)), len(TABLE))
    for state in JobState:
        want = queuecolumns.STATE_STYLES.get(state.value, "")
        check(f"renderer {state.value} style", rows.STATE_STYLES.get(state, ""), want)
        shown = rows.job_live_cells(Job("1", "c", "n", "u", state), lambda: NOW)[state_at]
        check(f"renderer {state.value} cell style", shown.style if isinstance(shown, Text) else "", want)
        # the early painter's colours, as Rich reads the renderer's style
        check(f"early {state.value} style", earlypaint.STATE_STYLE.get(state.value, ("", False, False)), _words(want))
    # the early painter, by column index
    check("early headers", list(earlypaint.HEADERS), [column.header for column in TABLE])
    check("early flex", earlypaint.FLEX, {i: c.floor for i, c in enumerate(TABLE) if c.flex})
    check("early give way", earlypaint.GIVE_WAY, {i: c.give_way for i, c in enumerate(TABLE) if c.give_way})
    check("early right", earlypaint.RIGHT, {i for i, c in enumerate(TABLE) if c.justify == "right"})
    check("early min width", earlypaint.MIN_WIDTH, {i: c.min_width for i, c in enumerate(TABLE) if c.min_width})
    check("early column styles", earlypaint.COLUMN_STYLE, {i: _words(c.style) for i, c in enumerate(TABLE) if c.style})
    check("early state, age", (earlypaint.STATE, earlypaint.AGE), (state_at, keys.index("age")))
    # the early painter's cells from the cached document, as the renderer's from the jobs
    snap = ClusterSnapshot("hpc", "fake", False, Health.OK, "", NOW, tuple(job for job, _ in JOBS))
    cached = json.loads(snapcache.encode([snap], NOW))["clusters"]["hpc"]["jobs"]
    for (job, members), plain in zip(JOBS, cached):
        kept = {field: plain[field] for field in earlypaint.ROW_FIELDS}  # what the digest keeps of a row
        live = rows.job_live_cells(job, lambda: NOW, earlypaint.GROUP_CLOSED if members else "", members)
        check(f"early cells of {job.id!r}", list(earlypaint.row_cells(kept, members, NOW)), list(map(_plain, live)))
    return out


def test_the_renderer_the_screen_and_the_early_painter_agree_with_the_column_table():
    assert disagreements() == []


def test_every_state_colour_is_one_the_early_painter_can_draw():
    colours = {earlypaint.style_words(style)[0] for style in queuecolumns.STATE_STYLES.values()}
    colours |= {earlypaint.style_words(column.style)[0] for column in TABLE}
    assert colours - {""} <= set(earlypaint.COLOURS)
    assert {state.value for state in JobState} == set(queuecolumns.STATE_STYLES)


LOADS = """
import sys
before = set(sys.modules)
import yanflow_tui.queuecolumns
print(" ".join(sorted(set(sys.modules) - before)))
"""


def test_the_table_is_plain_data_that_loads_only_the_stdlib():
    """The early painter reads it before Textual and Rich are imported: it must import neither."""
    out = subprocess.run([sys.executable, "-c", LOADS], capture_output=True, text=True, timeout=60, check=True)
    loaded = {name.split(".")[0] for name in out.stdout.split()} - {"yanflow_tui"}
    assert sorted(loaded - set(sys.stdlib_module_names)) == []
    assert [name for name in out.stdout.split() if name.startswith("yanflow_tui.")] == ["yanflow_tui.queuecolumns"]
    assert len(set(queuecolumns.KEYS)) == len(TABLE) and all(column.justify in ("left", "right") for column in TABLE)
    assert {column.field for column in TABLE} <= set(Job.__dataclass_fields__)


def _drift_early_flex(monkeypatch):
    monkeypatch.setattr(earlypaint, "FLEX", {**earlypaint.FLEX, 1: earlypaint.FLEX[1] - 1})


def _drift_screen_order(monkeypatch):
    monkeypatch.setattr(queue, "COLUMNS", (queue.COLUMNS[1], queue.COLUMNS[0], *queue.COLUMNS[2:]))


def _drift_screen_give_way(monkeypatch):
    monkeypatch.setattr(queue, "COLUMNS", (*queue.COLUMNS[:-1], queue.COLUMNS[-1]._replace(give_way=0)))


def _drift_renderer_colour(monkeypatch):
    for state in JobState:  # each state's cell made first: the drifted style must not stay in ``rows``' cache
        rows.job_live_cells(Job("1", "c", "n", "u", state), lambda: NOW)
    monkeypatch.setitem(rows.STATE_STYLES, JobState.FAILED, "red")


def _drift_early_colour(monkeypatch):
    monkeypatch.setitem(earlypaint.STATE_STYLE, "completed", ("", False, False))


def _drift_early_cell(monkeypatch):
    monkeypatch.setitem(earlypaint.TEXTS, "gpus", lambda job, members: str(job["gpus"]))


def _drift_renderer_header(monkeypatch):
    monkeypatch.setattr(rows, "JOB_HEADERS", (*rows.JOB_HEADERS[:-1], "WHY"))


@pytest.mark.parametrize(
    "drift",
    [
        _drift_early_flex,
        _drift_screen_order,
        _drift_screen_give_way,
        _drift_renderer_colour,
        _drift_early_colour,
        _drift_early_cell,
        _drift_renderer_header,
    ],
)
def test_a_reader_that_drifts_from_the_table_is_seen(monkeypatch, drift):
    drift(monkeypatch)
    assert disagreements() != []
