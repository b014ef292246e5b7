"""Benchmark: instructions per Queue key under callgrind, a figure the machine's load does not move (issue #29).

Wall and CPU milliseconds on a small shared machine move by ±30 % from run to run; instruction counts do
not depend on what else runs. This runs ``queue_keys.py``'s steps (the first screen, three
refreshes, the filter typed, Escape, ``o``/``O``) under ``valgrind --tool=callgrind`` with collection off,
and switches it on only inside each step (a key: posted, handled and painted; a refresh: the new data
through the hub to the Queue painted; the first screen: from the app made to every row shown) through
callgrind's client requests, so that each step gets its own count. Two trees (before and after a
change) compare step by step:

    python benchmarks/key_instructions.py --trees BEFORE_DIR,AFTER_DIR [--runs 2] [--jobs 10000]
        [queue_keys.py's options after --]

Each tree runs with its own ``.venv`` and its own ``benchmarks/`` (``queue_keys.py``, ``console.py``),
``PYTHONHASHSEED=0``. What stays uncertain: the waits between a key and its paint poll on a timer, and
idle work (warming, the collector) falls where time falls, so one key varies by about ±15 % between runs of
one tree; the sum over all keys of a run varies by about 2 %. Needs valgrind and its ``callgrind.h`` (Debian:
``valgrind``) and a C compiler. Not part of the test suite; minutes per run at 10k jobs, about ten at 100k.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TOGGLE_C = """
#include <valgrind/callgrind.h>
void cg_begin(void) { CALLGRIND_START_INSTRUMENTATION; CALLGRIND_ZERO_STATS; }
void cg_end(const char *label) { CALLGRIND_DUMP_STATS_AT(label); CALLGRIND_STOP_INSTRUMENTATION; }
"""

# Runs inside the measured tree's Python: console.key_latency wrapped with the client requests.
INNER = """
import ctypes, sys
tree, lib = sys.argv.pop(1), ctypes.CDLL(sys.argv.pop(1))
sys.path.insert(0, tree + "/benchmarks")
import console, queue_keys
from yanflow_tui import app as app_module
counts = {}

def begin(name):
    counts[name] = counts.get(name, 0) + 1
    lib.cg_begin()
    return f"{name}#{counts[name]}".encode()

def measured(name_of, real):
    async def wrapper(*args, **kwargs):
        label = begin(name_of(*args))
        try:
            return await real(*args, **kwargs)
        finally:
            lib.cg_end(label)
    return wrapper

# each key: posted, handled, painted
console.key_latency = measured(lambda app, name, *rest: name, console.key_latency)
# each refresh: the new data through the hub to the Queue painted
console.refresh_queue = measured(lambda *rest: "refresh", console.refresh_queue)
# the first screen: from the app made to the Queue's rows all shown (begun in the app's __init__)
real_init, real_until, first = app_module.YanflowApp.__init__, console.until, []

def init(self, *args, **kwargs):
    first.append(begin("first-screen"))
    real_init(self, *args, **kwargs)

async def until(condition, timeout, what, *rest, **kwargs):
    try:
        return await real_until(condition, timeout, what, *rest, **kwargs)
    finally:
        if what == "the first screen" and first:
            lib.cg_end(first.pop())

app_module.YanflowApp.__init__ = init
console.until = until
sys.exit(queue_keys.main())
"""

LABEL = re.compile(r"^desc: Trigger: Client Request: (.+)#(\d+)$")


def build_toggle(where: Path) -> Path:
    source, library = where / "cgtoggle.c", where / "libcgtoggle.so"
    source.write_text(TOGGLE_C)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    return library


def counts(folder: Path) -> dict[str, list[int]]:
    """Key name -> instructions of each press, in order, from callgrind's dumps in ``folder``."""
    found: dict[str, list[tuple[int, int]]] = {}
    for dump in folder.glob("cg.*.*"):
        label = total = None
        for line in dump.read_text(errors="replace").splitlines():
            if match := LABEL.match(line):
                label = (match.group(1), int(match.group(2)))
            elif line.startswith("totals:"):
                total = int(line.split()[1])
        if label and total is not None:
            found.setdefault(label[0], []).append((label[1], total))
    return {key: [n for _, n in sorted(presses)] for key, presses in found.items()}


def run_tree(tree: Path, library: Path, inner: Path, out: Path, extra: list[str]) -> dict[str, list[int]]:
    out.mkdir(parents=True)
    argv = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}/cg.%p"]
    argv += [str(tree / ".venv" / "bin" / "python"), str(inner), str(tree), str(library), *extra]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{tree}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return counts(out)


def tree_pair_args(doc: str, runs: int, rounds: int) -> tuple[argparse.Namespace, list[Path], list[str]]:
    """The options of a benchmark that runs ``queue_keys.py`` in two trees: the parsed arguments, the two
    trees, and ``queue_keys.py``'s own arguments (also used by ``key_phases.py``)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--trees", required=True, help="BEFORE,AFTER: two checkouts, each with its .venv")
    parser.add_argument("--runs", type=int, default=runs, help="runs per tree, alternated")
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("rest", nargs="*", help="after --: more queue_keys.py options")
    args = parser.parse_args()
    trees = [Path(t).resolve() for t in args.trees.split(",")]
    extra = ["--jobs", str(args.jobs), "--nodes", str(max(50, args.jobs // 20)), "--rounds", str(rounds), *args.rest]
    return args, trees, extra


def main() -> int:
    args, trees, extra = tree_pair_args(__doc__, runs=2, rounds=3)
    pooled: list[dict[str, list[int]]] = [{} for _ in trees]
    with tempfile.TemporaryDirectory(prefix="yanflow-instr-") as tmp:
        work = Path(tmp)
        library = build_toggle(work)
        inner = work / "inner.py"
        inner.write_text(INNER)
        for run in range(args.runs):
            for side, tree in enumerate(trees):
                for key, each in run_tree(tree, library, inner, work / f"{side}-{run}", extra).items():
                    pooled[side].setdefault(key, []).extend(each)
    before, after = pooled
    print(f"{args.jobs} jobs, {args.runs} runs a tree; millions of instructions per key press")
    print(f"{'step':14} {'presses':>8} {'before median':>14} {'after median':>13} {'ratio':>6} {'sum ratio':>9}")
    for key in before:
        b, a = before[key], after.get(key, [])
        if not a:
            continue
        print(
            f"{key:14} {len(b):>4}/{len(a):<3} {statistics.median(b) / 1e6:>14.1f} {statistics.median(a) / 1e6:>13.1f}"
            f" {statistics.median(a) / statistics.median(b):>6.2f} {sum(a) / sum(b):>9.2f}"
        )
    total_b = sum(sum(v) for v in before.values())
    total_a = sum(sum(after.get(k, [])) for k in before)
    print(f"all keys: {total_b / 1e6:,.0f} -> {total_a / 1e6:,.0f} M instructions, ratio {total_a / total_b:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
