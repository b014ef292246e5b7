"""Benchmark: YanFlow beside the Slurm peers (turm, lazyslurm, slurm-term) on one real cluster (issue #32).

Every program runs in its own pseudo-terminal (``terminal.Console``'s reader and ``pyte``), on the same
Slurm cluster, read with local commands (``SLURM_CONF`` points at it; YanFlow's cluster has no ``ssh``
key, so it runs squeue there too, as the peers do). The benchmark submits ``--jobs`` held jobs first (and
cancels them at the end), so every program has the same queue to show.

For each program it reports: the time to the first screen that shows a job (any squeue lists); the cursor
(Down's bytes to the last byte of the answer, ``--presses`` times, p50/p95/max; a press whose screen did
not change is "unanswered"); then CPU (the program and its child processes, squeue included) and RSS over
``--idle-seconds`` with the bytes written. Each polls squeue every ``--refresh`` seconds where it can be
told (slurm-term cannot: its own default).

    SLURM_CONF=/tmp/yanflow-slurm/etc/slurm.conf python benchmarks/peers.py [--jobs 200] [--presses 50]
        [--idle-seconds 60] [--refresh 5] [--only yanflow,turm,lazyslurm,slurm-term] [--json out.json]

The peers come from PyPI (``pip install turm lazyslurm-py slurm-term``) into any environment on PATH or
``--peers-bin``. Not part of the test suite; wall clock on whatever else the machine runs.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from terminal import Console, percentile  # noqa: E402

DOWN = "\x1b[B"


class Program(Console):
    """``terminal.Console``'s reader over any command line."""

    def __init__(self, argv: list[str], columns: int, lines: int, home: Path) -> None:
        self._start(argv, columns, lines, home)


def programs(args, home: Path) -> dict[str, list[str]]:
    config = home / "yanflow.yaml"
    config.write_text(
        "clusters:\n  - name: slurm\n    kind: slurm\n"
        f"    refresh_seconds: {args.refresh}\n    nodes_refresh_seconds: {max(args.refresh, 30)}\n"
    )
    peer = lambda name: str(Path(args.peers_bin) / name) if args.peers_bin else (shutil.which(name) or name)  # noqa: E731
    return {
        "yanflow": [sys.executable, "-m", "yanflow_tui", "--config", str(config)],
        "turm": [peer("turm"), "--slurm-refresh", str(args.refresh)],
        "lazyslurm": [peer("lazyslurm"), "--refresh", str(args.refresh), "--no-live", "--user", getpass.getuser()],
        "slurm-term": [peer("slurm-term")],
    }


def submit(count: int) -> list[str]:
    """``count`` held jobs of the current user (they never run), their ids."""
    ids = []
    for i in range(count):
        out = subprocess.run(
            ["sbatch", "--parsable", "--hold", f"--job-name=peers-{i:04d}", "--time=5", "--wrap", "sleep 60"],
            check=True,
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout
        ids.append(out.strip().split(";")[0])
    return ids


def run_one(name: str, argv: list[str], ids: list[str], args) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        start = time.monotonic()
        term = Program(argv, args.columns, args.lines, Path(tmp))
        try:
            jobs = re.compile(r"\b(" + "|".join(map(re.escape, ids)) + r")\b")
            while not jobs.search(term.text()):  # any job's row (newest or oldest first, finished ones too)
                if time.monotonic() - start > 120:
                    return {"error": "none of the jobs shown after 120 s", "screen": term.text()}
                term.read(0.2)
            first = time.monotonic() - start
            term.settle(1.0, most=20)
            times, unanswered = [], 0
            for _ in range(args.presses):
                took = term.press(DOWN, args.quiet)
                if took is None:
                    unanswered += 1
                else:
                    times.append(took)
            term.settle(1.0, most=20)
            return {
                "first_screen_s": round(first, 2),
                "cursor": {
                    "n": len(times),
                    "p50_ms": round(1000 * statistics.median(times), 1) if times else None,
                    "p95_ms": round(1000 * percentile(times, 95), 1) if times else None,
                    "max_ms": round(1000 * max(times), 1) if times else None,
                    "unanswered": unanswered,
                },
                "idle": term.idle(args.idle_seconds),
            }
        finally:
            term.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=200, help="held jobs submitted first (cancelled at the end)")
    parser.add_argument("--presses", type=int, default=50)
    parser.add_argument("--quiet", type=float, default=0.25, help="s of silence that end a key's answer")
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--refresh", type=int, default=5, help="squeue every N s, where a program takes it")
    parser.add_argument("--size", default="200x50")
    parser.add_argument("--only", default="yanflow,turm,lazyslurm,slurm-term")
    parser.add_argument("--peers-bin", help="the folder holding turm, lazyslurm and slurm-term")
    parser.add_argument("--json", help="write the figures there too")
    args = parser.parse_args()
    if not os.environ.get("SLURM_CONF"):
        raise SystemExit("set SLURM_CONF to the cluster's slurm.conf (scripts/slurm-cluster up prints it)")
    args.columns, args.lines = map(int, args.size.lower().split("x"))
    ids = submit(args.jobs)
    listed = subprocess.run(["squeue", "-h", "-o", "%i"], check=True, capture_output=True, text=True, timeout=30)
    shown = [line.strip() for line in listed.stdout.splitlines() if line.strip()]  # any job row: a first screen
    results: dict[str, dict] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name, argv in programs(args, Path(tmp)).items():
                if name not in args.only.split(","):
                    continue
                results[name] = run_one(name, argv, shown, args)
                print(name, json.dumps(results[name]), flush=True)
    finally:
        subprocess.run(["scancel", *ids], timeout=60, check=False)
    print(f"\n{args.jobs} held jobs, {args.size}, squeue every {args.refresh} s where it can be set")
    heads = ("first s", "cursor p50", "p95", "max", "unans", "idle CPU %", "RSS MB")
    print(f"{'program':12} " + " ".join(f"{h:>10}" for h in heads))
    for name, r in results.items():
        if "error" in r:
            print(f"{name:12} {r['error']}")
            continue
        c, i = r["cursor"], r["idle"]
        print(
            f"{name:12} "
            + " ".join(
                f"{v!s:>10}"
                for v in (r["first_screen_s"], c["p50_ms"], c["p95_ms"], c["max_ms"], c["unanswered"])
                + (i["cpu_percent"], i["rss_mb_max"])
            )
        )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
