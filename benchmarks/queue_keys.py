"""Benchmark: the Queue's filter, escape and sort keys alone, as ``console.py`` times them (issue #17).

``console.py`` runs every part (refreshes, Nodes, logs...), minutes at 100,000 jobs; this runs the
same app, the same data and the same key steps for the filter typed (``--filter``), escape clearing
it and ``o``/``O`` sorting, after ``--refreshes`` refreshes as there (so idle warming is where it is
there when the filter is typed). ``--profile FILE`` writes a cProfile of the timed keys only:

    python benchmarks/queue_keys.py --jobs 100000 --nodes 5000 [--profile keys.prof]

Prints each key's wall and CPU milliseconds (this process) and the p95 per part. Not part of the
test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import console  # noqa: E402  (beside this file)


def _summary(name: str, walls: list[float], cpus: list[float], extra: str = "") -> None:
    ordered = sorted(walls)
    p95 = console.p95(ordered) if ordered else 0.0
    each = ", ".join(f"{w * 1000:.0f}/{c * 1000:.0f}" for w, c in zip(walls, cpus))
    print(f"{name:8} p95 {p95 * 1000:6.0f} ms   wall/cpu ms each: {each}{extra}")


async def run(args, profile: cProfile.Profile | None) -> None:
    from textual.widgets import Input

    from yanflow_tui.app import YanflowApp

    config, hub, backends = console.make_hub(console.cluster_configs(args, log_lines=1000))
    expected = len(console.queue_rows_expected(console.all_jobs(backends)))
    app = YanflowApp(config, hub)
    queue = lambda: console.queue_widget(app)  # noqa: E731

    timed = []  # the keys timed so far, named as --profile-keys names them

    async def key(name: str, reflected, cpus: list[float], part: str) -> float:
        timed.append(f"{part}{sum(t.startswith(part) for t in timed) + 1}")
        on = profile is not None and (not args.profile_keys or timed[-1] in args.profile_keys.split(","))
        if on:
            profile.enable()
        try:
            return await console.key_latency(app, name, reflected, queue, timeout=args.timeout, cpu=cpus)
        finally:
            if on:
                profile.disable()

    async with app.run_test(size=args.size) as pilot:
        await console.until(lambda: console.queue_row_count(app) == expected, args.timeout, "the first screen")
        await console.painted(queue)
        await pilot.pause(0.3)
        for gen in range(1, args.refreshes + 1):
            console.churn(backends, args.churn, gen)
            await console.refresh_queue(app, backends, gen, args)
        await pilot.pause(args.idle)
        box = lambda: app.focused if isinstance(app.focused, Input) else None  # noqa: E731
        for _ in range(args.rounds):
            await console.key_latency(app, console.FILTER_KEY, box, queue)
            typed, walls, cpus, rows = "", [], [], []
            for char in args.filter:
                typed += char
                want = len(console.queue_rows_expected(console.all_jobs(backends), typed))
                rows.append(want)
                walls.append(
                    await key(
                        char,
                        lambda typed=typed, want=want: (
                            box() is not None and box().value == typed and console.queue_row_count(app) == want
                        ),
                        cpus,
                        "filter",
                    )
                )
            _summary("filter", walls, cpus, f"   rows {rows}")
            full = len(console.queue_rows_expected(console.all_jobs(backends)))
            cpus = []
            wall = await key(
                console.CLEAR_FILTER_KEY, lambda full=full: console.queue_row_count(app) == full, cpus, "escape"
            )
            _summary("escape", [wall], cpus)
            await pilot.pause(0.2)
            walls, cpus = [], []
            for name in [console.SORT_KEY] * max(1, args.sorts - 1) + [console.REVERSE_SORT_KEY]:
                before = console.queue_sort(app)
                walls.append(await key(name, lambda before=before: console.queue_sort(app) != before, cpus, "sort"))
            _summary("sort", walls, cpus)
            console.queue_unsort(app)
            await pilot.pause(0.2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--clusters", type=int, default=3)
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--churn", type=float, default=0.05)
    parser.add_argument("--refreshes", type=int, default=3, help="refreshes before the keys (as console.py)")
    parser.add_argument("--idle", type=float, default=0.0, help="seconds idle before the filter (warming time)")
    parser.add_argument("--rounds", type=int, default=1, help="filter, escape and sorts this many times")
    parser.add_argument("--filter", default="erin")
    parser.add_argument("--sorts", type=int, default=4)
    parser.add_argument("--size", default="200x50")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--profile", type=Path, help="write a cProfile of the timed keys here")
    parser.add_argument("--profile-keys", help="only these keys, e.g. filter1,filter2,escape1,sort4 (default: all)")
    args = parser.parse_args()
    width, _, height = args.size.partition("x")
    args.size = (int(width), int(height))
    profile = cProfile.Profile() if args.profile else None
    with tempfile.TemporaryDirectory(prefix="yanflow-keys-bench-") as home:
        os.environ.update(HOME=home, XDG_CONFIG_HOME=f"{home}/.config", XDG_STATE_HOME=f"{home}/.state")
        asyncio.run(run(args, profile))
    if profile is not None:
        profile.dump_stats(args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
