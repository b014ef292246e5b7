"""Training curves without a cluster: the incremental reader (a record cut anywhere waits for its
rest, a truncated or replaced file is read again from 0, only appended bytes are asked for) against
TensorBoard's own ``EventFileLoader``; TensorBoard's smoothing against its closed form; the plot's
thinning and stats; where a job's log directory is; the hint when tensorboard is missing."""

from __future__ import annotations

import asyncio
import math
import os
import re
import subprocess
import sys

import pytest
from tbhelpers import curve_points, loader_points, loader_wall_times, write_script, writer_command

from yanflow_tui import curves as tb
from yanflow_tui.backends.local.tbfiles import list_event_files, read_range
from yanflow_tui.backends.slurm.tbfiles import logdir_from_script, parse_find
from yanflow_tui.curves import CurvePoint, CurveReader, Curves, EventFile, EventListing, smooth
from yanflow_tui.screens.render.curves import CurveOptions, curve_lines, thin


def written(tmp_path, name: str, steps: int):
    """A log directory written by TensorBoard's writer: ``steps`` steps, a tensor scalar, an ``eval`` run."""
    script = write_script(tmp_path)
    subprocess.run(writer_command(script, str(tmp_path / name), steps, tmp_path / "go", 0), check=True, timeout=120)
    return tmp_path / name


@pytest.fixture
def logdir(tmp_path):
    return written(tmp_path, "tb", 30)


@pytest.fixture
def reader():
    made = CurveReader()
    yield made
    made.close()


@pytest.fixture(params=["python", "server"])
def either(request):
    """A reader forced onto each path: TensorBoard's Python loader, or its Rust data server."""
    if request.param == "server" and tb.curves_fast.server_binary() is None:
        pytest.skip("tensorboard_data_server has no binary here")
    made = CurveReader(fast=request.param == "server")
    yield made
    assert made.path == request.param and not made.fallback
    made.close()


def preempted(points: dict) -> dict:
    """TensorBoard's view of restarted steps (its data server's reservoir): a step not above a
    tag's last one drops that tag's points from that step on."""
    out: dict = {}
    for tag, series in points.items():
        kept: list = []
        for step, value in series:
            while kept and kept[-1][0] >= step:
                kept.pop()
            kept.append((step, value))
        out[tag] = kept
    return out


def main_file(logdir) -> str:
    return str(next(p for p in sorted(logdir.glob("events.out.tfevents.*"))))


def only(points: dict, tags=("loss", "accuracy", "lr")) -> dict:
    return {tag: points[tag] for tag in tags}


class Source:
    """A backend's two calls over a local directory, recording every read."""

    def __init__(self, logdir):
        self.logdir = str(logdir)
        self.reads: list[tuple[str, int, int]] = []
        self.listings = 0

    async def event_files(self, job_id: str) -> EventListing:
        self.listings += 1
        return EventListing(self.logdir, tuple(list_event_files(self.logdir)))

    async def read_event_bytes(self, job_id: str, path: str, offset: int, limit: int) -> tuple[int, bytes]:
        self.reads.append((path, offset, limit))
        return read_range(self.logdir, path, offset, limit)


def test_a_record_cut_anywhere_waits_for_its_rest(logdir, reader):
    path = main_file(logdir)
    data = open(path, "rb").read()
    expected = only(loader_points(logdir))
    sizes = []
    offset = 0
    for cut in list(range(5, len(data), 37)) + [len(data)]:  # 37 bytes at a time: cuts land mid-header and mid-body
        reader.feed(path, offset, data[offset:cut])
        offset = cut
        sizes.append(sum(len(p) for p in reader.curves.series.values()))
    assert curve_points(reader.curves) == expected
    assert sizes[0] == 0 and sizes == sorted(sizes)  # never a point from half a record, never one lost
    assert reader.offset(path) == len(data)


def test_bytes_from_the_wrong_offset_are_refused(logdir, reader):
    path = main_file(logdir)
    data = open(path, "rb").read()
    reader.feed(path, 0, data[:100])
    with pytest.raises(ValueError, match="bytes from 50"):
        reader.feed(path, 50, data[50:])


