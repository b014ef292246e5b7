"""A word when a job ends: which of the user's jobs' transitions the console announces (``EndWatch``,
once each) and what the ``notify:`` config section says (``NoticeSettings``). No UI: the app shows
what ``EndWatch.update`` returns (a toast, the bell, a desktop notice through ``termseq``).

    notify:                    # or `notify: false`: no toast, no bell, no desktop notice
      states: [completed, failed, cancelled]   # the end states announced (default: all three)
      clusters: [hpc]          # only these clusters (default: every one)
      bell: true               # the terminal bell
      desktop: true            # OSC 9 / OSC 777 desktop notices

A job is announced when the console saw it pending or running (in a refresh of this run, never in
the last run's cache) and a later refresh shows it in an end state; a job that leaves the list
without an end state seen is forgotten, unannounced. "The user's own": the cluster's user where it
knows one (``Backend.current_user``), every job where it does not, as the Queue's "mine"."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from yanflow_tui.fieldtable import NOTIFY_FIELDS, keys
from yanflow_tui.model import TERMINAL_STATES, Job, JobState

if TYPE_CHECKING:
    from yanflow_tui.hub import ClusterSnapshot
    from yanflow_tui.yamldoc import Checker

NOTIFY_KEYS = keys(NOTIFY_FIELDS)  # (the one table the JSON Schema is made from)
END_STATES = tuple(s.value for s in JobState if s in TERMINAL_STATES)


@dataclass(frozen=True)
class NoticeSettings:
    on: bool = True
    states: frozenset[JobState] = TERMINAL_STATES
    clusters: tuple[str, ...] = ()  # empty: every cluster
    bell: bool = True
    desktop: bool = True

    def wanted(self, cluster: str, state: JobState) -> bool:
        return self.on and state in self.states and (not self.clusters or cluster in self.clusters)


def parse_notify(check: Checker, value: Any) -> NoticeSettings:
    """The ``notify:`` section (a boolean, or a mapping of ``NOTIFY_KEYS``); problems go to ``check``."""
    if value is None:
        return NoticeSettings()
    if isinstance(value, bool):
        return NoticeSettings(on=value)
    entry = check.mapping("notify", value, NOTIFY_KEYS)
    states: frozenset[JobState] = TERMINAL_STATES
    names = check.string_list("notify.states", entry.get("states"))
    if names is not None:
        for i, name in enumerate(names):
            if name not in END_STATES:
                check.error(f"notify.states[{i}]", f"not an end state: {name!r}; one of {', '.join(END_STATES)}")
        states = frozenset(JobState(n) for n in names if n in END_STATES)
    clusters = tuple(check.string_list("notify.clusters", entry.get("clusters")) or ())

    def flag(key: str) -> bool:
        return check.boolean(f"notify.{key}", entry.get(key)) is not False

    return NoticeSettings(flag("on"), states, clusters, flag("bell"), flag("desktop"))


@dataclass
class _Seen:
    serial: int = 0  # the snapshot's ``jobs_serial`` last read
    live: dict[str, JobState] = field(default_factory=dict)  # my jobs seen pending or running, by id


class EndWatch:
    """The jobs to announce, from each refresh's snapshot. A snapshot whose backend said what changed
    since the one read before (``job_changes``) is read through those jobs alone, so a refresh of
    100,000 unchanged jobs costs nothing here."""

    def __init__(self, settings: NoticeSettings) -> None:
        self.settings = settings
        self._clusters: dict[str, _Seen] = {}

    def update(self, snap: ClusterSnapshot, me: str) -> list[Job]:
        """The jobs of ``snap`` (mine: of user ``me``, or all when "") that ended since the last
        snapshot of that cluster and are to be announced; each is returned once."""
        if not self.settings.on or snap.cached or snap.updated is None:
            return []
        seen = self._clusters.setdefault(snap.name, _Seen())
        changes = snap.job_changes
        if changes is not None and seen.serial and changes.since == seen.serial:
            jobs: Iterable[Job] = changes.put
            for job_id in changes.gone:
                seen.live.pop(job_id, None)
        else:
            jobs = snap.jobs
            if seen.live:
                listed = {job.id for job in snap.jobs}
                for job_id in [j for j in seen.live if j not in listed]:
                    del seen.live[job_id]
        seen.serial = snap.jobs_serial
        ended = []
        for job in jobs:
            if me and job.user != me:
                continue
            if job.state.terminal:
                if seen.live.pop(job.id, None) is not None and self.settings.wanted(snap.name, job.state):
                    ended.append(job)
            elif job.state is not JobState.UNKNOWN:
                seen.live[job.id] = job.state
        return ended


def ended_text(job: Job) -> str:
    """The notice's one line, e.g. ``job 101 (train) on hpc: failed, exit code 3``."""
    code = f", exit code {job.exit_code}" if job.exit_code is not None else ""
    name = f" ({job.name})" if job.name else ""
    return f"job {job.id}{name} on {job.cluster}: {job.state.value}{code}"
