"""``jobs`` and ``nodes``: every configured cluster's (or ``--cluster``'s) jobs or nodes as a table, or
as JSON (``job_json``, ``node_json``; jobs with their efficiency figures where the cluster has them)."""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from yanflow_tui.cli.context import EXIT_ERROR, CliContext, Command
from yanflow_tui.errors import YanflowError

if TYPE_CHECKING:
    from yanflow_tui.cli.parser import Subparsers
    from yanflow_tui.efficiency import Efficiency
    from yanflow_tui.hub import ClusterSnapshot, Hub
    from yanflow_tui.model import Job, Node

log = logging.getLogger(__name__)


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    for name, text in (("jobs", "list jobs"), ("nodes", "list nodes and their GPUs")):
        p = sub.add_parser(name, parents=[common], help=text, description=text)
        p.add_argument("--cluster", metavar="NAME", help="only this cluster")
        p.add_argument("--json", action="store_true", help="print JSON")


async def jobs(ctx: CliContext) -> int:
    return await _list(ctx, "jobs")


async def nodes(ctx: CliContext) -> int:
    return await _list(ctx, "nodes")


async def _list(ctx: CliContext, what: str) -> int:
    import asyncio

    args = ctx.args
    async with ctx.hub() as hub:
        names = [args.cluster] if args.cluster else hub.names
        snaps = await asyncio.gather(*(hub.refresh(n, jobs=what == "jobs", nodes=what == "nodes") for n in names))
        return await _print_list(ctx, hub, what, snaps)


async def _print_list(ctx: CliContext, hub: Hub, what: str, snaps: Sequence[ClusterSnapshot]) -> int:
    from yanflow_tui.hub import Health

    failed = [s for s in snaps if s.health is not Health.OK]
    for snap in failed:
        ctx.error(f"cluster {snap.name!r}: {snap.message}")
    table: list[tuple[object, ...]]
    if what == "jobs":
        jobs = [job for s in snaps if s.health is Health.OK for job in s.jobs]
        data = [job_json(j) for j in jobs]
        if ctx.args.json:
            figures = await _efficiencies(hub, jobs)
            for item in data:
                eff = figures.get((item["cluster"], item["id"]))
                item["efficiency"] = eff.as_json() if eff is not None else None
        table = [
            (j.cluster, j.id, j.name, j.user, j.state.value, str(j.gpus), ",".join(j.nodes) or "-", j.reason)
            for j in jobs
        ]
        header = ("CLUSTER", "ID", "NAME", "USER", "STATE", "GPUS", "NODES", "REASON")
    else:
        nodes = [node for s in snaps if s.health is Health.OK for node in s.nodes]
        data = [node_json(n) for n in nodes]
        table = [
            (
                n.cluster,
                n.name,
                n.state,
                f"{n.gpus_allocated}/{n.gpus_total}",
                n.gpu_type or "-",
                f"{n.cpus_allocated}/{n.cpus_total}",
                f"{n.memory_mb // 1024}G",
                n.reason,
            )
            for n in nodes
        ]
        header = ("CLUSTER", "NODE", "STATE", "GPUS", "GPU TYPE", "CPUS", "MEMORY", "NOTE")
    if ctx.args.json:
        print(json.dumps(data, indent=2), file=ctx.out)
    else:
        ctx.print_table(header, table)
    return EXIT_ERROR if failed else 0


async def _efficiencies(hub: Hub, jobs: Iterable[Job]) -> dict[tuple[str, str], Efficiency]:
    """(cluster, job id) -> seff's figures, for started jobs on clusters that have them; a cluster
    that cannot say (no accounting, a timeout) leaves its jobs at null."""
    import asyncio  # loaded by now (this runs on the loop); imported here to keep the plain start light

    out: dict[tuple[str, str], Efficiency] = {}
    by_cluster: dict[str, list[str]] = {}
    for job in jobs:
        if job.start_time is not None or job.state.terminal:
            by_cluster.setdefault(job.cluster, []).append(job.id)
    for name, ids in by_cluster.items():
        backend = hub.backend(name)
        if not backend.capabilities.efficiency:
            continue
        try:
            found = await hub.call(backend.efficiency(ids))
        except (YanflowError, TimeoutError, asyncio.TimeoutError) as exc:
            log.info("efficiency on %s: %s", name, exc)
            continue
        out.update({(name, job_id): eff for job_id, eff in found.items()})
    return out


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def job_json(job: Job) -> dict[str, Any]:
    return {
        "id": job.id,
        "cluster": job.cluster,
        "name": job.name,
        "user": job.user,
        "state": job.state.value,
        "raw_state": job.raw_state,
        "reason": job.reason,
        "kind": job.kind.value,
        "nodes": list(job.nodes),
        "gpus": job.gpus,
        "gpu_indices": list(job.gpu_indices),
        "exit_code": job.exit_code,
        "submit_time": _iso(job.submit_time),
        "start_time": _iso(job.start_time),
        "end_time": _iso(job.end_time),
    }


def node_json(node: Node) -> dict[str, Any]:
    return {
        "name": node.name,
        "cluster": node.cluster,
        "state": node.state,
        "partitions": list(node.partitions),
        "gpus_total": node.gpus_total,
        "gpus_used": node.gpus_allocated,
        "gpu_type": node.gpu_type,
        "cpus_total": node.cpus_total,
        "cpus_used": node.cpus_allocated,
        "memory_mb": node.memory_mb,
        "reason": node.reason,
        "gpus": [
            {
                "index": g.index,
                "state": g.state.value,
                "job": g.job_id,
                "utilization": g.utilization,
                "memory_used_mb": g.memory_used_mb,
                "memory_total_mb": g.memory_total_mb,
                "reason": g.reason,
            }
            for g in node.gpus
        ],
    }


COMMANDS: dict[str, Command] = {"jobs": jobs, "nodes": nodes}