def test_refresh_reads_only_the_appended_bytes(logdir, tmp_path, either):
    reader = either
    source = Source(logdir)
    asyncio.run(reader.refresh(source, "1"))
    path = main_file(logdir)
    first = reader.offset(path)
    assert curve_points(reader.curves) == loader_points(logdir)
    wall = {tag: [p.wall_time for p in points] for tag, points in reader.curves.series.items()}
    assert wall == loader_wall_times(logdir)
    # The job appends: records framed by the writer itself (a whole event file's), at the end of the file.
    extra = open(main_file(written(tmp_path, "more", 40)), "rb").read()
    with open(path, "ab") as out:
        out.write(extra)
    source.reads.clear()
    asyncio.run(reader.refresh(source, "1"))
    assert [(p, o) for p, o, _ in source.reads] == [(path, first)]  # the one grown file, from where it stopped
    assert reader.offset(path) == first + len(extra)
    expected = loader_points(logdir)
    if reader.path == "server":  # the appended steps start again at 0: TensorBoard keeps the later ones
        expected = preempted(expected)
    assert curve_points(reader.curves) == expected
    assert len(reader.curves.series["loss"]) == (40 if reader.path == "server" else 30 + 40)
    asyncio.run(reader.refresh(source, "1"))
    assert [(p, o) for p, o, _ in source.reads] == [(path, first)]  # nothing new: nothing read


def test_a_record_cut_by_a_refresh_waits_for_its_rest(logdir, tmp_path, either):
    """The job's file ends mid-record at one refresh; the rest arrives by the next one."""
    path = main_file(logdir)
    data = open(path, "rb").read()
    moved = tmp_path / "copy"
    moved.mkdir()
    target = moved / os.path.basename(path)
    cut = len(data) // 2 + 7
    target.write_bytes(data[:cut])
    source = Source(moved)
    asyncio.run(either.refresh(source, "1"))
    half = sum(len(p) for p in either.curves.series.values())
    assert 0 < half < sum(len(p) for p in only(loader_points(logdir)).values())
    with open(target, "ab") as out:
        out.write(data[cut:])
    asyncio.run(either.refresh(source, "1"))
    assert [o for _, o, _ in source.reads] == [0, cut]
    assert curve_points(either.curves) == only(loader_points(logdir))


def test_a_truncated_or_replaced_file_is_read_again_from_zero(logdir, tmp_path, either):
    reader = either
    source = Source(logdir)
    asyncio.run(reader.refresh(source, "1"))
    path = main_file(logdir)
    assert len(reader.curves.series["loss"]) == 30
    # Truncated to its first records (a smaller file under the same name): read again from 0.
    short = open(main_file(written(tmp_path, "short", 3)), "rb").read()
    assert len(short) < reader.offset(path)
    with open(path, "r+b") as out:
        out.truncate(0)
        out.write(short)
    source.reads.clear()
    asyncio.run(reader.refresh(source, "1"))
    assert (path, 0) in [(p, o) for p, o, _ in source.reads]
    assert len(reader.curves.series["loss"]) == 3
    assert reader.curves.series["eval/accuracy"]  # the untouched file keeps its points, not read again
    assert all(p == path for p, _, _ in source.reads)
    assert curve_points(reader.curves) == loader_points(logdir)


def test_a_large_first_read_takes_the_data_server_and_a_small_one_the_loader(logdir, monkeypatch):
    if tb.curves_fast.server_binary() is None:
        pytest.skip("tensorboard_data_server has no binary here")
    size = os.path.getsize(main_file(logdir))
    monkeypatch.setattr(tb, "FAST_MIN_BYTES", size)
    small, large = CurveReader(), CurveReader()
    try:
        asyncio.run(small.refresh(Source(logdir / "eval"), "1"))
        asyncio.run(large.refresh(Source(logdir), "1"))
        assert (small.path, large.path) == ("python", "server")
        assert curve_points(large.curves) == loader_points(logdir)
    finally:
        small.close()
        large.close()
    assert large._server is None


def test_a_failing_data_server_falls_back_to_the_loader_without_reading_again(logdir, monkeypatch):
    def broken(self, runs):
        raise tb.curves_fast.DataServerError("it broke")

    monkeypatch.setattr(tb.curves_fast, "server_binary", lambda: "/bin/false")
    monkeypatch.setattr(tb.curves_fast.DataServer, "sync", broken)
    reader = CurveReader(fast=True)
    source = Source(logdir)
    try:
        added = asyncio.run(reader.refresh(source, "1"))
        assert (reader.path, reader.fallback) == ("python", "it broke")
        assert curve_points(reader.curves) == loader_points(logdir)
        assert added == sum(len(p) for p in loader_points(logdir).values())
        assert len(source.reads) == 2  # each file once: the fallback parses the mirror
    finally:
        reader.close()


