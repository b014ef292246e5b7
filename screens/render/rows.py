"""Pure functions that turn domain objects into table cells (``rich.text.Text``, markup off).

Tested on their own; the screens only place what these return.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import datetime

from rich.text import Text

from yanflow_tui import queuecolumns
from yanflow_tui.model import Job, JobState
from yanflow_tui.sanitize import clean
from yanflow_tui.speed import Shared
from yanflow_tui.widths import duration

# The Queue's columns (``yanflow_tui.queuecolumns``): ``job_live_cells`` and ``job_sort_values`` give
# one value per key, in this order.
JOB_COLUMNS = queuecolumns.KEYS
JOB_HEADERS = queuecolumns.HEADERS

STATE_STYLES = {JobState(value): style for value, style in queuecolumns.STATE_STYLES.items()}


def text(value: object, style: str = "") -> Text:
    return Text(clean(str(value)), style=style, no_wrap=True, overflow="ellipsis")


def age_text(when: datetime | None, now: float) -> str:
    return duration(now - when.timestamp()) if when else "-"


GROUP_OPEN, GROUP_CLOSED, GROUP_CHILD = "▾ ", "▸ ", "  └ "


# column styles of the queue's plain-string cells
JOB_STYLES = {column.key: column.style for column in queuecolumns.COLUMNS if column.style}


def job_live_cells(
    job: Job,
    clock: Callable[[], float],
    marker: str = "",
    children: int = 0,
    note: str = "",
    like: tuple[Job, tuple] | None = None,
    phrase: Callable[[str], str] | None = None,
) -> tuple[str | Text | Callable[[], Text], ...]:
    """Cells of one queue row, for a table that draws lazily. ``marker`` prefixes the id (group
    open/closed, child); a group row shows how many jobs it holds after its name. Plain cells are
    cleaned strings (styled by ``JOB_STYLES`` per column), the state a ``Text``, and the age a
    callable evaluated (with ``clock``) only when its line is drawn. ``note`` (e.g. "stale") follows
    the cluster name. ``like``: an earlier version of the job and its cells (made with the same
    marker, children and note): the cells of fields that did not change are those very objects
    (a poll mostly changes states: the table then measures only the cells that are new). ``phrase``:
    the cluster's short phrase for a reason (``Backend.short_reason``), else the reason as it is."""
    if like is not None:
        before, old = like
        return (
            old[0] if job.cluster == before.cluster else _cluster_cell(job, note),
            old[1] if job.id == before.id else clean(f"{marker}{job.id}" if marker else job.id),
            old[2] if job.name == before.name else clean(f"{job.name} ({children})" if children else job.name),
            old[3] if job.user == before.user else clean(job.user),
            old[4] if job.state is before.state else _state_cells[job.state],
            old[5] if job.gpus == before.gpus else _gpus_cells[job.gpus],
            old[6] if job.nodes == before.nodes else _nodes_cell(job.nodes),
            old[7] if job.submit_time == before.submit_time else _Age(job.submit_time, clock),
            old[8] if job.reason == before.reason else clean(phrase(job.reason) if phrase else job.reason),
        )
    return (
        _cluster_cell(job, note),
        clean(f"{marker}{job.id}" if marker else job.id),
        clean(f"{job.name} ({children})" if children else job.name),
        clean(job.user),
        _state_cells[job.state],
        _gpus_cells[job.gpus],
        _nodes_cell(job.nodes),
        _Age(job.submit_time, clock),
        clean(phrase(job.reason) if phrase else job.reason),
    )


def _cluster_cell(job: Job, note: str) -> str | Text:
    if not note:
        return clean(job.cluster)
    cluster = Text(clean(job.cluster), style="bold", no_wrap=True, overflow="ellipsis")
    cluster.append(f" {note}", "bold yellow" if note == "stale" else "bold red")
    return cluster


