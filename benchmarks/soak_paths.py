"""Benchmark: memory over 500 opens and closes of a job's detail on each backend (issue 28 point 3).

    python benchmarks/soak_paths.py [--paths kubernetes,determined,slurm,local] [--opens 500] [--warmup 30]

One app per backend, headless (``App.run_test``), over the real part the tests use: the Kubernetes API
emulator (its exec answers 403 and its events list 403: the curves' file lookup and describe's events
fail every time), the fake Determined master, the loopback Slurm cluster (``scripts/slurm-cluster``; a
``sleep`` job submitted for it and cancelled after), the local machine (a local ``sleep`` job). One
open: ``enter`` on the job, its reads sent, ``escape``; every tenth also opens the Files view (``f``,
where the job has one) and the Logs screen's panes (``l``), then comes back. RSS (``/proc/self/statm``,
after ``gc.collect()``) is read after ``--warmup`` opens and after the last. Goal: under 10 % growth
after warm-up on each. ``soak.py`` is the long session over the synthetic backend."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from soak import GOAL_GROWTH, settle  # noqa: E402

PATHS = ("kubernetes", "determined", "slurm", "local")


@asynccontextmanager
async def kubernetes(tmp: Path):
    from aiohttp import web
    from fakes.k8s_api import K8sEmulator, make_job, make_pod, status
    from k8shelpers import cluster, write_kubeconfig

    emu = K8sEmulator().start()
    emu.add_node("gpu-a", 8)
    emu.put("jobs", make_job("train", "ml"))
    emu.put("pods", make_pod("train-1", "ml", node="gpu-a", gpus=4, job="train"))
    emu.write_log("ml", "train-1", *[f"step {i}" for i in range(200)])

    async def refused(request, namespace, name, pod):
        return web.json_response(status(403, "Forbidden", "pods/exec is forbidden"), status=403)

    emu.streams.exec = refused  # every exec fails (curves' lookup, files), as for a user denied pods/exec
    emu.forbidden.add("events")  # describe's events fail too
    try:
        yield cluster(write_kubeconfig(tmp / "kubeconfig", emu.url)), "k8s/ml/train"
    finally:
        emu.shutdown()


@asynccontextmanager
async def determined(tmp: Path):
    from dethelpers import PASSWORD, cache_token, cluster, seed
    from fakes.det_master import FakeMaster

    master = FakeMaster(users={"alice": PASSWORD}).start()
    try:
        cache_token(master)
        seed(master)
        yield cluster(master), "det/exp-12"
    finally:
        master.stop()


@asynccontextmanager
async def slurm(tmp: Path):
    from slurmhelpers import slurm as run
    from slurmhelpers import ssh_cluster

    job = run("sbatch", "--parsable", "-J", "soak-detail", "-o", "/dev/null", "--wrap", "sleep 1800").strip()
    try:
        config = ssh_cluster()
        yield config, f"{config.name}/{job.split(';')[0]}"
    finally:
        run("scancel", job.split(";")[0], check=False)


@asynccontextmanager
async def local(tmp: Path):
    from yanflow_tui.config import ClusterConfig

    yield ClusterConfig("local", "local", refresh_seconds=2), None


SETUPS = {"kubernetes": kubernetes, "determined": determined, "slurm": slurm, "local": local}


async def open_close(pilot, app, row: str, extras: bool) -> None:
    from waiting import wait_for

    from yanflow_tui.screens.detail import JobDetailScreen
    from yanflow_tui.screens.queue import JobTable, QueueScreen

    if app.current_mode != "queue" or not isinstance(app.screen, QueueScreen):
        await app.switch_mode("queue")
    app.screen.query_one(JobTable).move_cursor_to_key(row)
    await pilot.press("enter")
    detail = await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen, what="detail")
    await pilot.pause(0.2)  # its reads sent (and failed, where they fail)
    if extras and detail.check_action("files", ()):
        await pilot.press("f")
        await wait_for(pilot, lambda: app.screen is not detail, what="the Files view")
        await pilot.pause(0.2)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is detail, what="the detail again")
    if extras and detail.check_action("logs", ()):
        await pilot.press("l")  # the Logs screen, a pane per stream of the job
        await pilot.pause(0.3)
        await app.switch_mode("queue")
        return
    await pilot.press("escape")
    await wait_for(pilot, lambda: isinstance(app.screen, QueueScreen), what="the Queue")


async def soak_path(kind: str, opens: int, warmup: int) -> dict:
    from uihelpers import make_app
    from waiting import wait_for

    from yanflow_tui.screens.queue import JobTable

    with tempfile.TemporaryDirectory(prefix=f"soak-{kind}-") as tmp_text:
        tmp = Path(tmp_text)
        home = tmp / "home"
        home.mkdir()
        os.environ.update(
            HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_STATE_HOME=str(home / ".local/state")
        )
        os.environ["YANFLOW_DISCOVER"] = "local"
        async with AsyncExitStack() as stack:
            config, row = await stack.enter_async_context(SETUPS[kind](tmp))
            app = make_app(replace(config, refresh_seconds=2))
            started = time.perf_counter()
            async with app.run_test(size=(200, 50)) as pilot:
                if row is None:  # local: a job of its own
                    from yanflow_tui.spec import load_spec

                    spec = load_spec(HERE.parent / "sample_jobs" / "local-shell.yaml")
                    job_id = await app.hub.backend(config.name).submit(replace(spec, name="soak", command="sleep 1800"))
                    row = f"{config.name}/{job_id}"
                    app.request_refresh()
                await wait_for(pilot, lambda: row in app.screen.query_one(JobTable).row_keys, what=row, timeout=120)
                out: dict = {"path": kind, "opens": opens, "warmup": warmup}
                for i in range(warmup):
                    await open_close(pilot, app, row, i % 10 == 9)
                out["rss_start_mb"] = round(settle(), 1)
                for i in range(opens):
                    await open_close(pilot, app, row, i % 10 == 9)
                    if (i + 1) % 100 == 0:
                        print(f"  {kind} open {i + 1}: RSS {settle():.1f} MB", file=sys.stderr, flush=True)
                out["rss_end_mb"] = round(settle(), 1)
                if kind == "local":
                    await app.hub.backend(config.name).cancel(row.split("/", 1)[1])
            out["wall_s"] = round(time.perf_counter() - started, 1)
    out["growth"] = (out["rss_end_mb"] - out["rss_start_mb"]) / out["rss_start_mb"]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paths", default=",".join(PATHS))
    parser.add_argument("--opens", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args(argv)
    results, ok = [], True
    for kind in args.paths.split(","):
        # each path in a process of its own: one path's heap does not count in another's
        if os.environ.get("SOAK_PATH_CHILD") != kind:
            child = subprocess.run(
                [sys.executable, __file__, "--paths", kind, "--opens", str(args.opens), "--warmup", str(args.warmup)],
                env=dict(os.environ, SOAK_PATH_CHILD=kind),
                capture_output=False,
                stdout=subprocess.PIPE,
                text=True,
            )
            lines = [line for line in child.stdout.splitlines() if line.startswith("{")]
            if not lines:
                print(f"{kind}: failed (exit {child.returncode})")
                ok = False
                continue
            out = json.loads(lines[-1])
        else:
            print(json.dumps(asyncio.run(soak_path(kind, args.opens, args.warmup))))
            return 0
        results.append(out)
        verdict = "met" if out["growth"] < GOAL_GROWTH else "MISSED"
        ok = ok and out["growth"] < GOAL_GROWTH
        print(
            f"{kind:<11} RSS {out['rss_start_mb']:.1f} MB after {out['warmup']} opens, {out['rss_end_mb']:.1f} MB "
            f"after {out['opens']} more: {out['growth'] * 100:+.1f} % (goal < {GOAL_GROWTH * 100:.0f} %: {verdict}); "
            f"{out['wall_s']} s",
            flush=True,
        )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
