"""Benchmark: peak RSS of the console over a real Slurm backend with a big queue (issue #17: <= 150 MB at
10,000 jobs, <= 400 MB at 100,000).

``benchmarks/console.py`` measures the console over its synthetic backend, whose jobs are made as ``Job``s
directly. Here the cluster is the real ``SlurmBackend`` (its parse path, its caches) over a transport that
serves what ``squeue -o`` would print: ``--lines`` lines synthesised as ``benchmarks/squeue_parse.py`` does
(from ``tests/data/slurm/squeue.txt``), ``--nodes`` GPU nodes as ``sinfo --json``, no accounting. It
drives ``YanflowApp`` through ``App.run_test()``: the first screen, idle warming, ``--polls`` refreshes
with 5% of the lines changed each, then a filter typed and cleared, and prints the RSS at each step and
the peak (``VmHWM``). ``--path raw`` parses as before ``squeue_jobs`` (the tests' reference
``parse_squeue_text``, ``tests/slurmreference.py``, then ``build_jobs``); ``--path nocache`` drops the
parser's line cache after each poll.

    python benchmarks/slurm_console.py [--lines 100000] [--nodes 5000] [--polls 2] [--path direct|raw|nocache]
        [--parse sliced|inline|thread] [--trace]

``--trace`` prints, at each step, what Python allocations grew since the step before (tracemalloc, by
file and by line): where the memory sits, and whether it keeps growing poll after poll.

Each poll also prints how long the event loop was held (issue #17: a key < 100 ms): a probe coroutine
sleeps 5 ms over and over and notes how late it woke (``stall``: the longest), during the backend's
``list_jobs`` from the squeue text served to the answer (``in list_jobs``: the parse, what this backend
does; ``of``: how long that took) and over the whole poll until painted (the Queue's update too, and the
served text's decompression); in odd polls (3, 5...) ``down``/``up``
keys are sent one after another while ``list_jobs`` runs, each timed until the cursor moved and the
screen painted (the first pressed as the text is served; the stall then counts the keys' own work),
and ten more at the end, no poll running.
``--parse`` says how the backend runs the parse: ``sliced`` (as shipped: ``backend.in_slices``, the
loop given a turn every slice), ``inline`` (the whole parse at once on the loop, as before it),
``thread`` (``asyncio.to_thread``: the alternative, for comparison; not safe to ship as it is: the
backend's parser tables, its ``ParseCaches``, node name lists among them, are also used by the loop's
own parses).

Each poll's text is held compressed and decoded when served, as a transport would receive it. Not part
of the test suite; it waits on the Queue through ``benchmarks/console.py``'s adapters.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
sys.path.insert(1, str(HERE.parent / "tests"))  # the reference parser

import console  # noqa: E402
import squeue_parse  # noqa: E402
from slurmreference import ReferenceCaches, parse_squeue_text  # noqa: E402

from yanflow_tui.backends import registry  # noqa: E402
from yanflow_tui.backends.slurm import backend as slurm_backend  # noqa: E402
from yanflow_tui.backends.slurm import parse  # noqa: E402
from yanflow_tui.backends.slurm.backend import SlurmBackend  # noqa: E402
from yanflow_tui.backends.slurm.parsecache import ParseCaches  # noqa: E402
from yanflow_tui.backends.slurm.transport import Result, Transport  # noqa: E402
from yanflow_tui.config import ClusterConfig, Config  # noqa: E402
from yanflow_tui.hub import Hub  # noqa: E402


def status_mb(key: str) -> float:
    """A ``/proc/self/status`` figure (``VmRSS``, ``VmHWM``) in MB."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) / 1024 for line in status if line.startswith(key + ":"))


def sinfo_json(count: int) -> bytes:
    nodes = [
        {
            "name": f"gpu{i:04d}",
            "state": "mixed",
            "gres": "gpu:a100:8",
            "gres_used": "gpu:a100:4(IDX:0-3)",
            "partitions": ["gpu"],
            "cpus": 64,
            "alloc_cpus": 32,
            "real_memory": 512000,
            "alloc_memory": 1000,
            "reason": "",
        }
        for i in range(1, count + 1)
    ]
    return json.dumps({"nodes": nodes}).encode()


