"""Benchmark: the console at scale, headless, against a plain Textual DataTable (issue #6).

10,000 jobs on 3 clusters and 2,000 nodes x 8 GPUs, 5 % of the jobs changing per refresh, against a
``DataTable`` rebuilt from scratch with the same rows. Run it with:

    python benchmarks/console.py [--quick] [--log-gb 0.2] [--jobs 10000] [--nodes 2000] [--json out.json]

(``--quick``: 1,000 jobs and 200 nodes, a smoke run of about 15 s; the full run takes about a minute
on 2 cores, ``--log-gb 1`` adds about 40 s. ``--only yanflow`` runs one part; ``--help`` lists the rest.)

It drives ``YanflowApp`` through ``App.run_test()`` over ``benchmarks/synthetic.py`` (a real ``Backend``
registered as the ``synthetic`` kind) and prints a table with the goals beside the figures:

- time to first screen: app start until the Queue's rows are all there and painted;
- refresh: 5 % of jobs (and nodes) changed, ``app.request_refresh()``, until the Queue (then the Nodes
  screen) holds the changed rows and has painted them. Shown whole and from "data in hand" (the
  backends answered) to painted; the whole includes the app's ``COALESCE_SECONDS`` wait;
- key latency: each key posted as the terminal would, until the screen reflects it and has painted:
  ``down`` on the Queue, the ``/`` filter typed a character at a time, ``escape`` clearing it, ``o``/``O``
  sorting (``--sorts``), ``e`` opening and closing groups (``--toggles``); median and p95 of each, with
  this process's CPU seconds beside them (steadier than wall clock on a shared machine);
- log throughput: lines per second into the Logs pane from a fast ``stream_logs``, with key latency
  measured while it streams;
- peak RSS of the whole run, and a separate run following a big log (``--log-gb``; 1 GB is possible,
  the default 0.2 GB keeps the run short on 2 cores). It stops early past ``--rss-cap-mb`` to protect
  a shared machine, and says so.

The baseline is a tiny App with an ``Input`` and one ``DataTable``: on each change it rebuilds the
same rows (the Queue's collapsed rows, cells from ``yanflow_tui.screens.render.rows``) with ``clear()`` + ``add_rows``;
for Nodes, a ``DataTable`` of the node rows. Ratios are YanFlow / baseline: below 1 is faster. The goals
are issue #17's for the scale of the run (10,000 jobs, or 100,000); a DataTable part estimated (from its
first screen) to take longer than ``--baseline-budget`` seconds is left out, and the table says so.

Each part runs in its own process (``--phase``) so that its peak RSS is its own. Everything that
looks inside a screen's widgets is in the ADAPTERS section below: when a screen changes, fix it
there. Not part of the test suite. Timings are wall clock on whatever else the machine is doing;
CPU seconds of this process are printed beside the main ones.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# =====================================================================================================
# ADAPTERS: the only code that knows how the screens are built. Each returns None (or 0) while the
# screen is not there yet; callers treat that as "not yet". Written against the DataTable Queue and
# Nodes screens and the Log-based Logs screen; adjust these when the screens change.
# =====================================================================================================
QUEUE_TABLE_ID = "#jobs"  # the widget that shows the jobs (any widget: it is only waited on to paint)
NODES_TABLE_ID = "#nodes"  # the widget that shows the nodes
LOG_PANE_ID = "#log"  # the Log widget of a Logs screen without panes (before LogPane)
FILTER_KEY = "slash"  # opens the Queue filter box; the typed characters go into a focused Input
CLEAR_FILTER_KEY = "escape"  # clears the Queue filter
LOGS_PAUSE_KEY = "p"  # toggles follow/pause on the Logs screen (the key probed while streaming)
SORT_KEY = "o"  # sorts the Queue by the next column
REVERSE_SORT_KEY = "O"  # flips the Queue's sort
GROUP_KEY = "e"  # expands or collapses the group row under the cursor


def _on(app, mode: str, selector: str):
    """The widget ``selector`` of the current screen when the app is in ``mode``, else None."""
    from textual.css.query import NoMatches

    try:
        if app.current_mode != mode:
            return None
        return app.screen.query_one(selector)
    except (NoMatches, Exception):
        return None


def queue_widget(app):
    return _on(app, "queue", QUEUE_TABLE_ID)


def queue_row_count(app) -> int:
    """How many rows the Queue shows (all of them, not just the ones in the viewport)."""
    table = queue_widget(app)
    return table.row_count if table is not None else 0


def queue_row_text(app, key: str) -> str | None:
    """The plain text of the Queue row for job ``cluster/id``; None if it has no row."""
    return _row_text(queue_widget(app), key)


def _row_text(table, key: str) -> str | None:
    """A row's cells as plain text: a ``DataTable`` (``get_row`` -> cells), a ``vtable.VirtualTable``
    (``get_row`` -> ``Row`` whose cells may be callables), a ``gpugrid.GpuGrid`` (``row_text``)."""
    if table is None:
        return None
    try:
        if hasattr(table, "row_text"):
            return table.row_text(key)
        row = table.get_row(key)
        cells = getattr(row, "cells", row)
        return None if cells is None else " ".join(_plain(cell) for cell in cells)
    except Exception:
        return None


def _plain(cell) -> str:
    """A cell as text: ``str``, ``rich.text.Text`` / ``Content`` (``.plain``), or a live cell (a callable)."""
    if callable(cell):
        cell = cell()
    return cell if isinstance(cell, str) else getattr(cell, "plain", str(cell))


def queue_cursor(app) -> int | None:
    """The row index of the Queue's cursor."""
    table = queue_widget(app)
    return table.cursor_row if table is not None else None


def queue_sort(app) -> tuple | None:
    """The Queue's sort: (column, reversed); None while it is not on screen."""
    table = queue_widget(app)
    return None if table is None else (table.sort_column, table.sort_reverse)


def queue_unsort(app) -> None:
    """Back to the default order (untimed, between two parts)."""
    queue_widget(app).sort_by(None)


def queue_put_cursor(app, key: str) -> None:
    """The Queue's cursor on row ``key`` (untimed: the group-toggle keys are timed from there)."""
    queue_widget(app).move_cursor_to_key(key)


def nodes_widget(app):
    return _on(app, "nodes", NODES_TABLE_ID)


def nodes_row_count(app) -> int:
    """How many nodes the Nodes screen shows (a grid's group header lines not counted)."""
    grid = nodes_widget(app)
    if grid is None:
        return 0
    return grid.node_count if hasattr(grid, "node_count") else grid.row_count


