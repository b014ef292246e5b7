"""Row renderers: pure functions from domain objects to plain-text cells."""

from __future__ import annotations

from datetime import datetime, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from yanflow_tui.model import Gpu, GpuState, Job, JobKind, JobState, Node
from yanflow_tui.queuecolumns import COLUMNS
from yanflow_tui.screens.render.gpu_cells import GLYPHS, cell_kind, node_fields, node_gpus, util_label
from yanflow_tui.screens.render.rows import duration, job_live_cells, job_sort_values

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
# the Queue's columns by key: a cell or sort value's index (a column added moves them)
CLUSTER, ID, NAME, USER, STATE, GPUS, NODES, AGE, REASON = (
    [c.key for c in COLUMNS].index(key)
    for key in ("cluster", "id", "name", "user", "state", "gpus", "nodes", "age", "reason")
)


def job(**kw) -> Job:
    base = dict(id="7", cluster="c", name="n", user="u", state=JobState.RUNNING, submit_time=T0, kind=JobKind.SINGLE)
    base.update(kw)
    return Job(**base)


def test_duration_units():
    assert [duration(s) for s in (None, 0, 59, 60, 3599, 3600, 86400 * 3)] == [
        "-",
        "0s",
        "59s",
        "1m",
        "59m",
        "1h",
        "3d",
    ]


def test_job_cells_are_clean_plain_text():
    cells = job_live_cells(job(name="a[b]\x1b[1mc\nd", gpus=4, nodes=("n1", "n2")), lambda: T0.timestamp() + 125)
    shown = [c() if callable(c) else c for c in cells]
    assert [c if isinstance(c, str) else c.plain for c in shown] == [
        "c",
        "7",
        "a[b]c d",
        "u",
        "running",
        "4",
        "n1,n2",
        "2m",
        "",
    ]
    assert cells[STATE].style == "green"


def test_gpu_cells_per_gpu_and_counts_only():
    gpus = (Gpu(0, GpuState.ALLOCATED), Gpu(1, GpuState.FREE), Gpu(2, GpuState.UNAVAILABLE))
    counts_only = Node("c", "n", "up", gpus_total=4, gpus_allocated=1)
    assert "".join(GLYPHS[cell_kind(g)] for g in gpus) == "■□✕"
    assert "".join(GLYPHS[cell_kind(g)] for g in node_gpus(counts_only)) == "■□□□"
    assert node_gpus(Node("c", "n", "up")) == ()


def test_util_label_only_known_values():
    assert [util_label(g) for g in (Gpu(0, utilization=12.4), Gpu(1))] == [" 12", "  -"]


def test_node_fields():
    node = Node(
        "c",
        "gpu01",
        "up",
        ("p",),
        64,
        8,
        262144,
        65536,
        "A100",
        2,
        1,
        (Gpu(0, GpuState.ALLOCATED, "7", utilization=99.0), Gpu(1, utilization=0.0)),
        reason="",
    )
    assert node_fields(node) == ("gpu01", "up", "p", "8/64", "64/256G", "A100", "")


def test_live_cells_draw_the_age_when_asked_and_sort_values_order_numbers_as_numbers():
    clock = [T0.timestamp() + 60]
    cells = job_live_cells(job(), lambda: clock[0], note="stale")
    assert cells[CLUSTER].plain == "c stale"
    assert cells[AGE]().plain == "1m"
    clock[0] += 3600
    assert cells[AGE]().plain == "1h"  # the same cell, later: no rebuild needed
    assert job_sort_values(job(gpus=9))[GPUS] < job_sort_values(job(gpus=10))[GPUS]
    assert job_sort_values(job(id="9"))[ID] < job_sort_values(job(id="10"))[ID]
    young, old = job(submit_time=datetime(2026, 2, 1, tzinfo=timezone.utc)), job()
    assert job_sort_values(young)[AGE] < job_sort_values(old)[AGE] < job_sort_values(job(submit_time=None))[AGE]


def test_whole_free_nodes_leave_out_busy_and_unavailable_ones():
    from yanflow_tui.model import Gpu, GpuState

    def node(states, allocated=0):
        return Node(
            "c",
            "n",
            "idle",
            (),
            8,
            0,
            0,
            0,
            "A100",
            len(states),
            allocated,
            tuple(Gpu(i, s) for i, s in enumerate(states)),
        )

    assert node([GpuState.FREE] * 4).whole_free
    assert not node([GpuState.ALLOCATED] + [GpuState.FREE] * 3, allocated=1).whole_free
    assert not node([GpuState.UNAVAILABLE] * 4).whole_free  # drained / cordoned
    assert not Node("c", "cpu01", "idle").whole_free  # no GPUs at all
    assert Node("c", "n", "idle", gpus_total=8).whole_free  # counts only, no per-GPU data