def test_a_missing_data_server_binary_leaves_the_loader(logdir, monkeypatch):
    monkeypatch.setattr(tb.curves_fast, "server_binary", lambda: None)
    reader = CurveReader(fast=True)
    try:
        asyncio.run(reader.refresh(Source(logdir), "1"))
        assert reader.path == "python" and "not installed" in reader.fallback
        assert curve_points(reader.curves) == loader_points(logdir)
    finally:
        reader.close()


def test_a_new_identity_under_the_same_name_restarts_the_file(logdir, reader):
    path = main_file(logdir)
    data = open(path, "rb").read()
    reader.plan(EventListing(str(logdir), (EventFile(path, len(data), "1"),)))
    reader.feed(path, 0, data, "1")
    assert len(reader.curves.series["loss"]) == 30
    plan = reader.plan(EventListing(str(logdir), (EventFile(path, len(data) + 10, "2"),)))
    assert plan == [(EventFile(path, len(data) + 10, "2"), 0)]
    assert reader.curves.series == {}


def tensorboard_smoothing(values: list[float], weight: float) -> list[float]:
    """The closed form of TensorBoard's debiased EMA: s_n = (1-w) * sum_i w^(n-i) x_i / (1 - w^n)."""
    out = []
    for n in range(1, len(values) + 1):
        total = sum(weight ** (n - i) * values[i - 1] for i in range(1, n + 1))
        out.append((1 - weight) * total / (1 - weight**n))
    return out


@pytest.mark.parametrize("weight", [0.0, 0.6, 0.9, 0.99])
def test_smoothing_is_tensorboards_debiased_ema(weight):
    values = [math.sin(i / 3) + i * 0.1 for i in range(50)]
    assert smooth(values, weight) == pytest.approx(tensorboard_smoothing(values, weight), rel=1e-9, abs=1e-12)
    assert smooth(values, weight)[0] == pytest.approx(values[0])  # debiased: the first point is itself


def test_smoothing_keeps_constant_series_and_non_finite_values():
    assert smooth([3.0] * 5, 0.9) == [3.0] * 5
    got = smooth([1.0, math.nan, 3.0], 0.5)
    assert got[0] == 1.0 and math.isnan(got[1])
    assert got[2] == pytest.approx((0.5 * 0.5 * 1.0 + 0.5 * 3.0) / (1 - 0.25))  # NaN is skipped, not counted
    assert smooth([], 0.6) == []
    assert smooth([1.0, 2.0], math.nan) == [1.0, 2.0]


def test_thin_keeps_each_columns_lowest_and_highest_point():
    points = [(float(i), float((i * 7919) % 101)) for i in range(10_000)]
    thinned = thin(points, 50)
    assert len(thinned) <= 100
    assert min(y for _, y in thinned) == 0.0 and max(y for _, y in thinned) == 100.0
    assert [x for x, _ in thinned] == sorted(x for x, _ in thinned)
    assert thin(points[:10], 50) == points[:10]


def reference_thin(points, columns):
    """``thin`` one point at a time: per column its first lowest and first highest point, in x order."""
    if len(points) <= 2 * columns:
        return list(points)
    x0, x1 = points[0][0], points[-1][0]
    scale = columns / ((x1 - x0) or 1.0)
    columns_of: dict[int, list] = {}
    for point in points:
        columns_of.setdefault(min(columns - 1, int((point[0] - x0) * scale)), []).append(point)
    out = []
    for column in sorted(columns_of):
        run = columns_of[column]
        lo = hi = run[0]
        for point in run[1:]:
            if point[1] < lo[1]:
                lo = point
            elif point[1] > hi[1]:
                hi = point
        out.extend((lo, hi) if lo[0] <= hi[0] else (hi, lo))
    return out


def test_thin_is_the_point_by_point_thinning_with_ties_and_non_finite_values():
    import random

    rng = random.Random(7)
    for _ in range(100):
        n = rng.choice([50, 401, 3000])
        xs = sorted(rng.choice([rng.random() * 100, float(rng.randint(0, 20))]) for _ in range(n))
        ys = [rng.choice([0.5, 1.0, math.nan, math.inf, -math.inf, rng.random()]) for _ in range(n)]
        points = list(zip(xs, ys))
        columns = rng.choice([1, 3, 50])
        got, want = thin(points, columns), reference_thin(points, columns)
        assert len(got) == len(want) and all(a is b for a, b in zip(got, want))


def test_curve_lines_show_stats_axis_and_smoothing():
    curves = Curves({"loss": [CurvePoint(i, 100.0 + i, 10.0 - i) for i in range(10)], "acc": []})
    text = "\n".join(line.plain for line in curve_lines(curves, CurveOptions(tag=0, wall_time=True, smoothing=0.9)))
    assert "min 1  max 10  last 1  (10 points)" in text
    assert "x: wall time" in text and "smoothing: 0.9" in text and "tag 1 of 2" in text
    assert "no scalars" in curve_lines(Curves(), CurveOptions())[0].plain