def nodes_row_text(app, key: str) -> str | None:
    """The plain text of the Nodes screen's line for node ``cluster/name``."""
    return _row_text(nodes_widget(app), key)


def _log_pane(app):
    """The Logs screen's pane on show (``LogsScreen.pane``, a ``LogPane``); None before one opens."""
    return getattr(app.screen, "pane", None) if app.current_mode == "logs" else None


def logs_widget(app):
    """The widget the log lines are drawn in: the pane's active ``LogView`` (or the old single Log)."""
    pane = _log_pane(app)
    if pane is not None:
        return pane.active_view
    return _on(app, "logs", LOG_PANE_ID)


def log_pane_lines(app) -> int:
    """How many lines have been flushed into the pane so far (``LogPane.line_count``: lines received,
    spilled ones included; the old single ``Log``: its line count)."""
    pane = _log_pane(app)
    if pane is not None:
        return pane.line_count
    widget = _on(app, "logs", LOG_PANE_ID)
    return widget.line_count if widget is not None else 0


def logs_following(app) -> bool | None:
    """Whether the Logs screen follows the tail (``LOGS_PAUSE_KEY`` flips it)."""
    return getattr(app.screen, "following", None) if app.current_mode == "logs" else None


def job_matcher(needle: str) -> Callable[[object], bool]:
    """The Queue filter's predicate over a ``Job`` (``yanflow_tui.filters`` where it exists, else the
    old substring match over the shown fields). Every prefix of ``--filter`` must be a valid filter."""
    try:
        from yanflow_tui.filters import compile_filter
    except ImportError:
        low = needle.lower()
        return lambda j: (
            not low
            or any(
                low in f.lower() for f in (j.cluster, j.id, j.name, j.user, j.state.value, j.reason, " ".join(j.nodes))
            )
        )
    return compile_filter(needle).matches


def queue_rows_expected(
    jobs, needle: str = "", expanded: frozenset[str] = frozenset()
) -> list[tuple[object, str, int]]:
    """(job, id marker, child count) of the rows the Queue shows, in order: groups collapsed but
    those in ``expanded`` (row keys); with a filter, the matching jobs plus the groups of matching
    children (opened). The baseline shows exactly these rows, and the keys wait for this many rows."""
    from yanflow_tui.screens.render.rows import GROUP_CHILD, GROUP_CLOSED, GROUP_OPEN, natural_key

    job_matches = job_matcher(needle)
    keys = {j.key for j in jobs}
    kids: dict[str, list] = {}
    top = []
    for job in jobs:
        parent = f"{job.cluster}/{job.parent}" if job.parent else ""
        if parent and parent in keys and parent != job.key:
            kids.setdefault(parent, []).append(job)
        else:
            top.append(job)
    top.sort(key=lambda j: (j.cluster, natural_key(j.id)))
    rows = []
    for job in top:
        children = kids.get(job.key, [])
        shown = [k for k in children if job_matches(k)] if needle else []
        if needle and not job_matches(job) and not shown:
            continue
        if not needle and job.key in expanded:
            shown = children
        if not children:
            rows.append((job, "", 0))
        elif shown:
            rows.append((job, GROUP_OPEN, len(children)))
            rows.extend((k, GROUP_CHILD, 0) for k in sorted(shown, key=lambda k: natural_key(k.id)))
        else:
            rows.append((job, GROUP_CLOSED, len(children)))
    return rows


# =====================================================================================================
# Measuring
# =====================================================================================================
POLL = 0.002  # seconds between two looks at a condition
GOALS = {"refresh": 0.1, "key": 0.05, "log_lines_s": 50_000, "rss_mb": 300}  # issue #6; seconds, lines/s, MB
# issue #17, by scale: (jobs up to, every key p95, refresh data in hand -> painted, peak RSS of the run)
SCALE_GOALS = (
    (10_000, {"key": 0.05, "refresh": 0.1, "run_rss_mb": 150}),
    (None, {"key": 0.1, "refresh": 0.3, "run_rss_mb": 400}),
)


def goals_for(jobs: int) -> dict:
    """GOALS with the key, refresh and RSS goals of issue #17 at this many jobs (10k's up to 10,000
    jobs, 100k's past that)."""
    for limit, goals in SCALE_GOALS:
        if limit is None or jobs <= limit:
            return {**GOALS, **goals}
    raise AssertionError("unreachable")


class BenchTimeout(Exception):
    pass


