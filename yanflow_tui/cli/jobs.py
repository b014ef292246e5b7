"""``jobs`` and ``nodes``: every configured cluster's (or ``--cluster``'s) jobs or nodes, chosen by the
filter options (``selection``), as a table, names, YAML or the JSON contract's object (``tables``;
``job_json``, ``node_json``: jobs with their efficiency figures where the cluster has them), once or
on every change (``--watch``: ``watching``)."""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from yanflow_tui.cli import watching
from yanflow_tui.cli.context import EXIT_ERROR, EXIT_PARTIAL, CliContext, Command
from yanflow_tui.cli.selection import partition_of
from yanflow_tui.errors import YanflowError
from yanflow_tui.sanitize import clean

if TYPE_CHECKING:
    from yanflow_tui.cli.parser import Subparsers
    from yanflow_tui.efficiency import Efficiency
    from yanflow_tui.hub import ClusterSnapshot, Hub
    from yanflow_tui.model import Job, Node

log = logging.getLogger(__name__)


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    from yanflow_tui.cli import selection, tables

    p = sub.add_parser("jobs", parents=[common], help="list jobs", description=JOBS_TEXT, epilog=LIST_EXITS)
    selection.add_job_filters(p)
    tables.add_output_options(p, tables.JOB_COLUMNS)
    watching.add_watch_options(p)
    p = sub.add_parser(
        "nodes", parents=[common], help="list nodes and their GPUs", description=NODES_TEXT, epilog=LIST_EXITS
    )
    selection.add_node_filters(p)
    tables.add_output_options(p, tables.NODE_COLUMNS)
    watching.add_watch_options(p)


JOBS_TEXT = (
    "List the jobs of every configured cluster (or --cluster's): every user's, as squeue lists them "
    "(--me or --user for fewer), finished ones while the cluster still lists them."
)
NODES_TEXT = "List the nodes of every configured cluster (or --cluster's) and their GPUs."
LIST_EXITS = (
    "exit status: 0 every cluster answered; 1 none did (or an error); 2 a usage error; 4 a partial answer: "
    "some clusters answered, the others are in the JSON's errors (and on stderr)"
)


async def jobs(ctx: CliContext) -> int:
    return await _list(ctx, "jobs")


async def nodes(ctx: CliContext) -> int:
    return await _list(ctx, "nodes")


async def _list(ctx: CliContext, what: str) -> int:
    import asyncio

    from yanflow_tui.cli.tables import output_format

    args = ctx.args
    listing = Listing(ctx, what)  # the options read (a mistake is a usage error) before any I/O
    async with ctx.hub() as hub:
        names = [args.cluster] if args.cluster else hub.names

        async def answer() -> list[ClusterSnapshot]:
            return list(
                await asyncio.gather(*(hub.refresh(n, jobs=what == "jobs", nodes=what == "nodes") for n in names))
            )

        if args.watch:
            return await watching.watch(ctx, hub, listing, answer)
        snaps = await answer()
        for snap in failed(snaps):
            ctx.error(f"cluster {snap.name!r}: {snap.message}")
        ctx.out.write(await listing.text(hub, snaps, output_format(args)))
        return list_status(snaps)


def failed(snaps: Sequence[ClusterSnapshot]) -> list[ClusterSnapshot]:
    from yanflow_tui.hub import Health

    return [s for s in snaps if s.health is not Health.OK]


def list_status(snaps: Sequence[ClusterSnapshot]) -> int:
    """0: every cluster answered; 1: none did; ``EXIT_PARTIAL``: some did."""
    bad = len(failed(snaps))
    return 0 if not bad else EXIT_ERROR if bad == len(snaps) else EXIT_PARTIAL


class Listing:
    """What ``jobs`` / ``nodes`` print of the clusters' snapshots, by their options."""

    def __init__(self, ctx: CliContext, what: str) -> None:
        from yanflow_tui.cli import selection, tables

        args = ctx.args
        self.what = what
        self.columns = tables.JOB_COLUMNS if what == "jobs" else tables.NODE_COLUMNS
        default, wide = (
            (tables.JOB_DEFAULT, tables.JOB_WIDE) if what == "jobs" else (tables.NODE_DEFAULT, tables.NODE_WIDE)
        )
        self.names = tables.chosen_columns(args, self.columns, default, wide)
        self.sort = args.sort
        tables.sorted_rows([], self.sort, self.columns)  # an unknown column: refused now
        self.ctx = ctx
        self._me: dict[str, str] = {}
        if what == "jobs":
            self.job_test = selection.job_selector(args, self._me.__getitem__)
        else:
            self.node_test = selection.node_selector(args)

    def items(self, hub: Hub, snaps: Sequence[ClusterSnapshot]) -> list[Any]:
        from yanflow_tui.cli.tables import sorted_rows
        from yanflow_tui.hub import Health

        good = [s for s in snaps if s.health is Health.OK]
        if self.what == "jobs":
            self._me.update({s.name: hub.backend(s.name).current_user for s in good})
            chosen: list[Any] = [j for s in good for j in s.jobs if self.job_test(j)]
        else:
            chosen = [n for s in good for n in s.nodes if self.node_test(n)]
        return sorted_rows(chosen, self.sort, self.columns)

    async def document(self, hub: Hub, snaps: Sequence[ClusterSnapshot], items: list[Any]) -> dict[str, Any]:
        """The JSON contract's object: ``{"schema_version", "jobs"|"nodes", "errors"}``."""
        from yanflow_tui.cli import jsonout

        errors = [jsonout.cluster_error(s.name, s.message or s.health.value) for s in failed(snaps)]
        if self.what == "nodes":
            return jsonout.envelope("nodes", [node_json(n) for n in items], errors)
        data = [job_json(j) for j in items]
        figures = await _efficiencies(hub, items)
        for item in data:
            eff = figures.get((item["cluster"], item["id"]))
            item["efficiency"] = eff.as_json() if eff is not None else None
        return jsonout.envelope("jobs", data, errors)

    async def text(self, hub: Hub, snaps: Sequence[ClusterSnapshot], fmt: str, compact: bool = False) -> str:
        """What one answer prints in format ``fmt`` (``compact``: JSON on one line, for ``--watch``)."""
        from yanflow_tui.cli import tables

        items = self.items(hub, snaps)
        if fmt in ("json", "yaml"):
            doc = await self.document(hub, snaps, items)
            if fmt == "yaml":
                import yaml

                return str(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
            return json.dumps(doc, separators=(",", ":")) + "\n" if compact else json.dumps(doc, indent=2) + "\n"
        if fmt == "name":
            return "".join(line + "\n" for line in tables.name_lines(items, self.what))
        header, rows = tables.table_rows(items, self.names, self.columns)
        return table_text(header, rows)


def table_text(header: tuple[str, ...], rows: Sequence[Sequence[str]]) -> str:
    """Rows under ``header``, in columns as wide as their widest cell (as ``CliContext.print_table``)."""
    cells = [tuple(clean(str(c)) for c in row) for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(header)]
    return "".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() + "\n" for row in (header, *cells))


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
    """A job in the JSON contract (``schemas/json/job.json``)."""
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
        "signal": job.signal,
        "partition": partition_of(job) or None,
        "submit_time": _iso(job.submit_time),
        "start_time": _iso(job.start_time),
        "end_time": _iso(job.end_time),
    }


def node_json(node: Node) -> dict[str, Any]:
    """A node in the JSON contract (``schemas/json/nodes.json``)."""
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
