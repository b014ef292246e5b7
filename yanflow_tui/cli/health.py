"""``health [JOB]``: the live efficiency of running jobs (``yanflow_tui.jobhealth``): per allocated GPU
its utilisation and memory, the job's CPU and memory, and where each figure came from (or which source
would give it). CPU and memory come from the backend's efficiency figures (Slurm's sstat), else its live
source (``yanflow_tui.liveuse``: /proc, the metrics API...). Reads only: no job step, no exec."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from yanflow_tui.cli.context import EXIT_ERROR, CliContext, Command

if TYPE_CHECKING:
    from yanflow_tui.cli.parser import Subparsers
    from yanflow_tui.hub import Hub
    from yanflow_tui.jobhealth import JobHealth


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    text = "print running jobs' live use of their GPUs, CPUs and memory"
    p = sub.add_parser("health", parents=[common], help=text, description=text)
    p.add_argument("job", metavar="JOB", nargs="?", help="only this job (default: every running job)")
    p.add_argument("--cluster", metavar="NAME", help="only this cluster")
    p.add_argument("--json", action="store_true", help="print JSON")


async def job_healths(hub: Hub, names: list[str], job_id: str | None = None) -> list[JobHealth]:
    """The live figures of the running jobs of ``names`` (or of ``job_id`` alone), refreshed now."""
    import asyncio

    from yanflow_tui import liveuse
    from yanflow_tui.errors import YanflowError
    from yanflow_tui.hub import Health
    from yanflow_tui.jobhealth import gpu_source_of, job_health, running

    out = []
    for snap in await asyncio.gather(*(hub.refresh(n) for n in names)):
        if snap.health is not Health.OK:
            continue
        backend = hub.backend(snap.name)
        jobs = [j for j in snap.jobs if running(j) and (job_id is None or j.id == job_id)]
        usage = {}
        if jobs and backend.capabilities.efficiency:
            try:
                usage = await hub.call(backend.efficiency([j.id for j in jobs]))
            except (YanflowError, TimeoutError, asyncio.TimeoutError):
                usage = {}
        live, cpu_source = await liveuse.read(backend, [j.id for j in jobs if j.id not in usage], hub.timeout)
        gpu_source = gpu_source_of(backend.gpu_use_source, snap.name in hub.metrics)
        out += [job_health(j, snap.nodes, gpu_source, cpu_source, usage.get(j.id), live=live.get(j.id)) for j in jobs]
    return out


async def health(ctx: CliContext) -> int:
    args = ctx.args
    async with ctx.hub() as hub:
        names = [args.cluster] if args.cluster else hub.names
        found = await job_healths(hub, names, args.job)
    if args.json:
        print(json.dumps([h.as_json() for h in found], indent=2), file=ctx.out)
    else:
        for item in found:
            print(f"{item.cluster}/{item.job_id}", file=ctx.out)
            for label, value in item.lines():
                print(f"  {label}: {value}", file=ctx.out)
    if args.job and not found:
        ctx.error(f"no running job {args.job!r}")
        return EXIT_ERROR
    return 0


COMMANDS: dict[str, Command] = {"health": health}