def test_logdir_default_relative_and_absolute():
    assert tb.logdir_for(None, "/work/run") == "/work/run/tb"
    assert tb.logdir_for({"logdir": "runs/a"}, "/work/run") == "/work/run/runs/a"
    assert tb.logdir_for({"logdir": "/data/tb/"}, "/work/run") == "/data/tb"
    script = "#!/bin/sh\n#SBATCH --job-name=x\nexport YANFLOW_TB_LOGDIR='my runs'\npython train.py\n"
    assert logdir_from_script(script, "/home/u") == "/home/u/my runs"
    assert logdir_from_script("#!/bin/sh\npython train.py\n", "/home/u") == "/home/u/tb"


def test_find_output_is_parsed_by_nul_separated_entries():
    out = (
        "12 345 /l/tb/events.out.tfevents.1.h.1.0\x00"
        "99 7 /l/tb/a b/events.out.tfevents.2\x00\x00"
        "3 4 /l/tb/notes.txt\x00"
    )
    assert parse_find(out) == [
        EventFile("/l/tb/a b/events.out.tfevents.2", 99, "7"),
        EventFile("/l/tb/events.out.tfevents.1.h.1.0", 12, "345"),
    ]


def test_a_read_outside_the_log_directory_is_refused(logdir, tmp_path):
    secret = tmp_path / "events.out.tfevents.secret"
    secret.write_bytes(b"x")
    with pytest.raises(Exception, match="not an event file under"):
        read_range(str(logdir), str(secret), 0, 10)
    with pytest.raises(Exception, match="not an event file under"):
        read_range(str(logdir), str(logdir / ".." / "tb_writer.py"), 0, 10)


def test_without_tensorboard_the_error_says_how_to_install_it(logdir, reader, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboard.backend.event_processing.event_file_loader", None)
    path = main_file(logdir)
    from yanflow_tui.installs import extra_command  # the command for the way this copy was installed

    with pytest.raises(tb.TensorBoardMissing, match=re.escape(extra_command("tensorboard"))):
        reader.feed(path, 0, open(path, "rb").read())


def test_the_reader_removes_its_mirror_files(logdir):
    reader = CurveReader()
    path = main_file(logdir)
    reader.feed(path, 0, open(path, "rb").read())
    mirror_dir = reader._dir
    assert any(p.startswith("events.out.tfevents.") for _, _, names in os.walk(mirror_dir) for p in names)
    reader.close()
    assert not os.path.exists(mirror_dir)


def test_refresh_runs_its_parse_where_told(logdir, reader):
    calls = []

    async def parse(function, *args):
        calls.append(args[0])
        return function(*args)

    asyncio.run(reader.refresh(Source(logdir), "1", parse=parse))
    assert len(calls) == 2 and curve_points(reader.curves) == loader_points(logdir)


def test_a_backend_without_event_files_gives_its_reported_metrics_as_curves():
    from fakes.backend import FakeActionsBackend, FakeBackend

    from yanflow_tui.config import ClusterConfig
    from yanflow_tui.errors import BackendError

    found = asyncio.run(tb.job_curves(FakeActionsBackend(ClusterConfig("f", "fake-actions")), "104", 5))
    data = found.to_json()
    assert list(data) == ["training.loss", "validation.accuracy"]
    assert data["training.loss"][1] == {"step": 10, "wall_time": None, "value": 1.0 / 11}
    assert "10 points  min 0.010989  max 1  last 0.010989 (step 90)" in tb.summary_lines(found)[0]
    with pytest.raises(BackendError, match="has no curves"):
        asyncio.run(tb.job_curves(FakeBackend(ClusterConfig("g", "fake")), "1", 5))


def test_the_python_loader_checks_records_with_c_crc32c_where_installed(logdir, reader):
    import google_crc32c  # in the test extra: a missing one fails here, it is never skipped
    from tensorboard.compat.tensorflow_stub import pywrap_tensorflow as stub

    path = main_file(logdir)
    reader.feed(path, 0, open(path, "rb").read())
    assert getattr(stub.crc32c, "yanflow_c", False)
    x = google_crc32c.value(b"abc")
    assert stub.masked_crc32c(b"abc") == stub.u32(((x >> 15) | stub.u32(x << 17)) + 0xA282EAD8)
    assert curve_points(reader.curves) == only(loader_points(logdir))
