"""Benchmark: where a Queue key's milliseconds go: the event loop's work, and the wait for the frame (issue #29).

A key's wall time (posted -> handled -> painted) on a small machine is bimodal: at 10,000 jobs a sort key
takes about 17 ms or about 40 ms, run after run, in both trees of a change. This splits each key of
``queue_keys.py`` into what the app's event loop ran for it (every callback's time, summed; the benchmark's
own polling left out) and the rest, when the loop was idle: mostly waiting for the screen's update timer,
which paints at the frame rate. Work is what a change can make worse; the idle part depends on where the key
falls between two frames. Two trees
(before and after a change) compare key by key:

    python benchmarks/key_phases.py --trees BEFORE_DIR,AFTER_DIR [--runs 4] [--jobs 10000]
        [queue_keys.py's options after --]

Each tree runs with its own ``.venv`` and ``benchmarks/``, ``PYTHONHASHSEED=0``, in alternation. Run it at
``nice -n -20`` on a quiet machine: the loop's work is wall time too. Not part of the test suite.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from key_instructions import tree_pair_args  # (beside this file)

# Runs inside the measured tree's Python: every event-loop callback timed while a key is in flight
# (console.key_latency), then queue_keys.py's own main.
INNER = """
import asyncio, json, sys, threading, time
from asyncio import events
tree, out = sys.argv.pop(1), sys.argv.pop(1)
sys.path.insert(0, tree + "/benchmarks")
import console, queue_keys
keys, current = [], []
real_run = events.Handle._run

def run(self):
    if not current or threading.get_ident() != current[-1]["thread"]:  # (the app's loop only)
        return real_run(self)
    key, start = current[-1], time.perf_counter()
    try:
        return real_run(self)
    finally:
        callback = getattr(self, "_callback", None)
        owner = getattr(callback, "__self__", None)
        name = getattr(callback, "__qualname__", "")
        if hasattr(owner, "get_coro"):  # a task's step: named by its coroutine
            name = getattr(owner.get_coro(), "__qualname__", name)
        if owner is not key["bench"]:  # (the benchmark's own task: posting, polling, waiting)
            key["runs"].append((start, time.perf_counter() - start, name))

events.Handle._run = run
real_latency = console.key_latency

async def key_latency(app, name, *args, **kwargs):
    bench, thread = asyncio.current_task(), threading.get_ident()
    current.append({"key": name, "start": time.perf_counter(), "runs": [], "thread": thread, "bench": bench})
    try:
        return await real_latency(app, name, *args, **kwargs)
    finally:
        done = current.pop()
        keys.append({"key": name, "start": done["start"], "runs": done["runs"], "end": time.perf_counter()})

console.key_latency = key_latency
try:
    code = queue_keys.main()
finally:
    with open(out, "w") as f:
        json.dump(keys, f)
sys.exit(code)
"""


def phases(key: dict) -> dict[str, float]:
    """One key's milliseconds: ``wall`` (posted to painted), ``work`` (the console's callbacks on the app's
    loop) and ``idle`` (the rest: the loop waiting, mostly for the next frame's timer)."""
    start, end = key["start"], key["end"]
    work = sum(min(duration, end - began) for began, duration, _ in key["runs"] if began < end)  # (cut at the end)
    wall = end - start
    return {"wall": wall * 1000, "work": work * 1000, "idle": max(0.0, wall - work) * 1000}


def run_tree(tree: Path, inner: Path, out: Path, extra: list[str]) -> list[dict]:
    argv = [str(tree / ".venv" / "bin" / "python"), str(inner), str(tree), str(out), *extra]
    done = subprocess.run(argv, cwd=tree, env={**os.environ, "PYTHONHASHSEED": "0"}, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{tree}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    keys: list[dict] = json.loads(out.read_text())
    return keys


def part(name: str) -> str:
    """A key's part as queue_keys.py names its steps: the filter's letters are one part."""
    return name if name in ("o", "O", "escape", "slash") else "filter"


def main() -> int:
    args, trees, extra = tree_pair_args(__doc__, runs=4, rounds=2)
    pooled: list[dict[str, list[dict[str, float]]]] = [{} for _ in trees]
    with tempfile.TemporaryDirectory(prefix="yanflow-phases-") as tmp:
        inner = Path(tmp) / "inner.py"
        inner.write_text(INNER)
        for run in range(args.runs):
            for side, tree in enumerate(trees):
                for key in run_tree(tree, inner, Path(tmp) / f"{side}-{run}.json", extra):
                    pooled[side].setdefault(part(key["key"]), []).append(phases(key))
    print(f"{args.jobs} jobs, {args.runs} runs a tree; medians in ms (before -> after), 'slow': wall over 28 ms")
    print(f"{'part':8} {'keys':>7} {'wall':>15} {'work':>15} {'idle':>15} {'slow':>9}")
    for name, before in pooled[0].items():
        after = pooled[1].get(name, [])
        if not after:
            continue

        def med(rows: list[dict[str, float]], field: str) -> float:
            return statistics.median(r[field] for r in rows)

        cells = [f"{med(before, f):6.1f} -> {med(after, f):5.1f}" for f in ("wall", "work", "idle")]
        slow = [sum(r["wall"] > 28 for r in rows) for rows in (before, after)]
        counts = f"{len(before):>3}/{len(after):<3}"
        print(f"{name:8} {counts} {cells[0]:>15} {cells[1]:>15} {cells[2]:>15} {slow[0]:>4}/{slow[1]:<4}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