class _Age:
    """A row's live age cell: the job's age by ``clock`` as a ``Text``, worked out when the row is
    drawn. A slotted object (48 bytes), not a closure per row (about 270 bytes: a function, its
    closure tuple and two cells), 100,000 rows and more being made at once."""

    __slots__ = ("submitted", "clock")

    def __init__(self, submitted: datetime | None, clock: Callable[[], float]) -> None:
        self.submitted, self.clock = submitted, clock

    def __call__(self) -> Text:
        return text(age_text(self.submitted, self.clock()))


_state_cells = Shared(lambda state: text(state.value, STATE_STYLES.get(state, "")))
_gpus_cells = Shared(lambda gpus: str(gpus) if gpus else "-")
_nodes_cell = Shared(lambda nodes: clean(",".join(nodes)) or "-").__getitem__


def job_sort_values(job: Job, previous: Job | None = None, values: tuple | None = None) -> tuple:
    """One sort value per ``JOB_COLUMNS`` entry: ids and names naturally (``natural_text``), GPUs as
    numbers, age by submit time (youngest first; unknown last). Given the ``values`` of a ``previous``
    version of the job, the ones whose field did not change are taken from there (a poll mostly
    changes states)."""
    submitted = job.submit_time
    if previous is not None and values is not None:
        return (
            values[0] if job.cluster == previous.cluster else _repeated_natural(job.cluster),
            values[1] if job.id == previous.id else natural_text(job.id),
            values[2] if job.name == previous.name else _name_natural(job.name),
            values[3] if job.user == previous.user else _lower(job.user),
            job.state.value,
            job.gpus,
            values[6] if job.nodes == previous.nodes else _nodes_natural(job.nodes),
            values[7] if submitted == previous.submit_time else _age_value(submitted),
            values[8] if job.reason == previous.reason else _lower(job.reason),
        )
    return (
        _repeated_natural(job.cluster),
        natural_text(job.id),
        _name_natural(job.name),
        _lower(job.user),
        job.state.value,
        job.gpus,
        _nodes_natural(job.nodes),
        _age_value(submitted),
        _lower(job.reason),
    )


# ``natural_text`` of the values many jobs share (cluster names, node lists): worked out once each,
# not per job (10,000 jobs on 64 nodes: 64 node lists). Names, users and reasons are shared too: jobs
# with equal values get the very same sort string, which a sort compares at once (identical), not
# character by character (a sort of 100,000 rows by user: 68 ms -> a few).
# cluster names and node lists (a tuple: joined first) share one table, as they always have
_repeated_natural = _nodes_natural = Shared(
    lambda value: natural_text(",".join(value) if isinstance(value, tuple) else value)
).__getitem__
_name_natural = Shared(lambda name: natural_text(name.lower())).__getitem__
_lower = Shared(str.lower).__getitem__


def _age_value(submitted: datetime | None) -> float:
    """Youngest first, unknown last: a float, not a tuple (a sort of 100,000 ages: 280 ms -> 30 ms)."""
    return -submitted.timestamp() if submitted else math.inf


_DIGITS = re.compile(r"(\d+)")


def natural_key(value: str) -> tuple:
    """Sort ``job_9`` before ``job_10`` and ``123_4`` before ``123_10``."""
    if value.isdigit() and value.isascii():
        return ((0, int(value), ""),)
    parts = _DIGITS.split(value)
    return tuple((0, int(p), "") if p.isdecimal() else (1, 0, p) for p in parts if p)


def _number_text(digits: str) -> str:
    number = str(int(digits))  # leading zeros dropped (as int() does), other scripts' digits made ASCII
    return f"\x01{len(number):03d}{number}"


def natural_text(value: str) -> str:
    """``natural_key`` as one string that sorts the same way: strings compare in C, several times
    faster than ``natural_key``'s tuples of tuples (a sort of 100,000 names: 70 ms against 430 ms).
    A number is ``\x01``, its length in three digits, its digits; a text part is ``\x02``, itself
    and ``\x00`` (so a shorter part sorts first, as in the tuples). Only text holding those control
    characters (never shown: cells are cleaned) can sort otherwise than with ``natural_key``."""
    if value.isdigit() and value.isascii():
        return _number_text(value)
    return "".join(_number_text(p) if p.isdecimal() else f"\x02{p}\x00" for p in _DIGITS.split(value) if p)
