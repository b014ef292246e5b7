"""The tests' reference squeue parser: ``squeue -o`` text to ``RawJob`` rows the plain way (a row at a
time, then ``parse.build_jobs``), which the parser the backend runs (``parse.squeue_steps``: the text
straight to Jobs) is checked against; and ``squeue_raws``, a backend's queue read as RawJobs through it.
Moved out of the backend, which never used it (issue #29); ``benchmarks/squeue_parse.py`` times it too."""

from __future__ import annotations

from sys import intern
from typing import Any

from yanflow_tui.backends.slurm import backend as slurm_backend
from yanflow_tui.backends.slurm.parse import (
    _NO_REASON,
    _NO_TASK,
    _NO_VALUE,
    _ROWS_SLACK,
    SEP,
    SQUEUE_FIELDS,
    AmbiguousRows,
    RawJob,
    _gpus_from_tres,
    _int,
    _make_raw,
    _time,
    expand_hostlist,
)
from yanflow_tui.backends.slurm.parsecache import ParseCaches
from yanflow_tui.speed import collector_off


class ReferenceCaches(ParseCaches):
    """A backend's ``ParseCaches`` plus the reference's own rows already parsed, by their line: a queue
    prints nearly the same lines poll after poll (the format has no elapsed time), so a line seen before
    is a lookup. Two generations: when the newer one holds many more lines than the latest text (lines
    of jobs gone), it becomes the older one, whose lines still met are carried over; what is left in it
    is dropped at the next turn."""

    __slots__ = ("rows", "rows_old")

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, RawJob] = {}
        self.rows_old: dict[str, RawJob] = {}

    def clear(self) -> None:
        super().clear()
        self.rows.clear()
        self.rows_old.clear()


def parse_squeue_text(text: str, caches: ParseCaches) -> list[RawJob]:
    """Rows of ``squeue -h -o SQUEUE_FORMAT`` with ``SLURM_TIME_FORMAT=%s``. The text's repeated
    words (states, users, partitions, node names...) come out as one shared string each, and the same
    epoch as one ``datetime``: a queue of 100,000 jobs holds a few thousand distinct values. With
    ``ReferenceCaches``, a line met in a recent parse gives the same ``RawJob`` as then (its ``rows``);
    with a backend's plain ``ParseCaches``, every line is parsed anew."""
    if not isinstance(caches, ReferenceCaches):
        with collector_off(keep=True):
            return _parse_squeue_text(text, {}, {}, caches)
    with collector_off(keep=True):
        jobs = _parse_squeue_text(text, caches.rows, caches.rows_old, caches)
        if len(caches.rows) > len(jobs) + len(jobs) // 8 + _ROWS_SLACK:
            caches.rows_old, caches.rows = caches.rows, {}
    return jobs


async def squeue_raws(backend: slurm_backend.SlurmBackend, user: str = "") -> list[RawJob]:
    """The queue (only ``user``'s jobs when given) as RawJobs, read as the backend reads it: one squeue
    call, its text through the reference parser, or JSON (after an ambiguous text, for a while)."""
    text = await backend._squeue_text(user)
    if text is not None:
        try:
            return parse_squeue_text(text.decode(errors="replace"), backend.parse_caches)
        except AmbiguousRows:
            backend._json_until = slurm_backend.clock() + slurm_backend.JSON_STICKY
    return await backend._squeue_json(user)


def _parse_squeue_text(
    text: str, rows: dict[str, RawJob], older: dict[str, RawJob], caches: ParseCaches
) -> list[RawJob]:
    jobs: list[RawJob] = []
    append = jobs.append
    make = _make_raw
    width = len(SQUEUE_FIELDS)
    times: dict[str, Any] = {"N/A": None, "NONE": None, "0": None, "": None, "Unknown": None}
    times_get = times.get
    gpus_of: dict[tuple[str, str], int] = {}
    hosts_get = caches.hostlists.get
    rows_get, older_get = rows.get, older.get
    for line in text.split("\n"):
        known = rows_get(line)
        if known is not None:
            append(known)
            continue
        if not line:
            continue
        known = older_get(line)
        if known is not None:
            append(known)
            rows[line] = known
            continue
        cols = line.split(SEP, width - 1)
        if len(cols) != width or not cols[0].isdigit():
            raise AmbiguousRows(f"ambiguous squeue row: {line[:80]!r}")
        (
            job_id,
            array_job_id,
            array_task,
            state,
            reason,
            user,
            node_count,
            nodes,
            tres,
            submit,
            start,
            end,
            partition,
            account,
            qos,
            time_limit,
            cpus,
            _display,
            name,
        ) = cols
        # %F is the job's own id for a plain job; only %K (task id or range) marks an array member.
        if array_task not in _NO_VALUE and array_job_id not in _NO_TASK:
            task = array_task[1:-1] if array_task.startswith("[") and array_task.endswith("]") else array_task
        else:
            array_job_id = task = ""
        gpus = gpus_of.get((tres, node_count))
        if gpus is None:
            gpus = gpus_of[tres, node_count] = (
                0 if tres in ("N/A", "(null)") else _gpus_from_tres(tres, _int(node_count, 1))
            )
        submitted = times_get(submit, times)
        if submitted is times:
            submitted = times[submit] = _time(submit)
        started = times_get(start, times)
        if started is times:
            started = times[start] = _time(start)
        ended = times_get(end, times)
        if ended is times:
            ended = times[end] = _time(end)
        hosts = hosts_get(nodes)
        if hosts is None:
            hosts = expand_hostlist(nodes, caches)
        rows[line] = raw = make(
            job_id,
            array_job_id,
            task,
            intern(name) if len(name) < 64 else name,
            intern(user),
            intern(state),
            "" if reason in _NO_REASON else intern(reason),
            hosts,
            gpus,
            (),
            submitted,
            started,
            ended,
            intern(partition),
            "" if account in _NO_REASON else intern(account),
            "" if qos in _NO_REASON else intern(qos),
            intern(time_limit),
            int(cpus) if cpus.isdigit() else _int(cpus),
        )
        append(raw)
    return jobs