def test_member_sort_values_compare_numbers_as_numbers():
    from yanflow_tui.model import Job, JobState
    from yanflow_tui.screens.widgets.members import sort_value, varying_details

    assert sorted(["loss=0.9", "loss=0.25", "x", "10", "9"], key=sort_value) == [
        "loss=0.25",
        "loss=0.9",
        "9",
        "10",
        "x",
    ]
    a = Job("1", "c", "a", "u", JobState.RUNNING, details=(("Experiment", "7"), ("hp.lr", "0.1")))
    b = Job("2", "c", "b", "u", JobState.RUNNING, details=(("Experiment", "7"), ("hp.lr", "0.2"), ("Seed", "3")))
    assert varying_details([a, b]) == ["hp.lr", "Seed"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("ab-_.09١٢ Z")), max_size=12), min_size=2, max_size=30))
def test_natural_text_sorts_exactly_as_natural_key(values):
    from yanflow_tui.screens.render.rows import natural_key, natural_text

    by_key = sorted(values, key=natural_key)
    assert [natural_key(v) for v in sorted(values, key=natural_text)] == [natural_key(v) for v in by_key]
    for a, b in zip(values, values[1:]):
        assert (natural_text(a) < natural_text(b)) == (natural_key(a) < natural_key(b))


def _plain(cell) -> str:
    cell = cell() if callable(cell) else cell
    return cell if isinstance(cell, str) else cell.plain


@settings(max_examples=60, deadline=None)
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "cluster": st.sampled_from(["c", "d"]),
            "id": st.sampled_from(["7", "8_1"]),
            "name": st.sampled_from(["n", "m x"]),
            "user": st.sampled_from(["u", "v"]),
            "state": st.sampled_from(list(JobState)),
            "gpus": st.integers(0, 3),
            "nodes": st.sampled_from([(), ("n1",), ("n1", "n2")]),
            "submit_time": st.sampled_from([None, T0, datetime(2026, 1, 2, tzinfo=timezone.utc)]),
            "reason": st.sampled_from(["", "Priority"]),
        },
    ),
    st.sampled_from([("", 0, ""), ("▸ ", 3, ""), ("", 0, "stale")]),
)
def test_cells_made_like_an_earlier_version_equal_fresh_ones_and_reuse_the_unchanged(changes, shown):
    marker, children, note = shown
    clock = lambda: T0.timestamp() + 3600  # noqa: E731
    before = job(reason="Resources")
    old = job_live_cells(before, clock, marker, children, note)
    now = job(**{"reason": "Resources", **changes})
    again = job_live_cells(now, clock, marker, children, note, like=(before, old))
    fresh = job_live_cells(now, clock, marker, children, note)
    assert [_plain(c) for c in again] == [_plain(c) for c in fresh]
    assert [type(c) for c in again] == [type(c) for c in fresh]
    fields = [column.field for column in COLUMNS]
    for field, cell, earlier in zip(fields, again, old):
        assert (cell is earlier) == (getattr(now, field) == getattr(before, field)), field


def test_equal_names_users_and_reasons_share_one_sort_string():
    a = job_sort_values(job(id="1", name="Train-7", user="Ann", reason="Priority"))
    b = job_sort_values(job(id="2", name="Train-7", user="Ann", reason="Priority"))
    assert all(a[i] is b[i] for i in (NAME, USER, REASON))  # identical: a sort compares them at once
    c = job_sort_values(job(id="3", name="train-10", user="bob"))
    assert a[NAME] < c[NAME] and a[USER] < c[USER]  # natural, and case-blind
    assert isinstance(a[AGE], float)


def test_rows_share_the_cells_of_equal_values():
    """100,000 rows hold one state ``Text`` per state, one string per GPU count and per node list,
    not one each (at 100,000 jobs the per-row copies held about 40 MB)."""
    clock = lambda: T0.timestamp()  # noqa: E731
    a = job_live_cells(job(id="1", gpus=12, nodes=("n1", "n2")), clock)
    b = job_live_cells(job(id="2", gpus=12, nodes=("n1", "n2")), clock)
    assert a[STATE] is b[STATE] and a[GPUS] is b[GPUS] and a[NODES] is b[NODES]
    c = job_live_cells(job(id="3", state=JobState.PENDING, gpus=13, nodes=("n3",)), clock)
    assert c[STATE] is not a[STATE] and c[STATE].plain == "pending" and c[STATE].style == "yellow"
    assert (c[GPUS], c[NODES]) == ("13", "n3")


def test_the_age_cell_is_a_small_object_and_the_id_cell_the_jobs_own_string():
    clock = [T0.timestamp() + 60]
    shown = job(id="12345")
    cells = job_live_cells(shown, lambda: clock[0])
    age = cells[AGE]
    assert not hasattr(age, "__closure__") and not hasattr(age, "__dict__")  # no closure, no dict per row
    assert age().plain == "1m"
    clock[0] += 3600
    assert age().plain == "1h"  # still drawn when asked
    assert cells[ID] is shown.id  # no copy made when there is no marker
    assert job_live_cells(shown, lambda: clock[0], "▸ ")[ID] == "▸ 12345"
