"""Benchmark: one Determined refresh against the fake master over real HTTP (tests/fakes/det_master.py):
``list_jobs`` and ``list_nodes`` on a large cluster (goal: a refresh well under the 5 s interval,
and the steady-state refresh, with finished experiments' trials cached, under 1 s).

    python benchmarks/det_queue.py [--experiments 50] [--trials 20] [--commands 200] [--agents 64] [--runs 5]

Prints the figures; not part of the test suite. It uses a throw-away HOME for the det token cache.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "fakes"))


async def main(args) -> None:
    home = tempfile.mkdtemp(prefix="yanflow-det-bench-")
    os.environ.update(HOME=home, XDG_CONFIG_HOME=f"{home}/.config")
    from det_master import FakeMaster
    from determined.common.api import authentication

    from yanflow_tui.backends.determined.backend import DeterminedBackend
    from yanflow_tui.config import ClusterConfig

    master = FakeMaster().start()
    for i in range(args.agents):
        master.add_agent(f"agent-{i:03d}", 8, busy={g: f"ctr-{i}-{g}" for g in range(0, 8, 2)})
    for e in range(args.experiments):
        state = "RUNNING" if e < args.experiments // 5 else "COMPLETED"
        master.add_experiment(1000 + e, f"exp-{e}", "alice", state=state, ntrials=args.trials, best=0.1)
    for c in range(args.commands):
        master.add_command(str(uuid.uuid4()), f"cmd {c}", "alice", container=f"ctr-{c % args.agents}-0")
    token = master.token_for("alice")
    store = authentication.TokenStore(master.url)
    store.set_token("alice", token)
    store.set_active("alice")
    det = DeterminedBackend(ClusterConfig("det", "determined", options={"master": master.url}), env={})

    async def timed(coro):
        start = time.perf_counter()
        result = await coro
        return time.perf_counter() - start, result

    first, jobs = await timed(det.list_jobs())
    steady, nodes_t = [], []
    for _ in range(args.runs):
        seconds, jobs = await timed(det.list_jobs())
        steady.append(seconds)
        seconds, nodes = await timed(det.list_nodes())
        nodes_t.append(seconds)
    master.stop()
    print(
        f"cluster: {args.experiments} experiments x {args.trials} trials, {args.commands} commands, "
        f"{args.agents} agents x 8 GPUs -> {len(jobs)} job rows, {len(nodes)} nodes"
    )
    print(f"list_jobs first (all trials fetched):   {first * 1000:8.1f} ms")
    print(f"list_jobs steady (median of {args.runs}):      {statistics.median(steady) * 1000:8.1f} ms")
    print(f"list_nodes (median of {args.runs}):            {statistics.median(nodes_t) * 1000:8.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=50)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--commands", type=int, default=200)
    parser.add_argument("--agents", type=int, default=64)
    parser.add_argument("--runs", type=int, default=5)
    asyncio.run(main(parser.parse_args()))
