"""What the Slurm parser (``parse.py``) keeps between parses, as one object: node lists, name tables,
GPU tuples, details, the Jobs of RawJobs and the lines of a cluster's last ``squeue`` text. Each
``SlurmBackend`` owns one (``parse_caches``), so two clusters never share a table and ``parse.py``
holds constants only; the parser's functions take it as an argument. The bounds and turn-overs of
each table are the parser's (see where ``parse.py`` fills it)."""

from __future__ import annotations

from datetime import datetime
from itertools import count
from typing import TYPE_CHECKING, Any

from yanflow_tui.model import Gpu, Job

if TYPE_CHECKING:
    from yanflow_tui.backends.slurm.parse import RawJob


class ParseCaches:
    """The parser's tables for one owner (a backend: one cluster). Not shared between threads: a
    parse runs on its owner's event loop (``backend.in_slices``)."""

    __slots__ = (
        "hostlists",
        "numbered",
        "by_digits",
        "gpus",
        "details",
        "text_details",
        "local",
        "jobs",
        "jobs_old",
        "groups",
        "groups_old",
        "lines",
        "arrays",
        "parsed",
        "parses",
    )

    def __init__(self) -> None:
        self.hostlists: dict[str, tuple[str, ...]] = {}  # hostlist text -> names (interned)
        # (prefix, width, suffix) -> names by number, interned: a range is a slice of it
        self.numbered: dict[tuple[str, int, str], list[str]] = {}
        self.by_digits: dict[str, dict[str, str]] = {}  # prefix -> {number as written: name}
        self.gpus: dict[tuple, tuple[Gpu, ...]] = {}  # a node's GPUs by what they are made from
        self.details: dict[tuple, tuple[tuple[str, str], ...]] = {}  # to_job's details by their values
        self.text_details: dict[tuple[str, ...], tuple[tuple[str, str], ...]] = {}  # by a line's columns
        self.local: dict[datetime, str] = {}  # a time as local text
        # The Job made from a RawJob (by its id), and an array's Jobs by (cluster, array id): two
        # generations each, turned over by build_jobs.
        self.jobs: dict[int, tuple[RawJob, str, str, Job]] = {}
        self.jobs_old: dict[int, tuple[RawJob, str, str, Job]] = {}
        self.groups: dict[tuple[str, str], tuple[list[RawJob], list[Job]]] = {}
        self.groups_old: dict[tuple[str, str], tuple[list[RawJob], list[Job]]] = {}
        # Per cluster (the owner's one, as a rule), what each line of its latest squeue text made, each
        # array's Jobs, and the number of the parse they are from (squeue_steps).
        self.lines: dict[str, dict[int, Any]] = {}
        self.arrays: dict[str, dict[str, tuple[list[Any], list[Job]]]] = {}
        self.parsed: dict[str, int] = {}
        self.parses = count(1)  # each squeue_steps call's number (unique for these caches, never 0)

    def clear(self) -> None:
        """Forget every value kept (the parse numbers go on): for benchmarks and tests that time or
        check a first parse."""
        for name in ParseCaches.__slots__:
            table = getattr(self, name)
            if isinstance(table, dict):
                table.clear()
