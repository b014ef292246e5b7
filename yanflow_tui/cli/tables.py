"""How ``jobs`` and ``nodes`` print what they selected: the columns each can show (``JOB_COLUMNS``,
``NODE_COLUMNS``; the default set, ``-o wide``'s, or ``--columns``), ``--sort``, and the output
options (``add_output_options``): a table, ``-o name`` (``cluster/id`` a line, as kubectl's), or the
JSON contract's object (``-o json`` / ``--json``, ``-o yaml``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

from yanflow_tui.cli.context import UsageError
from yanflow_tui.cli.selection import partition_of
from yanflow_tui.model import Job

FORMATS = ("table", "wide", "json", "yaml", "name")


def _time(value: datetime | None) -> str:
    return value.astimezone().strftime("%Y-%m-%d %H:%M:%S") if value else "-"


def _elapsed(job: Job) -> str:
    if job.start_time is None:
        return "-"
    seconds = int(((job.end_time or datetime.now(timezone.utc)) - job.start_time).total_seconds())
    days, rest = divmod(max(0, seconds), 86400)
    text = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text


def _exit(job: Job) -> str:
    if job.exit_code is None:
        return "-"
    return f"{job.exit_code}:{job.signal or 0}"


# column name -> (header, cell text, sort value)
Column = tuple[str, Callable[[Any], str], Callable[[Any], Any]]
JOB_COLUMNS: dict[str, Column] = {
    "cluster": ("CLUSTER", lambda j: j.cluster, lambda j: j.cluster),
    "id": ("ID", lambda j: j.id, lambda j: _id_key(j.id)),
    "name": ("NAME", lambda j: j.name, lambda j: j.name),
    "user": ("USER", lambda j: j.user, lambda j: j.user),
    "state": ("STATE", lambda j: j.state.value, lambda j: j.state.value),
    "raw_state": ("RAW STATE", lambda j: j.raw_state or "-", lambda j: j.raw_state),
    "gpus": ("GPUS", lambda j: str(j.gpus), lambda j: j.gpus),
    "nodes": ("NODES", lambda j: ",".join(j.nodes) or "-", lambda j: ",".join(j.nodes)),
    "nnodes": ("NNODES", lambda j: str(len(j.nodes)), lambda j: len(j.nodes)),
    "reason": ("REASON", lambda j: j.reason, lambda j: j.reason),
    "partition": ("PARTITION", lambda j: partition_of(j) or "-", partition_of),
    "kind": ("KIND", lambda j: j.kind.value, lambda j: j.kind.value),
    "submitted": ("SUBMITTED", lambda j: _time(j.submit_time), lambda j: _stamp(j.submit_time)),
    "started": ("STARTED", lambda j: _time(j.start_time), lambda j: _stamp(j.start_time)),
    "ended": ("ENDED", lambda j: _time(j.end_time), lambda j: _stamp(j.end_time)),
    "elapsed": ("ELAPSED", _elapsed, lambda j: _elapsed(j)),
    "exit": ("EXIT", _exit, lambda j: (j.exit_code if j.exit_code is not None else -1, j.signal or 0)),
}
JOB_DEFAULT = ("cluster", "id", "name", "user", "state", "gpus", "nodes", "reason")
JOB_WIDE = ("cluster", "id", "name", "user", "state", "raw_state", "partition", "gpus", "nodes", "submitted",
            "elapsed", "exit", "reason")  # fmt: skip

NODE_COLUMNS: dict[str, Column] = {
    "cluster": ("CLUSTER", lambda n: n.cluster, lambda n: n.cluster),
    "name": ("NODE", lambda n: n.name, lambda n: n.name),
    "state": ("STATE", lambda n: n.state, lambda n: n.state),
    "partitions": ("PARTITIONS", lambda n: ",".join(n.partitions) or "-", lambda n: ",".join(n.partitions)),
    "gpus": ("GPUS", lambda n: f"{n.gpus_allocated}/{n.gpus_total}", lambda n: (n.gpus_allocated, n.gpus_total)),
    "gpus_free": ("FREE GPUS", lambda n: str(n.gpus_free), lambda n: n.gpus_free),
    "gpu_type": ("GPU TYPE", lambda n: n.gpu_type or "-", lambda n: n.gpu_type or ""),
    "cpus": ("CPUS", lambda n: f"{n.cpus_allocated}/{n.cpus_total}", lambda n: (n.cpus_allocated, n.cpus_total)),
    "memory": ("MEMORY", lambda n: f"{n.memory_mb // 1024}G", lambda n: n.memory_mb),
    "reason": ("NOTE", lambda n: n.reason, lambda n: n.reason),
}
NODE_DEFAULT = ("cluster", "name", "state", "gpus", "gpu_type", "cpus", "memory", "reason")
NODE_WIDE = ("cluster", "name", "state", "partitions", "gpus", "gpus_free", "gpu_type", "cpus", "memory", "reason")


def _stamp(value: datetime | None) -> float:
    return value.timestamp() if value else 0.0


def _id_key(job_id: str) -> tuple[Any, ...]:
    """Numeric ids in number order (``9`` before ``10``; ``12_3`` by its parts), others as text."""
    parts = job_id.replace("_", ".").split(".")
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts)


def add_output_options(p: argparse.ArgumentParser, columns: dict[str, Column]) -> None:
    p.add_argument("--json", action="store_true", help="print the JSON contract's object (docs/json.md); = -o json")
    p.add_argument(
        "-o", "--output", choices=FORMATS, default="table", help="table (default), wide, json, yaml, or name"
    )
    p.add_argument("--columns", metavar="COL[,COL]", help=f"the table's columns, of: {', '.join(columns)}")
    p.add_argument(
        "--sort",
        metavar="COL[,COL]",
        help="sort by these columns; a leading - sorts descending (write it --sort=-submitted)",
    )


def output_format(args: argparse.Namespace) -> str:
    return "json" if args.json else args.output


def chosen_columns(args: argparse.Namespace, columns: dict[str, Column], default: Sequence[str],
                   wide: Sequence[str]) -> list[str]:  # fmt: skip
    if args.columns:
        names = [c.strip().lower() for c in args.columns.split(",") if c.strip()]
        if unknown := [c for c in names if c not in columns]:
            raise UsageError(f"--columns: unknown column {unknown[0]!r}; columns: {', '.join(columns)}")
        return names
    return list(wide if args.output == "wide" else default)


def sorted_rows(items: list[Any], spec: str | None, columns: dict[str, Column]) -> list[Any]:
    """``items`` sorted by ``--sort`` (stable: the last key first); unchanged without it."""
    for word in reversed([w.strip() for w in (spec or "").split(",") if w.strip()]):
        descending = word.startswith("-")
        name = word.lstrip("-+").lower()
        if name not in columns:
            raise UsageError(f"--sort: unknown column {name!r}; columns: {', '.join(columns)}")
        items = sorted(items, key=columns[name][2], reverse=descending)
    return items


Rows = list[tuple[str, ...]]


def table_rows(items: Sequence[Any], names: Sequence[str], columns: dict[str, Column]) -> tuple[tuple[str, ...], Rows]:
    header = tuple(columns[n][0] for n in names)
    return header, [tuple(columns[n][1](item) for n in names) for item in items]


def name_lines(items: Sequence[Any], what: str) -> list[str]:
    """``-o name``: ``cluster/id`` (jobs) or ``cluster/node`` a line."""
    return [f"{i.cluster}/{i.id if what == 'jobs' else i.name}" for i in items]
