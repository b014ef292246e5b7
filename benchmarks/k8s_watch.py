"""Benchmark: the Kubernetes backend's watch cache against the API emulator, run in its own process.

    python benchmarks/k8s_watch.py [--pods 10000] [--nodes 1250] [--events 20000]

Goals (issue #4): 10,000 pods listed and shown in under 1.5 s of CPU; at least 20,000 watch events
per second absorbed. It measures, in this process only (the emulator's CPU is not counted):

- importing the official client (paid once, when a Kubernetes cluster is first used);
- the first ``list_jobs()`` + ``list_nodes()``: three lists over HTTP, ``json.loads``, field
  extraction, the domain rows, then the table cells the UI would draw (``rows.job_live_cells`` /
  ``gpu_cells.node_fields``);
- polls as the hub makes them (``--polls`` of each kind): ``list_jobs`` when nothing changed, and when
  one pod changed phase, each answer then taken by the Queue's lists (``ClusterJobs.update``, with
  the answer's ``JobChanges`` where it has them): CPU of each, the median;
- a burst of pod MODIFIED events: from the first new event seen to the last one applied, wall time
  and CPU time, as events per second.

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=1_250)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--polls", type=int, default=7, help="polls of each kind (unchanged, one pod changed)")
    parser.add_argument("--no-gc", action="store_true", help="(diagnosis) no garbage collection while drawing cells")
    args = parser.parse_args()

    emulator = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "tests" / "fakes" / "k8s_api.py"),
            "--nodes",
            str(args.nodes),
            "--pods",
            str(args.pods),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = emulator.stdout.readline().strip()
        return asyncio.run(measure(url, emulator, args))
    finally:
        if emulator.poll() is None:
            emulator.stdin.write("quit\n")
            emulator.stdin.flush()
            try:
                emulator.wait(10)
            except subprocess.TimeoutExpired:
                emulator.kill()


async def measure(url: str, emulator: subprocess.Popen, args) -> int:
    from k8shelpers import write_kubeconfig

    from yanflow_tui.config import ClusterConfig
    from yanflow_tui.screens.render import gpu_cells, rows

    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = write_kubeconfig(Path(tmp) / "kubeconfig", url, namespace="default")
        cpu0, wall0 = time.process_time(), time.perf_counter()
        import kubernetes.client
        import kubernetes.config  # noqa: F401

        from yanflow_tui.backends.kubernetes.backend import KubernetesBackend

        import_cpu = time.process_time() - cpu0

        backend = KubernetesBackend(ClusterConfig("bench", "kubernetes", options={"kubeconfig": str(kubeconfig)}))
        cpu0, wall0 = time.process_time(), time.perf_counter()
        jobs = await backend.list_jobs()
        nodes = await backend.list_nodes()
        backend_cpu, backend_wall = time.process_time() - cpu0, time.perf_counter() - wall0
        cpu1 = time.process_time()
        import gc

        if "--no-gc" in sys.argv:
            gc.disable()
        cells: list[tuple] = [rows.job_live_cells(j, time.time) for j in jobs]
        jobs_cells_cpu = time.process_time() - cpu1
        cells += [gpu_cells.node_fields(n) for n in nodes]
        cells_cpu = time.process_time() - cpu1
        print(f"  (job cells {jobs_cells_cpu:.2f} s CPU, node cells {cells_cpu - jobs_cells_cpu:.2f} s CPU)")
        list_cpu, list_wall = time.process_time() - cpu0, time.perf_counter() - wall0
        pods = backend._reflectors["pods"]
        assert len(pods.values()) == args.pods and len(jobs) == args.pods and len(cells) == args.pods + args.nodes

        polls = await measure_polls(backend, emulator, args.polls)

        start_events = pods.events
        emulator.stdin.write(f"churn {args.events}\n")
        emulator.stdin.flush()
        while pods.events == start_events:  # noqa: ASYNC110 - a counter the watch task bumps; no event to wait on
            await asyncio.sleep(0.0005)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        first = pods.events
        while pods.events - start_events < args.events:  # noqa: ASYNC110 - as above
            await asyncio.sleep(0.001)
        watch_cpu, watch_wall = time.process_time() - cpu0, time.perf_counter() - wall0
        absorbed = pods.events - first
        cpu0 = time.process_time()
        jobs = await backend.list_jobs()
        nodes = await backend.list_nodes()
        rebuild_cpu = time.process_time() - cpu0
        await backend.close()

    print(f"import kubernetes client:             {import_cpu:6.2f} s CPU")
    print(
        f"{args.pods} pods / {args.nodes} nodes / {args.pods} jobs listed and shown: "
        f"{list_cpu:6.2f} s CPU, {list_wall:6.2f} s wall   (goal < 1.5 s CPU)"
    )
    print(
        f"  of which backend (3 lists over HTTP, json.loads, extraction, domain rows): {backend_cpu:6.2f} s CPU,"
        f" {backend_wall:6.2f} s wall"
    )
    print(
        f"  of which table cells (screens.render rows.job_live_cells / gpu_cells.node_fields):"
        f"             {cells_cpu:6.2f} s CPU"
    )
    print(
        f"watch burst: {absorbed} events in {watch_wall:6.3f} s wall, {watch_cpu:6.3f} s CPU -> "
        f"{absorbed / watch_wall:,.0f} events/s wall, {absorbed / max(watch_cpu, 1e-9):,.0f} events/s CPU"
        "   (goal >= 20,000/s)"
    )
    print(f"rows rebuilt after the burst:          {rebuild_cpu:6.2f} s CPU")
    for kind, (listed, taken, said) in polls.items():
        print(
            f"poll, {kind:<15}: list_jobs {listed * 1000:7.2f} ms CPU, Queue lists update {taken * 1000:7.2f} ms CPU"
            f" (median of {args.polls}; {said} of them with changes)"
        )
    return 0


async def measure_polls(backend, emulator: subprocess.Popen, count: int) -> dict[str, tuple[float, float, int]]:
    """``list_jobs`` then the Queue's lists taking the answer, CPU of each (medians): polls with nothing
    changed, and polls after one pod changed phase (a job's state moves)."""
    import statistics

    from yanflow_tui.screens.models.joblist import ClusterJobs

    lists = ClusterJobs()
    pods = backend._reflectors["pods"]

    async def poll() -> tuple[float, float, int]:
        cpu0 = time.process_time()
        answer = await backend.list_jobs()
        cpu1 = time.process_time()
        changes = getattr(answer, "changes", None)  # (a plain list from a backend that says nothing)
        lists.update(tuple(answer), "", changes, getattr(answer, "serial", 0))
        return cpu1 - cpu0, time.process_time() - cpu1, changes is not None

    await poll()  # the first answer, as the Queue first takes it
    quiet, one = [], []
    for i in range(count):
        quiet.append(await poll())
        events = pods.events
        emulator.stdin.write(f"phase {i} {'Succeeded' if i % 2 else 'Failed'}\n")
        emulator.stdin.flush()
        while pods.events == events:  # noqa: ASYNC110 - a counter the watch thread bumps; no event to wait on
            await asyncio.sleep(0.001)
        one.append(await poll())
    return {
        kind: (statistics.median(p[0] for p in got), statistics.median(p[1] for p in got), sum(p[2] for p in got))
        for kind, got in (("nothing changed", quiet), ("one pod changed", one))
    }


if __name__ == "__main__":
    sys.exit(main())