class Clock:
    """Wall and CPU seconds (this process, all threads) since it was made."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def stop(self) -> dict:
        return {"wall": time.perf_counter() - self.wall, "cpu": time.process_time() - self.cpu}


async def until(
    condition: Callable[[], object], timeout: float, what: str, progress: Callable[[], object] | None = None
):
    """Wait for ``condition()``; give up after ``timeout`` seconds (without a change in ``progress()``,
    when given: a long stream may take as long as it takes while it moves)."""
    deadline = time.perf_counter() + timeout
    last = progress() if progress else None
    while True:
        value = condition()
        if value:
            return value
        if progress is not None:
            now = progress()
            if now != last:
                last, deadline = now, time.perf_counter() + timeout
        if time.perf_counter() > deadline:
            stalled = " (no progress)" if progress else ""
            raise BenchTimeout(f"timed out after {timeout:.0f} s{stalled} waiting for {what}")
        await asyncio.sleep(POLL)


async def painted(widget_or_getter, timeout: float = 60.0) -> None:
    """Wait until the screen has painted once after everything queued for the widget was handled."""
    widget = widget_or_getter() if callable(widget_or_getter) else widget_or_getter
    if widget is None:
        raise BenchTimeout("the widget to wait for is not on screen")
    try:
        await asyncio.wait_for(widget.wait_for_refresh(), timeout)
    except (TimeoutError, asyncio.TimeoutError):
        raise BenchTimeout(f"no repaint of {widget!r} within {timeout:.0f} s") from None


CHARS = {"slash": "/", "escape": "\x1b", "enter": "\r", "space": " "}


def send_key(app, key: str) -> None:
    """Post a key as the terminal driver does (``pilot.press`` also waits for idle, which we time).
    ``key`` is a key name ("down", "slash") or one character ("e", ":")."""
    import unicodedata

    from textual import events

    if len(key) == 1:
        char = key
        if not key.isalnum():  # ":" -> "colon", " " -> "space", as Textual names keys
            key = {" ": "space"}.get(key) or unicodedata.name(key, key).lower().replace(" ", "_").replace("-", "_")
    else:
        char = CHARS.get(key)
    app.post_message(events.Key(key, char).set_sender(app))


async def key_latency(
    app, key: str, reflected: Callable[[], object], widget, timeout: float = 120.0, cpu: list[float] | None = None
) -> float:
    """Seconds from posting ``key`` until ``reflected()`` holds and the screen painted it (the CPU
    seconds of this process meanwhile are appended to ``cpu``: on a shared machine they move less)."""
    start, start_cpu = time.perf_counter(), time.process_time()
    send_key(app, key)
    await until(reflected, timeout, f"key {key!r} to show")
    await painted(widget, timeout)
    if cpu is not None:
        cpu.append(time.process_time() - start_cpu)
    return time.perf_counter() - start


def rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def peak_rss_mb() -> float:
    """This process's peak RSS (``VmHWM``). Not ``ru_maxrss``: after exec it still counts the peak of the
    process that exec'd (a benchmark started by a big parent reads the parent's peak)."""
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmHWM:"))
    except (OSError, StopIteration):  # no /proc (not Linux)
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# =====================================================================================================
# The synthetic clusters
# =====================================================================================================
CLUSTER_NAMES = ("hpc", "kube", "det")


def cluster_configs(args, jobs: int | None = None, nodes: int | None = None, names=None, **extra):
    from yanflow_tui.config import ClusterConfig

    if not names:
        names = CLUSTER_NAMES[: args.clusters] if args.clusters <= 3 else [f"c{i}" for i in range(args.clusters)]
    jobs = args.jobs if jobs is None else jobs
    nodes = args.nodes if nodes is None else nodes
    out = []
    for i, name in enumerate(names):
        share = lambda total, i=i: total // len(names) + (1 if i < total % len(names) else 0)  # noqa: E731
        out.append(
            ClusterConfig(
                name,
                "synthetic",
                refresh_seconds=3600.0,
                options={
                    "jobs": share(jobs),
                    "nodes": share(nodes),
                    "gpus_per_node": args.gpus_per_node,
                    "seed": args.seed,
                    **extra,
                },
            )
        )
    return tuple(out)


def make_hub(clusters):
    """A Hub over synthetic clusters (built before the clock starts: generating data is the cluster's
    work, not the console's)."""
    from synthetic import SyntheticBackend

    from yanflow_tui.backends import registry
    from yanflow_tui.config import Config
    from yanflow_tui.hub import Hub

    registry.register("synthetic", SyntheticBackend)
    SyntheticBackend.instances.clear()
    config = Config(clusters=clusters, all_users=True)
    hub = Hub(config)
    return config, hub, [SyntheticBackend.instances[c.name] for c in clusters]


def all_jobs(backends):
    return [j for b in backends for j in b.jobs.values()]


def all_nodes(backends):
    return [n for b in backends for n in b.nodes.values()]


def churn(backends, fraction: float, gen: int) -> int:
    return sum(b.churn(fraction, gen) for b in backends)


def screen_shows(app, text: str) -> bool:
    """Whether ``text`` is painted on screen (the SVG export, stripped): untimed verification."""
    import html
    import re

    svg = app.export_screenshot()
    return text in html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")


def p95(ordered: list[float]) -> float:
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def summary(samples: list[float], cpu: list[float] | None = None) -> dict:
    if not samples:
        return {}
    ordered = sorted(samples)
    out = {
        "n": len(samples),
        "median": statistics.median(ordered),
        "p95": p95(ordered),
        "max": ordered[-1],
        "min": ordered[0],
    }
    if cpu:
        out.update(cpu_median=statistics.median(cpu), cpu_p95=p95(sorted(cpu)))
    return out


# =====================================================================================================
# Phase: YanFlow
# =====================================================================================================
async def phase_yanflow(args, out: dict) -> None:
    from yanflow_tui.app import COALESCE_SECONDS, YanflowApp

    config, hub, backends = make_hub(cluster_configs(args, log_lines=args.log_lines))
    out.update(coalesce_s=COALESCE_SECONDS, jobs=len(all_jobs(backends)), nodes=len(all_nodes(backends)))
    expected = len(queue_rows_expected(all_jobs(backends)))
    out["queue_rows"] = expected
    clock = Clock()
    app = YanflowApp(config, hub)
    async with app.run_test(size=args.size) as pilot:
        # -- first screen
        await until(lambda: queue_row_count(app) == expected, args.timeout, f"the Queue to show {expected} rows")
        await painted(lambda: queue_widget(app))
        out["first_screen"] = clock.stop()
        top = min(backends, key=lambda b: b.name)  # the Queue's first cluster
        out["first_screen_on_screen"] = screen_shows(app, top.first_top_level())
        await pilot.pause(0.3)  # let deferred work (column widths) settle before timing keys

        # -- cursor
        samples, cpu = [], []
        for _ in range(args.keys):
            before = queue_cursor(app)
            samples.append(
                await key_latency(
                    app,
                    "down",
                    lambda before=before: queue_cursor(app) == before + 1,
                    lambda: queue_widget(app),
                    cpu=cpu,
                )
            )
        out["cursor"] = summary(samples, cpu)

        # -- refresh on the Queue
        gen = 0
        out["refresh_queue"] = []
        for _ in range(args.refreshes):
            gen += 1
            out["churned"] = churn(backends, args.churn, gen)
            out["refresh_queue"].append(await refresh_queue(app, backends, gen, args))
        out["refresh_queue_on_screen"] = screen_shows(app, f"churn {gen}")

        # -- filter typed, then cleared
        from textual.widgets import Input

        typed = ""
        box = lambda: app.focused if isinstance(app.focused, Input) else None  # noqa: E731
        out["filter_open"] = await key_latency(app, FILTER_KEY, box, lambda: queue_widget(app))
        samples, cpu, counts, want = [], [], [], 0
        for char in args.filter:
            typed += char
            try:
                want = len(queue_rows_expected(all_jobs(backends), typed))
            except ValueError:  # not a valid filter yet ("state:"): the Queue keeps the last good one
                pass
            counts.append(want)
            samples.append(
                await key_latency(
                    app,
                    char,
                    lambda typed=typed, want=want: (
                        box() is not None and box().value == typed and queue_row_count(app) == want
                    ),
                    lambda: queue_widget(app),
                    timeout=args.timeout,
                    cpu=cpu,
                )
            )
        out["filter"], out["filter_samples"], out["filter_rows"] = summary(samples, cpu), samples, counts
        full = len(queue_rows_expected(all_jobs(backends)))
        cpu = []
        out["filter_clear"] = await key_latency(
            app,
            CLEAR_FILTER_KEY,
            lambda: queue_row_count(app) == full,
            lambda: queue_widget(app),
            timeout=args.timeout,
            cpu=cpu,
        )
        out["filter_clear_cpu"] = cpu[0]
        await pilot.pause(0.2)

        # -- sort keys, then group toggles
        samples, cpu = [], []
        for key in [SORT_KEY] * max(1, args.sorts - 1) + [REVERSE_SORT_KEY]:
            before = queue_sort(app)
            samples.append(
                await key_latency(
                    app,
                    key,
                    lambda before=before: queue_sort(app) != before,
                    lambda: queue_widget(app),
                    timeout=args.timeout,
                    cpu=cpu,
                )
            )
        out["sort"] = summary(samples, cpu)
        queue_unsort(app)
        await pilot.pause(0.2)
        samples, cpu = [], []
        for group, kids in groups_to_toggle(backends, args.toggles):
            queue_put_cursor(app, group)
            await pilot.pause(0.05)
            for want in (full + kids, full):  # opened, then closed again
                samples.append(
                    await key_latency(
                        app,
                        GROUP_KEY,
                        lambda want=want: queue_row_count(app) == want,
                        lambda: queue_widget(app),
                        timeout=args.timeout,
                        cpu=cpu,
                    )
                )
        out["toggle"] = summary(samples, cpu)
        await pilot.pause(0.2)

        # -- the Nodes screen, then refreshes on it
        total_nodes = len(all_nodes(backends))
        out["nodes_first"] = await key_latency(
            app, "2", lambda: nodes_row_count(app) == total_nodes, lambda: nodes_widget(app), timeout=args.timeout
        )
        await pilot.pause(0.2)
        out["refresh_nodes"] = []
        for _ in range(args.refreshes):
            gen += 1
            churn(backends, args.churn, gen)
            out["refresh_nodes"].append(await refresh_nodes(app, backends, gen, args))
        out["refresh_nodes_on_screen"] = screen_shows(app, f"churn {gen}")

        # -- logs: a fast stream into the pane, keys probed meanwhile
        job = next(j for j in backends[0].jobs.values() if j.state.value == "running")
        out["logs"] = await follow_log(app, backends[0], job, args, probe_every=0.1)
        out["rss_mb"] = rss_mb()
    out["peak_rss_mb"] = peak_rss_mb()


def groups_to_toggle(backends, count: int) -> list[tuple[str, int]]:
    """(row key, children) of ``count`` group rows spread over the default order, for ``e``."""
    groups = sorted((f"{b.name}/{parent}", len(kids)) for b in backends for parent, kids in b.children.items() if kids)
    if not groups or count <= 0:
        return []
    step = max(1, len(groups) // count)
    return groups[::step][:count]


async def refresh_queue(app, backends, gen: int, args) -> dict:
    marker = f"churn {gen}"
    keys = [f"{b.name}/{b.marker_job}" for b in backends]
    want = len(queue_rows_expected(all_jobs(backends)))
    clock = Clock()
    app.request_refresh()
    await until(lambda: all(b.served_gen == gen for b in backends), args.timeout, "the backends to be asked")
    await until(
        lambda: queue_row_count(app) == want and all(marker in (queue_row_text(app, k) or "") for k in keys),
        args.timeout,
        "the Queue to show the changes",
    )
    await painted(lambda: queue_widget(app))
    result = clock.stop()
    result["ui"] = time.perf_counter() - max(b.served_at for b in backends)
    return result


async def refresh_nodes(app, backends, gen: int, args) -> dict:
    marker = f"churn {gen}"
    keys = [f"{b.name}/{b.marker_node}" for b in backends]
    clock = Clock()
    app.request_refresh()
    await until(lambda: all(b.served_gen == gen for b in backends), args.timeout, "the backends to be asked")
    await until(
        lambda: all(marker in (nodes_row_text(app, k) or "") for k in keys),
        args.timeout,
        "the Nodes screen to show the changes",
    )
    await painted(lambda: nodes_widget(app))
    result = clock.stop()
    result["ui"] = time.perf_counter() - max(b.served_at for b in backends)
    return result


async def follow_log(app, backend, job, args, probe_every: float, rss_cap_mb: float | None = None) -> dict:
    """Open ``job``'s log, stream it until every line is in the pane; meanwhile press the pause key
    every ``probe_every`` seconds and time it, and watch RSS (stopping the stream past the cap)."""
    backend.stop_logs = False
    out: dict = {"rss_before_mb": rss_mb()}
    done = asyncio.Event()
    keys: list[float] = []
    keys_cpu: list[float] = []  # this process's CPU seconds over each key (less moved by a busy machine)
    peak = [out["rss_before_mb"]]
    samples: list[tuple[int, float]] = []  # (bytes streamed, RSS MB), every 0.2 s

    async def probe() -> None:
        try:
            await until(lambda: log_pane_lines(app) > 0, args.timeout, "the first log lines")
            while not done.is_set():
                before = logs_following(app)
                keys.append(
                    await key_latency(
                        app,
                        LOGS_PAUSE_KEY,
                        lambda before=before: logs_following(app) is (not before),
                        lambda: logs_widget(app),
                        cpu=keys_cpu,
                    )
                )
                await asyncio.sleep(probe_every)
        except BenchTimeout as exc:
            out["keys_error"] = str(exc)

    async def watch_rss() -> None:
        while not done.is_set():
            now = rss_mb()
            peak[0] = max(peak[0], now)
            samples.append((backend.log_stats.bytes, now))
            if rss_cap_mb and peak[0] > rss_cap_mb and not backend.stop_logs:
                backend.stop_logs = True
                out["stopped_at_cap"] = True
            await asyncio.sleep(0.2)

    clock = Clock()
    app.open_logs(job)
    prober, watcher = asyncio.create_task(probe()), asyncio.create_task(watch_rss())
    try:
        stats = await until(
            lambda: backend.log_stats if backend.log_stats.finished else None,
            args.stall_timeout,
            "the log stream to end",
            progress=lambda: (backend.log_stats.lines, log_pane_lines(app)),
        )
        await until(
            lambda: log_pane_lines(app) >= stats.lines,
            args.stall_timeout,
            f"all {stats.lines:,} log lines in the pane",
            progress=lambda: log_pane_lines(app),
        )
        await painted(lambda: logs_widget(app))
        out.update(clock.stop())
        stream_wall = time.perf_counter() - stats.started
    finally:
        done.set()
        prober.cancel()  # a key being timed now is dropped
        watcher.cancel()
        await asyncio.gather(prober, watcher, return_exceptions=True)
    out.update(
        lines=stats.lines,
        bytes=stats.bytes,
        stream_wall=stream_wall,
        lines_per_s=stats.lines / stream_wall,
        produced_wall=stats.finished - stats.started,
        keys=summary(keys, keys_cpu[: len(keys)]),
        rss_peak_sampled_mb=peak[0],
        rss_end_mb=rss_mb(),
        pane_lines=log_pane_lines(app),
    )
    half = next(((b, r) for b, r in samples if b >= stats.bytes / 2), None)
    if half is not None and stats.bytes > half[0]:  # RSS growth over the second half, in MB per GB
        out["rss_mb_per_gb_late"] = (out["rss_end_mb"] - half[1]) / ((stats.bytes - half[0]) / 1e9)
    if logs_following(app) is False:
        send_key(app, LOGS_PAUSE_KEY)
    return out


# =====================================================================================================
# Phase: the big log
# =====================================================================================================
async def phase_biglog(args, out: dict) -> None:
    from yanflow_tui.app import YanflowApp

    config, hub, backends = make_hub(
        cluster_configs(args, jobs=60, nodes=8, names=("logs",), log_bytes=int(args.log_gb * 1e9))
    )
    app = YanflowApp(config, hub)
    async with app.run_test(size=args.size) as pilot:
        expected = len(queue_rows_expected(all_jobs(backends)))
        await until(lambda: queue_row_count(app) == expected, args.timeout, "the Queue")
        await pilot.pause(0.2)
        job = next(j for j in backends[0].jobs.values() if j.state.value == "running")
        out["gb_asked"] = args.log_gb
        out.update(await follow_log(app, backends[0], job, args, probe_every=0.25, rss_cap_mb=args.rss_cap_mb))
    out["peak_rss_mb"] = peak_rss_mb()


# =====================================================================================================
# Phase: the DataTable baseline
# =====================================================================================================
def baseline_app_class():
    from textual import on
    from textual.app import App, ComposeResult
    from textual.binding import Binding
    from textual.widgets import DataTable, Input

    class BaselineApp(App[None]):
        """One DataTable, rebuilt from scratch (``clear()`` + ``add_rows``) on every change; ``o``/``O``
        sort it with ``DataTable.sort``; ``e`` opens or closes the group under the cursor (a rebuild)."""

        BINDINGS = [
            Binding("slash", "filter", "Filter"),
            Binding("escape", "clear_filter", "Clear"),
            Binding(SORT_KEY, "sort_next", "Sort"),
            Binding(REVERSE_SORT_KEY, "sort_reverse", "Reverse sort"),
            Binding(GROUP_KEY, "toggle_group", "Expand"),
        ]

        def __init__(self, headers, build: Callable[[str, frozenset[str]], list[tuple[str, tuple]]]) -> None:
            super().__init__()
            self.headers, self.build, self.needle = headers, build, ""
            self.expanded: frozenset[str] = frozenset()
            self.row_keys: list[str] = []  # the job key of each row, in the built order
            self.sorted: tuple[int, bool] | None = None  # (column index, reversed)

        def compose(self) -> ComposeResult:
            yield Input(id="filter")
            yield DataTable(id="table", cursor_type="row", zebra_stripes=True)

        def on_mount(self) -> None:
            self.query_one("#filter").display = False
            table = self.query_one(DataTable)
            self.columns = table.add_columns(*self.headers)
            self.rebuild()
            table.focus()

        def rebuild(self) -> None:
            table = self.query_one(DataTable)
            table.clear()
            built = self.build(self.needle, self.expanded)
            self.row_keys = [key for key, _ in built]
            table.add_rows([cells for _, cells in built])
            self.sorted = None

        def action_filter(self) -> None:
            box = self.query_one("#filter", Input)
            box.display = True
            box.focus()

        def action_clear_filter(self) -> None:
            box = self.query_one("#filter", Input)
            box.value, box.display, self.needle = "", False, ""
            self.rebuild()
            self.query_one(DataTable).focus()

        def _sort(self, index: int, reverse: bool) -> None:
            self.query_one(DataTable).sort(self.columns[index], reverse=reverse)
            self.sorted = (index, reverse)

        def action_sort_next(self) -> None:
            index, reverse = self.sorted or (-1, False)
            self._sort((index + 1) % len(self.columns), reverse)

        def action_sort_reverse(self) -> None:
            index, reverse = self.sorted or (0, False)
            self._sort(index, not reverse)

        def action_toggle_group(self) -> None:
            row = self.query_one(DataTable).cursor_row
            key = self.row_keys[row] if 0 <= row < len(self.row_keys) else None
            if key is not None:
                self.expanded = self.expanded ^ {key}
                self.rebuild()

        @on(Input.Changed, "#filter")
        def _changed(self, event: Input.Changed) -> None:
            self.needle = event.value.strip()
            self.rebuild()

    return BaselineApp


def baseline_cells(job, now: float, marker: str, count: int) -> tuple:
    """The Queue's cells for a DataTable: the same renderer, the live age evaluated once."""
    from yanflow_tui.screens.render.rows import job_live_cells

    return tuple(c() if callable(c) else c for c in job_live_cells(job, lambda: now, marker, count))


NODE_HEADERS = ("NAME", "STATE", "PARTITIONS", "CPUS", "MEMORY", "GPU", "NOTE")  # gpu_cells.node_fields


async def phase_baseline(args, out: dict) -> None:
    from textual.widgets import DataTable, Input

    from yanflow_tui.screens.render.gpu_cells import node_fields
    from yanflow_tui.screens.render.rows import JOB_HEADERS

    BaselineApp = baseline_app_class()
    _, _, backends = make_hub(cluster_configs(args))
    now = time.time()
    skipped: dict[str, float] = {}  # part -> the seconds it would take (past --baseline-budget)
    out["skipped"] = skipped
    last_good = [""]

    def job_rows(needle: str, expanded: frozenset[str] = frozenset()) -> list:
        try:
            shown = queue_rows_expected(all_jobs(backends), needle, expanded)
            last_good[0] = needle
        except ValueError:  # not a valid filter yet: keep the last good one, as the Queue does
            shown = queue_rows_expected(all_jobs(backends), last_good[0], expanded)
        return [(job.key, baseline_cells(job, now, marker, count)) for job, marker, count in shown]

    def node_rows(_needle: str, _expanded: frozenset[str] = frozenset()) -> list:
        nodes = sorted(all_nodes(backends), key=lambda n: (n.cluster, n.name))
        return [(f"{n.cluster}/{n.name}", node_fields(n)) for n in nodes]

    def affordable(part: str, rebuilds: int) -> bool:
        """Whether ``rebuilds`` rebuilds (each as long as the first screen took) fit the budget."""
        estimate = rebuilds * out["first_screen"]["wall"]
        if estimate > args.baseline_budget:
            skipped[part] = estimate
            return False
        return True

    expected = len(queue_rows_expected(all_jobs(backends)))
    clock = Clock()
    app = BaselineApp(JOB_HEADERS, job_rows)
    async with app.run_test(size=args.size) as pilot:
        table = app.query_one(DataTable)
        await until(lambda: table.row_count == expected, args.timeout, "the baseline rows")
        await painted(table)
        out["first_screen"] = clock.stop()
        await pilot.pause(0.3)
        samples, cpu = [], []
        for _ in range(args.keys):
            before = table.cursor_row
            samples.append(
                await key_latency(app, "down", lambda before=before: table.cursor_row == before + 1, table, cpu=cpu)
            )
        out["cursor"] = summary(samples, cpu)
        gen, out["refresh_queue"] = 0, []
        if affordable("refresh_queue", args.refreshes):
            for _ in range(args.refreshes):
                gen += 1
                churn(backends, args.churn, gen)
                want = len(queue_rows_expected(all_jobs(backends)))
                clock = Clock()
                app.rebuild()
                await until(lambda want=want: table.row_count == want, args.timeout, "the baseline refresh")
                await painted(table)
                out["refresh_queue"].append(clock.stop())
        box = app.query_one("#filter", Input)
        full = len(queue_rows_expected(all_jobs(backends)))
        if affordable("filter", len(args.filter) + 1):
            out["filter_open"] = await key_latency(app, "slash", lambda: app.focused is box, table)
            typed, samples, cpu, want = "", [], [], 0
            for char in args.filter:
                typed += char
                try:
                    want = len(queue_rows_expected(all_jobs(backends), typed))
                except ValueError:
                    pass
                samples.append(
                    await key_latency(
                        app,
                        char,
                        lambda typed=typed, want=want: box.value == typed and table.row_count == want,
                        table,
                        timeout=args.timeout,
                        cpu=cpu,
                    )
                )
            out["filter"], out["filter_samples"] = summary(samples, cpu), samples
            cpu = []
            out["filter_clear"] = await key_latency(
                app, "escape", lambda: table.row_count == full and not box.value, table, timeout=args.timeout, cpu=cpu
            )
            out["filter_clear_cpu"] = cpu[0]
        samples, cpu = [], []
        for key in [SORT_KEY] * max(1, args.sorts - 1) + [REVERSE_SORT_KEY]:
            before = app.sorted
            samples.append(
                await key_latency(
                    app, key, lambda before=before: app.sorted != before, table, timeout=args.timeout, cpu=cpu
                )
            )
        out["sort"] = summary(samples, cpu)
        toggles = groups_to_toggle(backends, args.toggles)
        if toggles and affordable("toggle", 2 * len(toggles) + 1):
            app.rebuild()  # the default order again (untimed)
            await until(lambda: app.sorted is None and table.row_count == full, args.timeout, "the baseline unsorted")
            samples, cpu = [], []
            for group, kids in toggles:
                table.move_cursor(row=app.row_keys.index(group), animate=False)
                await pilot.pause(0.05)
                for want in (full + kids, full):
                    samples.append(
                        await key_latency(
                            app,
                            GROUP_KEY,
                            lambda want=want: table.row_count == want,
                            table,
                            timeout=args.timeout,
                            cpu=cpu,
                        )
                    )
                    if want == full + kids:  # the rebuild put the cursor back at the top: to the group again
                        table.move_cursor(row=app.row_keys.index(group), animate=False)
                        await pilot.pause(0.05)
            out["toggle"] = summary(samples, cpu)

    total_nodes = len(all_nodes(backends))
    if affordable("nodes", args.refreshes + 1):
        clock = Clock()
        app = BaselineApp(NODE_HEADERS, node_rows)
        async with app.run_test(size=args.size) as pilot:
            table = app.query_one(DataTable)
            await until(lambda: table.row_count == total_nodes, args.timeout, "the baseline node rows")
            await painted(table)
            out["nodes_first"] = clock.stop()["wall"]
            await pilot.pause(0.2)
            out["refresh_nodes"] = []
            for _ in range(args.refreshes):
                gen += 1
                churn(backends, args.churn, gen)
                clock = Clock()
                app.rebuild()
                marker = f"churn {gen}"
                await until(
                    lambda marker=marker: table.row_count == total_nodes and marker in _plain(table.get_row_at(0)[-1]),
                    args.timeout,
                    "the baseline node refresh",
                )
                await painted(table)
                out["refresh_nodes"].append(clock.stop())
    out["peak_rss_mb"] = peak_rss_mb()


# =====================================================================================================
# Orchestration and the table
# =====================================================================================================
PHASES = {"baseline": phase_baseline, "yanflow": phase_yanflow, "biglog": phase_biglog}
QUICK = {"jobs": 1000, "nodes": 200, "log_lines": 100_000, "log_gb": 0.02, "refreshes": 2, "keys": 8}
FULL = {"jobs": 10_000, "nodes": 2000, "log_lines": 300_000, "log_gb": 0.2, "refreshes": 3, "keys": 20}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (1,000 jobs, 200 nodes): a smoke run")
    parser.add_argument("--jobs", type=int)
    parser.add_argument("--nodes", type=int)
    parser.add_argument("--clusters", type=int, default=3)
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--churn", type=float, default=0.05, help="fraction of jobs and nodes changed per refresh")
    parser.add_argument("--refreshes", type=int)
    parser.add_argument("--keys", type=int, help="cursor moves timed")
    parser.add_argument("--sorts", type=int, default=4, help="sort keys timed (o, then one O)")
    parser.add_argument("--toggles", type=int, default=3, help="groups opened and closed with e (2 keys each)")
    parser.add_argument(
        "--baseline-budget",
        type=float,
        default=300,
        help="seconds a DataTable part may take (estimated from its first screen); longer parts are left out",
    )
    parser.add_argument("--filter", default="erin", help="text typed into the Queue filter, a key at a time")
    parser.add_argument("--log-lines", type=int, help="lines streamed for the throughput figure")
    parser.add_argument("--log-gb", type=float, help="size of the big log followed (0 skips it)")
    parser.add_argument("--rss-cap-mb", type=float, default=3072, help="stop the big log past this RSS")
    parser.add_argument("--size", default="200x50", help="terminal size")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=300, help="seconds to wait for any one step")
    parser.add_argument(
        "--stall-timeout", type=float, default=60, help="seconds a log stream may go without a new line in the pane"
    )
    parser.add_argument("--only", choices=sorted(PHASES), action="append", help="run only these phases")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    parser.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for key, value in (QUICK if args.quick else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    width, _, height = args.size.partition("x")
    args.size = (int(width), int(height))
    return args


def run_phase(name: str, argv: list[str], home: str) -> dict:
    os.makedirs(f"{home}/tmp", exist_ok=True)  # log spill files land here and go with it, even after a crash
    env = dict(
        os.environ, HOME=home, XDG_CONFIG_HOME=f"{home}/.config", XDG_STATE_HOME=f"{home}/.state", TMPDIR=f"{home}/tmp"
    )
    started = time.perf_counter()
    print(f"  {name} ...", end="", file=sys.stderr, flush=True)
    proc = subprocess.run(
        [sys.executable, __file__, "--phase", name, *argv], env=env, stdout=subprocess.PIPE, text=True
    )
    print(f" {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    return {"error": f"exited {proc.returncode} without a result"}


def ms(seconds) -> str:
    return "-" if seconds is None else f"{seconds * 1000:,.0f} ms" if seconds < 10 else f"{seconds:,.1f} s"


def ratio(ours, theirs) -> str:
    return f"{ours / theirs:.2f}x" if ours is not None and theirs else "-"


def verdict(value, goal, below=True) -> str:
    if value is None:
        return ""
    return "ok" if (value < goal if below else value >= goal) else "MISSED"


def median_of(results: list[dict] | None, key: str):
    values = [r[key] for r in results or () if key in r]
    return statistics.median(values) if values else None


def print_table(args, res: dict) -> None:
    y, b, g = res.get("yanflow", {}), res.get("baseline", {}), res.get("biglog", {})
    goals = goals_for(y.get("jobs", args.jobs))
    rows: list[tuple[str, ...]] = []  # (metric, YanFlow, its CPU, baseline, ratio, goal, status)
    key_goal, refresh_goal = f"< {goals['key'] * 1000:.0f} ms", f"< {goals['refresh'] * 1000:.0f} ms"
    lines_goal, rss_goal = f">= {goals['log_lines_s']:,}", f"< {goals['rss_mb']} MB"
    mb, per_s = (lambda v: f"{v:,.0f} MB"), (lambda v: f"{v:,.0f}")
    skipped = b.get("skipped") or {}

    def add(metric, ours, theirs=None, goal="", status="", fmt=ms, cpu=None, part=None):
        if ours is None and theirs is None:  # that phase did not run (or failed: see the notes)
            return
        if theirs is None and part in skipped:
            base = f"skipped (~{skipped[part] / 60:,.0f} min)"
        else:
            base = "-" if theirs is None else fmt(theirs)
        rows.append(
            (
                metric,
                "-" if ours is None else fmt(ours),
                "" if cpu is None else ms(cpu),
                base,
                ratio(ours, theirs) if theirs is not None else "",
                goal,
                status,
            )
        )

    def key(metric, ours, theirs=None, cpu=None, part=None, goal=True):
        add(
            metric,
            ours,
            theirs,
            key_goal if goal else "",
            verdict(ours, goals["key"]) if goal else "",
            cpu=cpu,
            part=part,
        )

    def part(result: dict, name: str) -> dict:
        return result.get(name) or {}

    def keys(label: str, name: str, extra: str = "") -> None:
        """A key's median (no goal) and p95 (the goal) rows, with the CPU seconds beside them."""
        ours, theirs = part(y, name), part(b, name)
        n = f", {ours['n']} keys" if ours.get("n") else ""
        key(
            f"key: {label}{extra}, median{n}",
            ours.get("median"),
            theirs.get("median"),
            ours.get("cpu_median"),
            name,
            False,
        )
        key(f"key: {label}, p95", ours.get("p95"), theirs.get("p95"), ours.get("cpu_p95"), name)

    add(
        "first screen: Queue painted",
        part(y, "first_screen").get("wall"),
        part(b, "first_screen").get("wall"),
        cpu=part(y, "first_screen").get("cpu"),
    )
    for screen, name in (("Queue", "refresh_queue"), ("Nodes", "refresh_nodes")):
        if screen == "Nodes":
            add("Nodes screen first shown (key 2)", y.get("nodes_first"), b.get("nodes_first"), part="nodes")
        ui = median_of(y.get(name), "ui")
        part_name = "nodes" if screen == "Nodes" else name
        add(
            f"refresh, {screen}: data in hand -> painted",
            ui,
            median_of(b.get(name), "wall"),
            refresh_goal,
            verdict(ui, goals["refresh"]),
            part=part_name,
        )
        add("  request_refresh -> painted (whole)", median_of(y.get(name), "wall"), cpu=median_of(y.get(name), "cpu"))
    keys("cursor down", "cursor")
    key("key: / opens the filter", y.get("filter_open"), b.get("filter_open"), part="filter")
    keys("filter keystroke", "filter", f" {args.filter!r}")
    key("key: filter, worst keystroke", part(y, "filter").get("max"), part(b, "filter").get("max"), part="filter")
    key(
        "key: escape clears the filter",
        y.get("filter_clear"),
        b.get("filter_clear"),
        y.get("filter_clear_cpu"),
        "filter",
    )
    keys("sort (o, O)", "sort")
    keys("group toggle (e)", "toggle")
    logs = part(y, "logs")
    rate = logs.get("lines_per_s")
    add(
        f"log lines/s into the pane ({logs.get('lines', 0):,} lines)",
        rate,
        None,
        lines_goal,
        verdict(rate, goals["log_lines_s"], False),
        fmt=per_s,
    )
    streaming = part(logs, "keys")
    key(
        f"key while streaming, median ({streaming.get('n', 0)} keys)",
        streaming.get("median"),
        cpu=streaming.get("cpu_median"),
        goal=False,
    )
    key("key while streaming, p95", streaming.get("p95"), cpu=streaming.get("cpu_p95"))
    key("key while streaming, max", streaming.get("max"), goal=False)
    run_rss = f"<= {goals['run_rss_mb']} MB"
    add(
        "peak RSS, this run",
        y.get("peak_rss_mb"),
        b.get("peak_rss_mb"),
        run_rss,
        verdict(y.get("peak_rss_mb"), goals["run_rss_mb"] + 1e-9),
        fmt=mb,
    )
    if g.get("bytes"):
        gb, peak, before = g["bytes"] / 1e9, g.get("peak_rss_mb", 0), g.get("rss_before_mb", 0)
        capped = f", stopped at the {args.rss_cap_mb:,.0f} MB cap" if g.get("stopped_at_cap") else ""
        add(
            f"peak RSS following a {gb:.2f} GB log ({g.get('lines', 0):,} lines{capped})",
            peak,
            None,
            f"{rss_goal} at 1 GB",
            verdict(peak, goals["rss_mb"]) if gb >= 0.999 else "",
            fmt=mb,
        )
        rows.append(
            (
                "  RSS before the log / at its end",
                f"{before:,.0f} / {g.get('rss_end_mb', 0):,.0f} MB",
                "",
                "-",
                "",
                "",
                "",
            )
        )
        if gb < 0.999 and "rss_mb_per_gb_late" in g:  # growing as over its second half, at 1 GB
            projected = peak + max(0.0, g["rss_mb_per_gb_late"]) * (1 - gb)
            add(
                "  projected to 1 GB (growth of the second half)",
                projected,
                None,
                rss_goal,
                verdict(projected, goals["rss_mb"]) + " (projected)",
                fmt=mb,
            )
        add(
            "  lines/s into the pane",
            g.get("lines_per_s"),
            None,
            lines_goal,
            verdict(g.get("lines_per_s"), goals["log_lines_s"], False),
            fmt=per_s,
        )
        gk = part(g, "keys")
        rows.append(
            (
                f"  key while streaming, median / max ({gk.get('n', 0)} keys)",
                f"{ms(gk.get('median'))} / {ms(gk.get('max'))}" if gk else "-",
                "",
                "-",
                "",
                key_goal,
                verdict(gk.get("max"), goals["key"]),
            )
        )

    jobs, nodes, queue_rows = y.get("jobs", args.jobs), y.get("nodes", args.nodes), y.get("queue_rows")
    shown = f"{queue_rows:,}" if queue_rows else "?"
    print(
        f"\nYanFlow console at scale: {jobs:,} jobs ({shown} Queue rows, groups collapsed) on {args.clusters} "
        f"clusters, {nodes:,} nodes x {args.gpus_per_node} GPUs, {args.churn:.0%} changed per refresh, "
        f"{args.size[0]}x{args.size[1]} headless"
    )
    print("Wall clock on a shared machine: compare the ratio column more than the absolute figures.\n")
    header = ("metric", "YanFlow", "its CPU", "DataTable", "ratio", "goal", "")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(7)]
    for row in [header, *rows]:
        print(
            f"{row[0]:<{widths[0]}}  {row[1]:>{widths[1]}}  {row[2]:>{widths[2]}}  {row[3]:>{widths[3]}}  "
            f"{row[4]:>{widths[4]}}  {row[5]:<{widths[5]}}  {row[6]}".rstrip()
        )
    notes = [
        f"goals of issue #17 at {'10,000' if goals['key'] == 0.05 else '100,000'} jobs; every key's p95 is held to"
        f" {key_goal}; 'its CPU': this process's CPU seconds for the same span (less moved by a busy machine)"
    ]
    if skipped:
        notes.append(
            "DataTable parts left out, estimated past --baseline-budget "
            f"({args.baseline_budget:,.0f} s) from its first screen: "
            + ", ".join(f"{name} (~{secs:,.0f} s)" for name, secs in skipped.items())
        )
    if y.get("coalesce_s"):
        notes.append(
            f"the whole refresh includes the app's {y['coalesce_s'] * 1000:.0f} ms coalescing wait "
            "(yanflow_tui.app.COALESCE_SECONDS); the goal applies to the UI part"
        )
    if y.get("filter_rows"):
        notes.append(
            f"filter rows per keystroke: {', '.join(f'{n:,}' for n in y['filter_rows'])}"
            f" (keystrokes: {', '.join(ms(s) for s in y.get('filter_samples', []))})"
        )
    checks = {k: y.get(k) for k in ("first_screen_on_screen", "refresh_queue_on_screen", "refresh_nodes_on_screen")}
    if any(v is False for v in checks.values()):
        notes.append("not seen in the screen export: " + ", ".join(k for k, v in checks.items() if v is False))
    for name, result in res.items():
        if "error" in result:
            notes.append(f"{name} phase failed: {result['error']}")
        for logs in (result, result.get("logs") or {}):
            if "keys_error" in logs:
                notes.append(f"{name}: keys while streaming: {logs['keys_error']}")
    for note in notes:
        print(f"  - {note}")


def main() -> int:
    args = parse_args()
    if args.phase:  # one part, in this process: the figures go to stdout as one JSON line
        result: dict = {}
        try:
            asyncio.run(PHASES[args.phase](args, result))
        except Exception as exc:
            import traceback

            traceback.print_exc()
            result["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0]
        print("RESULT " + json.dumps(result))
        return 0
    argv, skip = [], False  # passed on to the phases, less the orchestration-only options
    for arg in sys.argv[1:]:
        if skip or arg in ("--json", "--only"):
            skip = not skip
            continue
        if not arg.startswith(("--json=", "--only=")):
            argv.append(arg)
    phases = args.only or (["baseline", "yanflow"] + (["biglog"] if args.log_gb else []))
    results = {}
    with tempfile.TemporaryDirectory(prefix="yanflow-console-bench-") as home:
        print(f"running {', '.join(phases)} (each in its own process):", file=sys.stderr)
        for name in phases:
            results[name] = run_phase(name, argv, home)
    print_table(args, results)
    if args.json:
        args.json.write_text(
            json.dumps(
                {"args": {k: v for k, v in vars(args).items() if k != "json"}, "results": results},
                indent=2,
                default=str,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
