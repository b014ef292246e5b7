"""Which jobs and nodes ``jobs`` / ``nodes`` print: their filter options (``add_job_filters``,
``add_node_filters``) and the tests they make (``job_selector``, ``node_selector``). ``--state`` takes
our states and squeue's names and short codes; ``--filter`` the Queue's own filter language
(``yanflow_tui.filters``); ``--since`` a duration back from now or a date."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

from yanflow_tui.cli.context import UsageError
from yanflow_tui.model import Job, JobState, Node

# squeue's short codes (``-t PD,R``) and the long names they stand for
SQUEUE_CODES = {
    "PD": "PENDING",
    "R": "RUNNING",
    "CG": "COMPLETING",
    "CD": "COMPLETED",
    "F": "FAILED",
    "CA": "CANCELLED",
    "TO": "TIMEOUT",
    "OOM": "OUT_OF_MEMORY",
    "NF": "NODE_FAIL",
    "PR": "PREEMPTED",
    "S": "SUSPENDED",
    "ST": "STOPPED",
    "BF": "BOOT_FAIL",
    "DL": "DEADLINE",
    "RQ": "REQUEUED",
    "RH": "REQUEUE_HOLD",
    "CF": "CONFIGURING",
    "SO": "STAGE_OUT",
    "SI": "SIGNALING",
    "RS": "RESIZING",
    "RV": "REVOKED",
}
SLURM_NAMES = frozenset(SQUEUE_CODES.values())
OURS = frozenset(s.value for s in JobState)
_SINCE = re.compile(r"(\d+)\s*(s|m|h|d|w)")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def add_common_filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cluster", metavar="NAME", help="only this cluster")
    p.add_argument("--partition", "-p", metavar="NAME[,NAME]", help="only these partitions (Slurm; a job's queue)")
    p.add_argument("--state", "-t", metavar="STATE[,STATE]", help=STATE_HELP)


def add_job_filters(p: argparse.ArgumentParser) -> None:
    add_common_filters(p)
    who = p.add_mutually_exclusive_group()
    who.add_argument("--user", "-u", metavar="NAME[,NAME]", help="only these users' jobs")
    who.add_argument(
        "--me",
        action="store_true",
        help="only my jobs (as each cluster knows me; one that does not say hides nothing, as the console)",
    )
    who.add_argument("--all-users", "-A", action="store_true", help="every user's jobs (the default, as squeue's)")
    p.add_argument("--name", "-n", metavar="NAME[,NAME]", help="only jobs of these names (exact)")
    p.add_argument(
        "--since",
        metavar="WHEN",
        help="only jobs submitted since WHEN: a duration back from now (30m, 12h, 2d, 1w) or a date (2026-12-01T08:00)",
    )
    p.add_argument(
        "--filter",
        metavar="TEXT",
        help="the Queue's filter, e.g. 'state:run gpus:>4 -reason:\"bad node\" resnet'",
    )


STATE_HELP = (
    "only these states: ours (pending, running, completing, completed, failed, cancelled, unknown), "
    "squeue's names (TIMEOUT, OUT_OF_MEMORY...) or codes (PD, R, CD, F, CA, TO...), or all"
)


def _words(value: str | None) -> list[str]:
    return [w.strip() for w in (value or "").split(",") if w.strip()]


def state_test(value: str | None) -> Callable[[Job], bool] | None:
    """The test of ``--state`` (None: every state). A name neither ours nor squeue's is refused."""
    words = _words(value)
    if not words or any(w.lower() == "all" for w in words):
        return None
    ours: set[JobState] = set()
    raws: set[str] = set()
    for word in words:
        upper = SQUEUE_CODES.get(word.upper(), word.upper())
        if word.lower() in OURS:
            ours.add(JobState(word.lower()))
        elif upper in SLURM_NAMES:
            raws.add(upper)
            if upper in (s.name for s in JobState):
                ours.add(JobState[upper])
        else:
            raise UsageError(f"--state: unknown state {word!r}; {STATE_HELP}")

    def test(job: Job) -> bool:
        return job.state in ours or job.raw_state.split(" ", 1)[0].upper() in raws

    return test


def since_time(value: str | None, now: datetime | None = None) -> datetime | None:
    """``--since`` as an aware time (a date without a zone is local time)."""
    if not value:
        return None
    now = now or datetime.now(timezone.utc)
    found = _SINCE.fullmatch(value.strip())
    if found:
        return now - timedelta(seconds=int(found.group(1)) * _UNIT[found.group(2)])
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        raise UsageError(f"--since: expected a duration (30m, 12h, 2d, 1w) or a date, got {value!r}") from None
    return when if when.tzinfo else when.astimezone()


def partition_of(job: Job) -> str:
    """The job's partition (Slurm), else its queue or namespace where the backend gives one."""
    details = dict(job.details)
    return details.get("Partition") or details.get("Queue") or details.get("Namespace") or ""


def job_selector(args: argparse.Namespace, me: Callable[[str], str]) -> Callable[[Job], bool]:
    """The test of every job filter option given; ``me(cluster)``: who I am there (``--me``)."""
    from yanflow_tui.filters import FilterError, compile_filter

    tests: list[Callable[[Job], bool]] = []
    state = state_test(args.state)
    if state is not None:
        tests.append(state)
    if users := set(_words(args.user)):
        tests.append(lambda j: j.user in users)
    if args.me:
        tests.append(lambda j: me(j.cluster) in ("", j.user))  # "": not known there, nothing hidden (as the console)
    if names := set(_words(args.name)):
        tests.append(lambda j: j.name in names)
    if parts := set(_words(args.partition)):
        tests.append(lambda j: bool(parts.intersection(partition_of(j).split(","))))
    if (since := since_time(args.since)) is not None:
        tests.append(lambda j: j.submit_time is not None and j.submit_time >= since)
    if args.filter:
        try:
            compiled = compile_filter(args.filter)
        except FilterError as exc:
            raise UsageError(f"--filter: {exc}") from None
        tests.append(compiled.matches)
    return lambda job: all(t(job) for t in tests)


def node_selector(args: argparse.Namespace) -> Callable[[Node], bool]:
    """``nodes``' filters: ``--partition``, ``--state`` (the node's own state, by prefix: idle, mix,
    alloc, drain, down...) and ``--name`` (a node name, exact)."""
    tests: list[Callable[[Node], bool]] = []
    if parts := set(_words(args.partition)):
        tests.append(lambda n: bool(parts.intersection(n.partitions)))
    if states := [w.lower() for w in _words(args.state) if w.lower() != "all"]:
        tests.append(lambda n: any(n.state.lower().startswith(s) for s in states))
    if names := set(_words(getattr(args, "name", None))):
        tests.append(lambda n: n.name in names)
    return lambda node: all(t(node) for t in tests)


def add_node_filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cluster", metavar="NAME", help="only this cluster")
    p.add_argument("--partition", "-p", metavar="NAME[,NAME]", help="only nodes in these partitions")
    p.add_argument(
        "--state",
        "-t",
        metavar="STATE[,STATE]",
        help="only nodes in these states (by prefix: idle, mix, alloc, drain, down)",
    )
    p.add_argument("--name", "-n", metavar="NODE[,NODE]", help="only these nodes")
