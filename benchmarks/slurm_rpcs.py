"""Benchmark: the slurmctld RPCs one console makes per minute, on the real test cluster (issue 10
point 8, issue 18 point 10). Goal: at most 6 job queries and 2 node queries a minute by default.

    python benchmarks/slurm_rpcs.py [--config /tmp/yanflow-slurm/yanflow.yaml] [--minutes 2]
        [--baseline-minutes 1] [--tasks 4000] [--all-users] [--json out.json]

It submits a held array (``--hold --array=0-(tasks-1)``, cancelled at the end) so the queue holds a
few thousand pending tasks, then reads ``sdiag``'s RPC counts by message type:

1. over a baseline window with no console (other users of the shared cluster, and its own daemons);
2. over a window with one console: ``YanflowApp`` headless (``run_test()``) on the Queue, as it starts
   (my jobs; ``--all-users`` presses ``u`` first).

It prints per minute, for REQUEST_JOB_INFO(_SINGLE), REQUEST_JOB_USER_INFO, REQUEST_NODE_INFO and
REQUEST_PARTITION_INFO: the console window, the baseline, and the difference (the console's share).
The console's own commands, counted by its transport (``history``), are printed beside them: they
do not depend on what else runs on the cluster. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

DIR = Path(os.environ.get("YANFLOW_SLURM_DIR", "/tmp/yanflow-slurm"))
SLURM_ENV = dict(os.environ, SLURM_CONF=str(DIR / "etc" / "slurm.conf"))
JOB_RPCS = ("REQUEST_JOB_INFO", "REQUEST_JOB_INFO_SINGLE", "REQUEST_JOB_USER_INFO")
NODE_RPCS = ("REQUEST_NODE_INFO", "REQUEST_PARTITION_INFO")
GOALS = {"job": 6, "node": 2}


def sdiag() -> Counter:
    """RPC counts by message type since slurmctld started (or ``sdiag -r``)."""
    out = subprocess.run(["sdiag"], capture_output=True, text=True, env=SLURM_ENV, timeout=30, check=True).stdout
    section = out.split("Remote Procedure Call statistics by message type", 1)[1]
    section = section.split("Remote Procedure Call statistics by user", 1)[0]
    return Counter(
        {m.group(1): int(m.group(2)) for m in re.finditer(r"^\s*(\w+)\s+\(\s*\d+\)\s+count:(\d+)", section, re.M)}
    )


def per_minute(before: Counter, after: Counter, seconds: float) -> dict[str, float]:
    return {name: (after[name] - before[name]) * 60 / seconds for name in (*JOB_RPCS, *NODE_RPCS)}


def submit_array(tasks: int) -> str:
    out = subprocess.run(
        [
            "sbatch",
            "--parsable",
            "--hold",
            f"--array=0-{tasks - 1}",
            "-J",
            "yf-rpcs-bench",
            "-o",
            "/dev/null",
            "-p",
            "cpu",
            "--wrap",
            "true",
        ],
        capture_output=True,
        text=True,
        env=SLURM_ENV,
        timeout=60,
        check=True,
    )
    return out.stdout.strip().split(";")[0]


def cancel(job_id: str) -> None:
    subprocess.run(["scancel", job_id], env=SLURM_ENV, timeout=60, check=False)


async def console_window(config_path: str, seconds: float, all_users: bool) -> tuple[dict, float]:
    """Run one headless console for ``seconds`` after its first refresh; return its commands by kind
    and the exact window length (sdiag is read at both ends)."""
    from yanflow_tui.app import YanflowApp
    from yanflow_tui.config import load_config
    from yanflow_tui.hub import Hub

    config = load_config(config_path)
    app = YanflowApp(config, Hub(config))
    async with app.run_test(size=(160, 40)) as pilot:
        if all_users:
            await pilot.press("u")
        start, t0 = sdiag(), time.monotonic()
        while time.monotonic() - t0 < seconds:
            await pilot.pause(1.0)
        end, elapsed = sdiag(), time.monotonic() - t0
        sent: Counter = Counter()
        for name in app.hub.names:
            transport = getattr(app.hub.backend(name), "transport", None)
            for argv in getattr(transport, "history", ()):
                sent[argv[0] if argv[0] != "squeue" or "-j" not in argv else "squeue -j"] += 1
    return {"rpcs": per_minute(start, end, elapsed), "commands": dict(sent)}, elapsed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(DIR / "yanflow.yaml"))
    parser.add_argument("--minutes", type=float, default=2.0, help="the console's window")
    parser.add_argument("--baseline-minutes", type=float, default=1.0, help="the window with no console (0: none)")
    parser.add_argument("--tasks", type=int, default=4000, help="held array tasks pending meanwhile (0: none)")
    parser.add_argument("--all-users", action="store_true", help="press u first: every user's jobs")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args(argv)

    array = submit_array(args.tasks) if args.tasks else ""
    try:
        out: dict = {"tasks": args.tasks, "array_job": array, "all_users": args.all_users}
        if args.baseline_minutes:
            before, t0 = sdiag(), time.monotonic()
            time.sleep(args.baseline_minutes * 60)
            out["baseline"] = per_minute(before, sdiag(), time.monotonic() - t0)
        console, elapsed = asyncio.run(console_window(args.config, args.minutes * 60, args.all_users))
        out["console"], out["window_s"] = console["rpcs"], round(elapsed, 1)
        minutes = elapsed / 60
        out["commands_per_minute"] = {k: v / minutes for k, v in console["commands"].items()}
    finally:
        if array:
            cancel(array)
    base = out.get("baseline", {})
    print(f"{args.tasks} held array tasks; console window {out['window_s']} s; per minute:")
    print(f"{'RPC':<28} {'console':>8} {'baseline':>9} {'console share':>14}")
    share: dict[str, float] = {}
    for name in (*JOB_RPCS, *NODE_RPCS):
        share[name] = out["console"][name] - base.get(name, 0.0)
        print(f"{name:<28} {out['console'][name]:>8.1f} {base.get(name, 0.0):>9.1f} {share[name]:>14.1f}")
    out["share"] = share
    print(
        "commands the console sent, per minute:",
        ", ".join(f"{k} {v:.1f}" for k, v in sorted(out["commands_per_minute"].items())),
    )
    job = sum(share[n] for n in JOB_RPCS)
    node = share["REQUEST_NODE_INFO"]
    print(f"job queries {job:.1f}/min (goal <= {GOALS['job']}), node queries {node:.1f}/min (goal <= {GOALS['node']})")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
