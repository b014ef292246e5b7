"""Benchmark: N scalar events (default 1,000,000, one scalar each, two tags) read through the curves
reader (a local source: the listing, the byte reads, TensorBoard's own loader) and drawn into the
detail's cells (``render.curves.curve_lines``: smoothing, thinning, the braille plot, stats).

The event file is written once with TensorBoard's ``EventFileWriter`` and kept under /tmp for the next
run. The goal (issue #15) is 3 s for 1M events on this machine; prints the figures of each path:
``server`` (TensorBoard's Rust data server, the reader's fast path) and ``python`` (TensorBoard's
Python loader, the fallback).

    .venv/bin/python benchmarks/curves.py [N [server|python ...]]
"""

from __future__ import annotations

import asyncio
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from yanflow_tui.backends.local.tbfiles import list_event_files, read_range
from yanflow_tui.curves import CurveReader, EventListing
from yanflow_tui.screens.render.curves import CurveOptions, curve_lines

GOAL = 3.0


def write(logdir: Path, n: int) -> None:
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(logdir), max_queue_size=100_000, flush_secs=3600)
    for i in range(n):
        tag = "loss" if i % 2 else "accuracy"
        value = summary_pb2.Summary.Value(tag=tag, simple_value=1.0 / (i // 2 + 1) + (i % 7) * 0.001)
        writer.add_event(
            event_pb2.Event(step=i // 2, wall_time=1.7e9 + i * 0.01, summary=summary_pb2.Summary(value=[value]))
        )
    writer.close()


class Source:
    def __init__(self, logdir: Path):
        self.logdir = str(logdir)

    async def event_files(self, job_id: str) -> EventListing:
        return EventListing(self.logdir, tuple(list_event_files(self.logdir)))

    async def read_event_bytes(self, job_id: str, path: str, offset: int, limit: int) -> tuple[int, bytes]:
        return read_range(self.logdir, path, offset, limit)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    logdir = Path(tempfile.gettempdir()) / f"yanflow-bench-curves-{n}"
    if not any(logdir.glob("events.out.tfevents.*")):
        logdir.mkdir(exist_ok=True)
        t0 = time.perf_counter()
        write(logdir, n)
        print(f"wrote {n} events with EventFileWriter in {time.perf_counter() - t0:.1f} s (kept in {logdir})")
    size = sum(f.size for f in list_event_files(str(logdir)))
    # Their imports are not the parse (the console pays them once).
    import grpc  # noqa: F401
    import tensorboard.backend.event_processing.event_file_loader
    import tensorboard.data.proto.data_provider_pb2_grpc  # noqa: F401

    paths = sys.argv[2:] or ["server", "python"]
    totals = {}
    for path in paths:
        totals[path] = run(logdir, n, size, path)
    for path, (total, cpu) in totals.items():
        verdict = "met" if total <= GOAL else "NOT met"
        print(f"{path:>6} path: {total:.2f} s wall, {cpu:.2f} s CPU  (goal {GOAL:.0f} s: {verdict})")


def run(logdir: Path, n: int, size: int, path: str) -> tuple[float, float]:
    reader = CurveReader(fast=path == "server")
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    asyncio.run(reader.refresh(Source(logdir), "bench"))
    curves = reader.curves
    parsed = time.perf_counter() - t0
    points = sum(len(p) for p in curves.series.values())
    t1 = time.perf_counter()
    lines = curve_lines(curves, CurveOptions(smoothing=0.6), width=100, height=10)
    plotted = time.perf_counter() - t1
    t2 = time.perf_counter()
    curve_lines(curves, CurveOptions(tag=0, wall_time=True, smoothing=0.0), width=100, height=10)
    plotted_raw = time.perf_counter() - t2
    cpu = time.process_time() - cpu0
    used, fallback = reader.path, reader.fallback
    children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    reader.close()  # waits for the server to exit: its CPU time is then counted
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    child = max(0.0, children.ru_utime + children.ru_stime - children0.ru_utime - children0.ru_stime)
    total = parsed + plotted
    assert points == n and len(lines) > 10, (points, len(lines))
    print(f"-- {path} path (used: {used}{'; fell back: ' + fallback if fallback else ''})")
    print(f"{n} scalar events, {size / 2**20:.1f} MiB of event files")
    where = "TensorBoard's Rust data server" if used == "server" else "TensorBoard's Python loader"
    print(f"parse (listing, reads, {where}): {parsed:.2f} s  ({n / parsed:,.0f} events/s)")
    print(f"plot (smoothing 0.6, two tags, 100x10 cells): {plotted:.2f} s;  one tag, no smoothing: {plotted_raw:.2f} s")
    print(f"CPU time for all three: {cpu:.2f} s here + {child:.2f} s in the data server (the machine is shared)")
    print(f"total: {total:.2f} s  (goal {GOAL:.0f} s: {'met' if total <= GOAL else 'NOT met'})")
    return total, cpu + child


if __name__ == "__main__":
    main()
