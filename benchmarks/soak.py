"""Benchmark: memory over a long session (issue 18 point 9). Headless, over the synthetic backend.

    python benchmarks/soak.py [--jobs 10000] [--nodes 2000] [--cycles 500] [--warmup 30] [--census]

Drives ``YanflowApp`` through ``App.run_test()`` over ``benchmarks/synthetic.py`` (10,000 jobs on 3
clusters by default). One cycle: Nodes (``2``), back to the Queue (``1``), ``/``, type a filter,
``escape``; every tenth cycle also visits Logs, churns 1 % of the jobs and refreshes, as a
console left open would. RSS is read from ``/proc/self/statm`` (no psutil needed) after ``--warmup``
cycles (the start) and after the last (the end), with a full ``gc.collect()`` before each reading.
Goal: under 10 % growth after warm-up.

``--census`` also counts live objects by type (``gc.get_objects()``) at both readings and prints the
types that grew most, and the top ``tracemalloc`` growth by line with ``--trace`` (slow): that is how
the growth was found. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

FILTERS = ("state:running", "user:alice", "gpus:>4", "train", "-state:completed", "name:eval")
GOAL_GROWTH = 0.10


def rss_mb() -> float:
    """Resident set size of this process, from /proc (Linux)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def census() -> Counter:
    return Counter(type(o).__qualname__ for o in gc.get_objects())


def settle() -> float:
    gc.collect()
    return rss_mb()


async def cycle(app, pilot, i: int, backends, refresh_every: int) -> None:
    await pilot.press("2")
    await pilot.press("1")
    await pilot.press("slash")
    await pilot.press(*FILTERS[i % len(FILTERS)])
    await pilot.press("escape")
    if i % refresh_every == 0:
        await pilot.press("4")  # not Submit: the synthetic clusters take no jobs
        await pilot.press("1")
        for b in backends:
            b.churn(0.01, i)
        app.request_refresh()
    await pilot.pause()


async def soak(args) -> dict:
    from console import cluster_configs, make_hub, queue_row_count

    from yanflow_tui.app import YanflowApp

    ns = argparse.Namespace(clusters=3, jobs=args.jobs, nodes=args.nodes, gpus_per_node=8, seed=1)
    config, hub, backends = make_hub(cluster_configs(ns, log_lines=200))
    app = YanflowApp(config, hub)
    out: dict = {"jobs": args.jobs, "nodes": args.nodes, "cycles": args.cycles, "warmup": args.warmup}
    if args.trace:
        import tracemalloc

        tracemalloc.start(8)
    started = time.perf_counter()
    async with app.run_test(size=(200, 50)) as pilot:
        deadline = time.monotonic() + 120
        while queue_row_count(app) == 0 and time.monotonic() < deadline:
            await pilot.pause(0.05)
        # The Logs screen shows one job's log (an empty Logs screen keeps the keys in its search box)
        app.open_logs(next(j for j in backends[0].jobs.values() if j.state.value == "running"))
        await pilot.pause(0.5)
        await pilot.press("1")
        for i in range(args.warmup):
            await cycle(app, pilot, i, backends, args.refresh_every)
        out["rss_start_mb"] = settle()
        before = census() if args.census else None
        snap0 = None
        if args.trace:
            import tracemalloc

            snap0 = tracemalloc.take_snapshot()
        samples = []
        for i in range(args.cycles):
            await cycle(app, pilot, args.warmup + i, backends, args.refresh_every)
            if (i + 1) % max(1, args.cycles // 10) == 0:
                samples.append(round(rss_mb(), 1))
                print(f"  cycle {i + 1}: RSS {samples[-1]} MB", file=sys.stderr, flush=True)
        out["rss_end_mb"] = settle()
        out["rss_samples_mb"] = samples
        if before is not None:
            after = census()
            grown = Counter({k: after[k] - before[k] for k in after if after[k] > before[k]})
            out["census_growth"] = grown.most_common(25)
        if snap0 is not None:
            import tracemalloc

            stats = tracemalloc.take_snapshot().compare_to(snap0, "traceback")
            out["trace_growth"] = [(s.size_diff, s.count_diff, str(s.traceback.format()[-6:])) for s in stats[:12]]
    out["wall_s"] = round(time.perf_counter() - started, 1)
    out["growth"] = (out["rss_end_mb"] - out["rss_start_mb"]) / out["rss_start_mb"]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=2_000)
    parser.add_argument("--cycles", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--refresh-every", type=int, default=10)
    parser.add_argument("--census", action="store_true", help="count live objects by type at both readings")
    parser.add_argument("--trace", action="store_true", help="tracemalloc growth by traceback (slow)")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args(argv)
    out = asyncio.run(soak(args))
    print(f"RSS after {args.warmup} warm-up cycles: {out['rss_start_mb']:.1f} MB")
    print(f"RSS after {args.cycles} more cycles:    {out['rss_end_mb']:.1f} MB")
    verdict = "met" if out["growth"] < GOAL_GROWTH else "MISSED"
    print(f"growth: {out['growth'] * 100:+.1f} % (goal < {GOAL_GROWTH * 100:.0f} %: {verdict}); {out['wall_s']} s")
    for name, n in out.get("census_growth", []):
        print(f"  +{n:>8} {name}")
    for size, count, where in out.get("trace_growth", []):
        print(f"  +{size / 1024:>8.1f} KiB +{count:>6} {where}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0 if out["growth"] < GOAL_GROWTH else 1


if __name__ == "__main__":
    sys.exit(main())