def reset_peak() -> bool:
    """Start ``VmHWM`` again from the RSS now (Linux: ``5`` written to ``clear_refs``), so that the
    peak reported is the console's, not the setup's; False where that cannot be done."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        return False
    return status_mb("VmHWM") <= status_mb("VmRSS") + 1


class ServedTransport(Transport):
    """Answers squeue (the next poll's text each time it is asked), sinfo and ``id -un``; sacct says
    accounting is off. Texts are kept compressed, decoded when served."""

    description = "served"
    polls: list[bytes] = []
    sinfo = b""
    served = 0
    served_at = 0.0  # when the last squeue text was served (perf_counter)
    on_served: Callable[[], None] | None = None  # called as a text is served (a key pressed then)

    async def run(self, argv, stdin_data=None, timeout=None) -> Result:
        argv = tuple(str(a) for a in argv)
        if argv[0] == "squeue" and "-o" in argv:
            cls = type(self)
            cls.served += 1
            data = zlib.decompress(cls.polls[min(cls.served, len(cls.polls)) - 1])
            cls.served_at = time.perf_counter()  # (the text received: what follows is the backend's)
            if cls.on_served is not None:
                cls.on_served()
            return Result(argv, 0, data, "")  # the bytes, as a transport gives them (decoded if read)
        if argv[0] == "sinfo":
            return Result(argv, 0, zlib.decompress(self.sinfo).decode(), "")
        if argv[:2] == ("id", "-un"):
            return Result(argv, 0, "root\n", "")
        if argv[0] == "sacct":
            return Result(argv, 1, "", "Slurm accounting storage is disabled")
        return Result(argv, 1, "", "not served here")

    async def _exec(self, script):  # pragma: no cover - every command is answered by run
        raise AssertionError(script)

    async def _stream(self, script, binary=False):  # pragma: no cover
        raise AssertionError(script)


class ServedSlurm(SlurmBackend):
    """The real backend over ``ServedTransport``; notes each ``list_jobs`` from its squeue text served
    to its answer (``windows``), and whether one is running (``listing``)."""

    windows: list[tuple[float, float]] = []
    listing = False
    caches_made: Callable[[], ParseCaches] = ParseCaches  # ReferenceCaches for --path raw (its rows kept)
    latest: ServedSlurm | None = None  # the backend made last (its caches measured at the end)

    def __init__(self, config, transport=None):
        super().__init__(config, ServedTransport())
        self.parse_caches = type(self).caches_made()
        type(self).latest = self

    async def list_jobs(self):
        type(self).listing = True
        try:
            answer = await super().list_jobs()
        finally:
            type(self).listing = False
        type(self).windows.append((ServedTransport.served_at, time.perf_counter()))
        return answer


class LagProbe:
    """A coroutine that sleeps ``every`` seconds over and over, noting each sleep's start, end and how
    much later than asked it woke: how long the event loop was held meanwhile."""

    def __init__(self, every: float = 0.005) -> None:
        self.every = every
        self.samples: list[tuple[float, float, float]] = []

    async def run(self) -> None:
        while True:
            start = time.perf_counter()
            await asyncio.sleep(self.every)
            end = time.perf_counter()
            self.samples.append((start, end, end - start - self.every))

    def worst(self, start: float, end: float) -> float:
        """The longest part of an overshoot (the loop held) within ``start``..``end``."""
        return max([0.0] + [min(b, end) - max(b - late, start) for _, b, late in self.samples])


def use_parse(how: str) -> None:
    """How the backend runs a parse's steps (``sliced``: as shipped)."""
    if how == "inline":

        async def inline(steps):
            return parse.run_steps(steps)

        slurm_backend.in_slices = inline  # type: ignore[assignment]
    elif how == "thread":

        async def threaded(steps):
            return await asyncio.to_thread(parse.run_steps, steps)

        slurm_backend.in_slices = threaded  # type: ignore[assignment]


def use_path(path: str) -> None:
    """Which parse the backend runs (``direct``: as shipped)."""
    shipped = parse.squeue_steps
    if path == "raw":

        def raw(text, cluster: str, caches: ParseCaches):
            yield
            text = text.decode(errors="replace") if isinstance(text, bytes) else text
            return parse.build_jobs(parse_squeue_text(text, caches), cluster, caches), parse.QueueDelta(0, 0)

        parse.squeue_steps = raw  # type: ignore[assignment]
        ServedSlurm.caches_made = ReferenceCaches
    elif path == "nocache":

        def dropping(text, cluster: str, caches: ParseCaches):
            answer = yield from shipped(text, cluster, caches)
            caches.lines.clear()
            caches.arrays.clear()
            caches.parsed.clear()
            return answer

        parse.squeue_steps = dropping  # type: ignore[assignment]


def press_as_served(app) -> list[float]:
    """A ``down`` key posted the moment the next squeue text is served; filled then with that moment
    and the cursor's row before it."""
    pressed: list[float] = []

    def press() -> None:
        pressed.extend((time.perf_counter(), console.queue_cursor(app) or 0))
        console.send_key(app, "down")

    ServedTransport.on_served = press
    return pressed


async def cursor_key(app, sent: int) -> float:
    """Seconds a ``down`` (``sent`` even) or ``up`` key takes to move the Queue's cursor and be painted."""
    before = console.queue_cursor(app) or 0
    key, step = ("down", 1) if sent % 2 == 0 else ("up", -1)
    return await console.key_latency(
        app, key, lambda: console.queue_cursor(app) == before + step, console.queue_widget(app)
    )


def trace(traced: list) -> None:
    """Python's allocations held now against the last step's (tracemalloc): the files and lines that
    grew or shrank most (at the first step, the files that hold most), and the total traced."""
    import gc
    import tracemalloc

    gc.collect()
    now = tracemalloc.take_snapshot().filter_traces((tracemalloc.Filter(False, tracemalloc.__file__),))
    total = sum(stat.size for stat in now.statistics("filename")) / 2**20
    print(f"    traced {total:.1f} MB")
    if not traced:  # the first step: what is held, by file
        for stat in now.statistics("filename")[:10]:
            where = stat.traceback[0].filename.split("/site-packages/")[-1].split("/wt-changes/")[-1]
            print(f"    {stat.size / 2**20:7.2f} MB {stat.count:8d} blocks  {where}")
    if traced:
        for key in ("filename", "lineno"):
            for stat in now.compare_to(traced[0], key)[:8]:
                frame = stat.traceback[0]
                where = frame.filename.split("/site-packages/")[-1].split("/wt-changes/")[-1]
                where += f":{frame.lineno}" if key == "lineno" else ""
                print(f"    {stat.size_diff / 2**20:+7.2f} MB {stat.count_diff:+8d} blocks  {where}")
    traced[:] = [now]


async def run(args) -> None:
    from yanflow_tui.app import YanflowApp

    templates = squeue_parse.columns_of([line for line in squeue_parse.RECORDED.read_text().split("\n") if line])
    text, _ = squeue_parse.synthesise(templates, args.lines)
    # each poll's text made and compressed in turn: all of them at once (17 MB each at 100,000 lines)
    # peaked at 386 MB before the app with --polls 8, above what the console itself then reached
    ServedTransport.polls = [zlib.compress(text.encode(), 1)]
    for i in range(args.polls):
        ServedTransport.polls.append(zlib.compress(squeue_parse.churned(text, 0.05, seed=18 + i).encode(), 1))
    ServedTransport.sinfo = zlib.compress(sinfo_json(args.nodes), 1)
    del text, templates
    use_path(args.path)
    use_parse(args.parse)
    registry.register("served-slurm", ServedSlurm)
    config = Config(clusters=(ClusterConfig("hpc", "served-slurm", refresh_seconds=3600.0),), all_users=True)
    if args.trace:
        import tracemalloc

        tracemalloc.start()
    before, setup = status_mb("VmRSS"), status_mb("VmHWM")
    reset = reset_peak()
    print(
        f"{args.lines:,} squeue lines, {args.nodes:,} nodes, path {args.path}, parse {args.parse}; "
        f"RSS before the app {before:.0f} MB (setup peak {setup:.0f} MB, "
        f"{'reset: the peaks below are the console' if reset else 'NOT reset'})"
    )

    traced: list = []  # the last tracemalloc snapshot (--trace)

    def mark(what: str) -> None:
        print(f"  {what:<28} RSS {status_mb('VmRSS'):5.0f} MB  peak {status_mb('VmHWM'):5.0f} MB", flush=True)
        if args.trace:
            trace(traced)

    probe = LagProbe()
    stalls: list[tuple[float, float]] = []  # per poll: the longest stall in list_jobs, over the whole poll
    keys: list[float] = []  # latencies of the keys sent while list_jobs ran

    def stall(what: str, start: float, window: tuple[float, float]) -> None:
        listed, whole = probe.worst(*window), probe.worst(start, time.perf_counter())
        stalls.append((listed, whole))
        took = window[1] - window[0]
        print(
            f"  {what:<28} stall in list_jobs {listed * 1000:5.0f} ms (of {took * 1000:4.0f} ms), "
            f"over the poll {whole * 1000:5.0f} ms"
        )

    started = time.perf_counter()
    app = YanflowApp(config, Hub(config))
    async with app.run_test(size=(160, 50)) as pilot:
        probing = asyncio.create_task(probe.run())
        await console.until(
            lambda: ServedTransport.served >= 1 and console.queue_row_count(app) > 0, args.timeout, "the first rows"
        )
        await console.painted(lambda: console.queue_widget(app))
        mark(f"first screen ({time.perf_counter() - started:.1f} s)")
        stall("the first poll", started, ServedSlurm.windows[0])
        await asyncio.sleep(args.idle)
        mark(f"after {args.idle:.0f} s idle (warming)")
        for poll in range(2, args.polls + 2):
            start = time.perf_counter()
            pressed = press_as_served(app) if poll % 2 else []  # (odd polls) a key as the text is served
            app.request_refresh()
            await console.until(lambda poll=poll: ServedTransport.served >= poll, args.timeout, "the next poll")
            ServedTransport.on_served = None
            sent = 0
            if pressed:
                moved = pressed[1] + 1
                await console.until(lambda moved=moved: console.queue_cursor(app) == moved, args.timeout, "the key")
                await console.painted(lambda: console.queue_widget(app))
                keys.append(time.perf_counter() - pressed[0])
                sent = 1
            while pressed and ServedSlurm.listing:  # then keys, one after another, while it parses
                keys.append(await cursor_key(app, sent))
                sent += 1
            await console.until(lambda poll=poll: len(ServedSlurm.windows) >= poll, args.timeout, "the answer")
            await console.painted(lambda: console.queue_widget(app))
            stall(f"poll {poll} ({sent} keys meanwhile)", start, ServedSlurm.windows[poll - 1])
            await asyncio.sleep(args.idle / 2)
            mark(f"poll {poll}, {args.idle / 2:.0f} s after")
        idle = [await cursor_key(app, sent) for sent in range(10)]  # the same keys, no poll running
        probing.cancel()
        for key in (console.FILTER_KEY, "u", "s", "e", "r", "0", console.CLEAR_FILTER_KEY):
            await pilot.press(key)
            await console.painted(lambda: console.queue_widget(app))
        mark("a filter typed and cleared")
    ordered = sorted(keys)
    print(
        f"event loop held at most {max(s[0] for s in stalls) * 1000:.0f} ms in list_jobs "
        f"(the next polls: {max((s[0] for s in stalls[1:]), default=0) * 1000:.0f} ms), "
        f"{max(s[1] for s in stalls) * 1000:.0f} ms over a whole poll; keys during list_jobs: {len(keys)}"
        + (f", p95 {console.p95(ordered) * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms" if keys else "")
        + f" (idle: p95 {console.p95(sorted(idle)) * 1000:.0f} ms)"
    )
    goal = 150 if args.lines <= 10_000 else 400
    peak = status_mb("VmHWM")
    print(
        f"peak RSS {peak:.0f} MB (goal <= {goal} MB: {'ok' if peak <= goal else 'MISSED'}); "
        f"the parser's line cache {squeue_parse.cache_bytes(ServedSlurm.latest.parse_caches) / 2**20:.1f} MB"
        if ServedSlurm.latest
        else "no backend made"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--polls", type=int, default=2, help="refreshes after the first screen")
    parser.add_argument("--path", choices=("direct", "raw", "nocache"), default="direct")
    parser.add_argument("--parse", choices=("sliced", "inline", "thread"), default="sliced")
    parser.add_argument("--idle", type=float, default=8.0, help="seconds left idle after the first screen")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument(
        "--trace", action="store_true", help="tracemalloc: what grew between steps, by file and by line (slow)"
    )
    asyncio.run(run(parser.parse_args()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
