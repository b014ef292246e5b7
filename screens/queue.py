"""The Queue screen: every cluster's jobs in one virtualised table, updated in place by row key.

Jobs with a ``parent`` (array tasks, pods of a multi-node job, trials) sit collapsed under their
group row; ``e`` expands or collapses it. ``/`` filters with the field language of
``yanflow_tui.filters``; ``o``/``O`` and header clicks sort (children stay under their group). Extra
backend verbs (pause, activate...) are under ``a``, and those of ``keys.JOB_VERBS`` (hold, resubmit...)
on keys of their own; like cancel they are confirmed and go through the backend's gate. ``space``
marks rows: cancel and every verb then act on the marked jobs, after one confirmation."""

from __future__ import annotations

import asyncio
import time
from bisect import bisect_left, bisect_right, insort
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator, Sequence
from itertools import chain, compress, count, islice, repeat
from operator import attrgetter, is_, is_not, ne, not_, sub
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Input, Static

from yanflow_tui import speed
from yanflow_tui.filters import FilterError, JobColumns, JobFilter, any_texts, compile_filter
from yanflow_tui.hub import Health, error_text
from yanflow_tui.keys import JOB_VERB, JOB_VERBS, JobVerb
from yanflow_tui.locations import default_config_path, display_path, job_file_path, private_file
from yanflow_tui.model import Job, JobChanges, JobState
from yanflow_tui.sanitize import clean
from yanflow_tui.screens.base import DataScreen
from yanflow_tui.screens.dialogs import ChoiceScreen
from yanflow_tui.screens.inside import open_shell, shell_key
from yanflow_tui.screens.render.cluster_rows import cluster_problems
from yanflow_tui.screens.render.rows import (
    GROUP_CHILD,
    GROUP_CLOSED,
    GROUP_OPEN,
    JOB_COLUMNS,
    JOB_HEADERS,
    JOB_STYLES,
    STATE_STYLES,
    job_live_cells,
    job_sort_values,
)
from yanflow_tui.screens.verb_flow import ask, ask_values, confirm, targets_text
from yanflow_tui.screens.widgets.cluster_bar import ClusterBar
from yanflow_tui.screens.widgets.filter_box import FilterBox
from yanflow_tui.screens.widgets.footer import Footer
from yanflow_tui.screens.widgets.status_line import StatusLine
from yanflow_tui.screens.widgets.table import Column, Row, RowChanges, VirtualTable

if TYPE_CHECKING:
    from textual import getters

    from yanflow_tui.app import YanflowApp

NAME_FLOOR = 16  # a narrow terminal hides REASON, then NODES, then AGE before NAME gets narrower than this
ID_FLOOR = 12  # a long id (a Kubernetes pod's namespace/job/pod) is cut to this, with an ellipsis, before
# it pushes STATE and the columns after it off screen (a Slurm array task, 1234567_[0-5], fits whole)
_COLUMN_OPTIONS: dict[str, dict[str, Any]] = {
    "id": {"flex": True, "floor": ID_FLOOR},
    "name": {"flex": True, "floor": NAME_FLOOR},
    "nodes": {"flex": True, "give_way": 2},
    "reason": {"flex": True, "give_way": 1},
    "gpus": {"justify": "right"},
    "age": {"min_width": 4, "justify": "right", "give_way": 3},
}
COLUMNS = tuple(
    Column(key, label, style=JOB_STYLES.get(key, ""), **_COLUMN_OPTIONS.get(key, {}))
    for key, label in zip(JOB_COLUMNS, JOB_HEADERS)
)
NOTES = {Health.STALE: "stale", Health.ERROR: "error"}  # rows of a cluster whose data is old
# actions whose key depends on the selected job or the data (see check_action)
STATEFUL_ACTIONS = ("cancel", "logs", "open_job", "actions", "toggle_group", "submit")
MARK = "● "  # before the id of a marked row
WARM_ROWS = 500  # group members' rows made (and measured) per idle turn, before a filter or an expand shows them
WARM_SECONDS = 0.005  # between two such turns (a key waits for one at most): all done ~70 ms after a 5% refresh at 100k
EDITS = 64  # groups opened plus jobs marked up to which a refresh edits the rows with every group closed
WARM_BUDGET = 0.012  # seconds of such a turn spent on entries (made already or not), besides measuring
CATCH_UP, CATCH_UP_MIN = 0.15, 4096  # entries missing texts or rows, at most (a share of all): made with the refresh
WARM_AFTER_KEY = 0.05  # no such turn sooner after a key: none lands between the turns of its handling and its frame


SLURM_EXAMPLE = """clusters:
  - name: hpc
    kind: slurm
    ssh: you@login.hpc.example  # omit on the login node"""


class QueueHint(Static):
    """What to do when the Queue lists nothing: on a first start, how to submit and where clusters
    are configured (with a minimal Slurm example); when a filter or "mine" hides every job, that."""

    if TYPE_CHECKING:
        app = getters.app(YanflowApp)

    def show_for(self, shown: int, total: int, filtering: bool, mine: bool) -> None:
        self.display = shown == 0
        if shown:
            return
        if total:
            hidden = f"{total} job{'s' if total != 1 else ''}"
            if filtering:
                self.update(Text(f"The filter hides {hidden}: esc clears it, / changes it."))
            else:
                self.update(Text(f"{hidden} of other users are hidden: u shows every user's jobs."))
            return
        self.update(self._first_steps())

    def _first_steps(self) -> Text:
        app = self.app
        source = app.config.source
        file = Path(source) if source != "auto-discovered" else default_config_path()
        out = Text("No jobs listed. ", "bold")
        if app.read_only:
            out.append("Read-only: submitting is off.\n")
        else:
            out.append("s", "bold reverse")
            out.append(" submits a job.\n")
        out.append("5", "bold reverse")
        out.append(" shows each cluster's state. ")
        if source != "auto-discovered":
            out.append(f"Clusters are configured in {display_path(file)}, e.g.:\n")
        else:
            out.append(
                f"No config file: these clusters were discovered. Add yours in {display_path(file)}, "
                "e.g. for a Slurm login node:\n"
            )
        out.append(SLURM_EXAMPLE, "dim")
        return out


class JobTable(VirtualTable):
    BINDINGS = [Binding("enter", "select_cursor", "Open", id="open-job")]

    def __init__(self, **kwargs) -> None:
        super().__init__(COLUMNS, **kwargs)


def _tasks(kids: list[_Entry] | None) -> int:
    """A group row's count: its members' tasks (a pending array remainder's one row holds several)."""
    return sum([kid.job.tasks for kid in kids]) if kids else 0


def _parent_key(job: Job) -> str:
    """The row key of the group ``job`` belongs under; "" for a top-level job."""
    return f"{job.cluster}/{job.parent}" if job.parent else ""


_STATE = attrgetter("job.state")
_ROW_KEY = attrgetter("key")
_JOB_ID = attrgetter("id")
_VIEW_ROW = attrgetter("view_row")
_PLAIN_ROW = attrgetter("plain_row")
_TEXTS = attrgetter("text")
_JOB = attrgetter("job")


class _Entry:
    """What the queue derives from a job, kept until the job changes; ``set_job`` takes its next
    version in place (the group lists holding the entry stay as they are). What a bare word of the
    filter searches (``text``) is worked out for many entries at once, in idle time or when a filter
    first needs it; sort values reuse the last version's where equal. Two versions of the row are kept
    (a group closed and opened, a filter typed and cleared)."""

    __slots__ = (
        "job",
        "key",
        "text",
        "sort",
        "plain_row",
        "view_row",
        "view_kids",
        "_marker",
        "_count",
        "_note",
        "_parent",
        "_row",
        "_other",
        "_like",
    )

    def __init__(self, job: Job, key: str) -> None:
        self.key = key
        self.sort: tuple = ()
        self._marker, self._count, self._note, self._parent = "", 0, "", ""  # what ``_row`` was made for
        # an earlier version of the job, and the marker, count, note and cells of a row made for it
        self._like: tuple[Job, str, int, str, tuple] | None = None
        self.set_job(job, None)

    def set_job(self, job: Job, previous: Job | None) -> None:
        if previous is not None and self._row is not None:  # its cells, for the next version's row to reuse
            self._like = (previous, self._marker, self._count, self._note, self._row.cells)
        self.job = job
        self.text: str | None = None  # the job's ``JobFields.any``, once made (see QueueScreen._texts)
        self.sort = job_sort_values(job, previous, self.sort if previous is not None else None)
        self.plain_row: Row | None = None  # the row as a top-level job of a fresh cluster, once made
        self.view_row: Row | None = None  # the row as a filter shows it (groups open), once made
        self.view_kids = 0  # a group's: how many members ``view_row`` says it has (0: not a group's row)
        self._row: Row | None = None
        self._other: tuple | None = None  # the version before: (marker, count, note, parent, row)

    def row(self, clock, marker: str, count: int, note: str, parent: str) -> Row:
        row = self._row
        if (
            row is not None
            and marker == self._marker
            and count == self._count
            and note == self._note
            and parent == self._parent
        ):
            return row
        other = self._other
        self._other = (self._marker, self._count, self._note, self._parent, row) if row is not None else None
        if other is not None and other[:4] == (marker, count, note, parent):
            row = other[4]
        else:
            like = self._like
            base = (like[0], like[4]) if like is not None and like[1:4] == (marker, count, note) else None
            # the old version's job and cells go, used or not (kept, they held ~70 MB at 100k jobs; a
            # group's count changed, unused ones stayed, with the group Job and its node tuple)
            self._like = None
            cells = job_live_cells(self.job, clock, marker, count, note, base)
            row = Row(self.key, cells, self.sort, parent, "dim" if note else "")
        self._row = row
        self._marker, self._count, self._note, self._parent = marker, count, note, parent
        if not marker and not count and not note and not parent:
            self.plain_row = self.view_row = row  # (a top-level job with no group: a filter shows it so)
            self.view_kids = 0
        return row


class _JobsOf(Collection[Job]):
    """The jobs of ``entries``, read where a filter's column needs them (most need none: a bare word)."""

    __slots__ = ("_entries",)

    def __init__(self, entries: list[_Entry]) -> None:
        self._entries = entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Job]:
        return map(_JOB, self._entries)

    def __contains__(self, job: object) -> bool:
        return any(map(is_, self, repeat(job)))


def _by_id(entry: _Entry) -> tuple:
    return entry.sort[1]


def _TOP_ORDER(entry: _Entry) -> tuple:
    """The Queue's default order of top-level entries: by cluster, then id."""
    return (entry.job.cluster, entry.sort[1])


def _position(entries: list[_Entry], entry: _Entry, key: Callable[[_Entry], tuple]) -> int | None:
    """Where ``entry`` itself is in ``entries`` (sorted by ``key``): bisected, then on past the
    entries of an equal key (ids of equal natural order: "07" and "7"); None when it is not there."""
    wanted = key(entry)
    at = bisect_left(entries, wanted, key=key)
    while at < len(entries) and entries[at] is not entry and key(entries[at]) == wanted:
        at += 1
    return at if at < len(entries) and entries[at] is entry else None


def _unmade(values: Iterable[object]) -> list[int]:
    """The indices of ``values`` that are None (not made yet), found in one pass in C."""
    return list(compress(count(), map(is_, values, repeat(None))))


def _missing(order: list[int], total: int) -> list[int]:
    """The indices below ``total`` that ``order`` (ascending, no repeats) leaves out, found from its gaps
    (in C: a filter matching most jobs leaves out few)."""
    if not order:
        return list(range(total))
    out = list(range(order[0]))
    for at in compress(count(), map(ne, map(sub, islice(order, 1, None), order), repeat(1))):
        out.extend(range(order[at] + 1, order[at + 1]))
    out.extend(range(order[-1] + 1, total))
    return out


def _take_out(top: list[_Entry], gone: list[_Entry]) -> bool:
    """Take each of ``gone`` out of ``top`` (sorted by id) where bisection finds it; False (``top``
    as it was) when one is not there."""
    spots = []
    for entry in gone:
        at = _position(top, entry, _by_id)
        if at is None:
            return False
        spots.append(at)
    for at in sorted(spots, reverse=True):
        del top[at]
    return True


class _ClusterJobs:
    """One cluster's entries, its groups and their default order (ids, naturally): worked out again
    only when the cluster's job tuple changes, so a refresh of one cluster leaves the others be.
    When the backend said what changed since the jobs taken last (``JobChanges``), only those jobs
    are looked at. Otherwise the jobs are compared with the last ones in C (by id, then identity);
    only those that differ are looked at. Top-level jobs that came or went (finished jobs aging out,
    new ones submitted) are taken out of or put into the order where they belong (``patched`` says
    which, for the Queue's joined lists); groups changing work it all out again."""

    __slots__ = (
        "jobs",
        "me",
        "pool",
        "seen",
        "exact",
        "serial",
        "patched",
        "restated",
        "by_id",
        "by_key",
        "top",
        "children",
        "generation",
        "job_of",
        "named",
    )

    def __init__(self) -> None:
        self.generation = 0  # +1 each time the groups or the order changed
        self.jobs: tuple[Job, ...] | None = None
        self.me = ""
        self.serial = 0  # the backend's answer ``jobs`` came from (``JobList.serial``; 0: not known)
        # the entries put into and taken out of ``top`` when the last +1 of ``generation`` did only that
        self.patched: tuple[list[_Entry], list[_Entry]] | None = None
        self.restated: list[tuple[JobState, JobState, _Entry]] = []  # the last update's changes of state
        self.by_id: dict[str, _Entry] = {}
        self.by_key: dict[str, _Entry] = {}
        self.top: list[_Entry] = []
        self.children: dict[str, list[_Entry]] = {}  # group row key -> its members
        self.job_of: dict[str, Job] = {}  # id -> the job its entry holds
        self.pool: Sequence[Job] = ()  # the jobs taken last (kept: ``seen`` holds their identities)
        self.seen: set[int] = set()
        self.exact = False  # ``pool`` and ``seen`` are the jobs taken last (not after a change list)
        self.named: set[str] = set()  # ids named as a parent, present or not

    def update(self, jobs: tuple[Job, ...], me: str, changes: JobChanges | None = None, serial: int = 0) -> bool:
        """Take the cluster's latest jobs (only ``me``'s when set); True when any row may differ.
        ``changes``: what changed since the backend's answer numbered ``changes.since``; used when
        that is the answer taken last, else every job is compared. Changed jobs update their
        entries in place; the groups and the order are worked out again only when jobs came or
        went or moved to another group."""
        self.patched, self.restated = None, []
        if jobs is self.jobs and me == self.me:
            return False
        last = self.jobs
        if last is not None and me == self.me and len(jobs) == len(last) and all(map(is_, jobs, last)):
            self.jobs, self.serial = jobs, serial  # the very same jobs again (a poll that changed nothing)
            return False
        if (
            changes is not None
            and self.jobs is not None
            and me == self.me
            and self.serial
            and changes.since == self.serial
        ):
            made, gone, changed, moved = self._apply(changes, me)
            # (pool and seen not made: the next compare by identity compares by id; the old ones go,
            # with the job versions only they held: 7 MB and more at 100,000 jobs)
            self.exact, self.pool, self.seen = False, (), set()
            if not me and len(self.job_of) != len(jobs):  # the changes did not add up: compared in full
                made, gone, changed, moved = (*self._compare_all(jobs, False)[:3], True)
        else:
            pool = [job for job in jobs if job.user == me] if me else jobs
            moved = me != self.me
            seen = set(map(id, pool))  # the job objects, by identity: no job is looked into to compare
            old = self.by_id
            if moved or not self.exact or len(seen) != len(pool) or self.jobs is None:
                made, gone, changed, moved = self._compare_all(pool, moved)
            else:
                came = seen - self.seen  # new objects: jobs new or in a new version
                went = self.seen - seen
                news = list(compress(pool, map(came.__contains__, map(id, pool)))) if came else []
                lefts = list(compress(self.pool, map(went.__contains__, map(id, self.pool)))) if went else []
                made, changed, moved = self._take(news)
                job_of = self.job_of
                gone = []
                for before in lefts:  # (a version replaced is in job_of no more)
                    if job_of.get(before.id) is before:
                        del job_of[before.id]
                        gone.append(old.pop(before.id))
                if len(job_of) != len(pool):  # an id given twice: compared in full, the lists worked out again
                    made, gone, changed, moved = (*self._compare_all(pool, moved)[:3], True)
            self.pool, self.seen, self.exact = pool, seen, True
        self.jobs, self.me, self.serial = jobs, me, serial
        if not made and not moved and not gone:  # the same ids: entries updated in place
            return changed > 0
        if not moved and self._patch(made, gone):
            self.patched = (made, gone)
            self.generation += 1
            return True
        self._relist()
        self.generation += 1
        return True

    def _apply(self, changes: JobChanges, me: str) -> tuple[list[_Entry], list[_Entry], int, bool]:
        """The backend's list of changes into the entries (``me``: jobs of others put are gone, as
        far as these lists go): (entries made, entries gone, how many changed, whether any moved)."""
        put: Sequence[Job] = changes.put
        gone_ids: Sequence[str] = changes.gone
        if me and any(job.user != me for job in put):
            gone_ids = [*gone_ids, *(job.id for job in put if job.user != me)]
            put = [job for job in put if job.user == me]
        job_of, by_id = self.job_of, self.by_id
        gone = []
        for job_id in gone_ids:  # (before the jobs put: an id gone and put again is a new entry)
            entry = by_id.pop(job_id, None)
            if entry is not None:
                job_of.pop(job_id, None)
                gone.append(entry)
        made, changed, moved = self._take(put)
        return made, gone, changed, moved

    def _relist(self) -> None:
        """The order, the groups and their members worked out afresh from the entries."""
        by_id = self.by_id
        self.by_key = {entry.key: entry for entry in by_id.values()}
        children: dict[str, list[_Entry]] = {}
        top: list[_Entry] = []
        for entry in by_id.values():
            parent = by_id.get(entry.job.parent) if entry.job.parent else None
            if parent is not None and parent is not entry:
                children.setdefault(parent.key, []).append(entry)
                view = entry.view_row  # a member's row holds for as long as it stays in that group
                if view is not None and view.parent != parent.key:
                    entry.view_row = None
            else:
                top.append(entry)
        for entry in top:  # a job with no group shows as it does with no filter; a group never plain
            kids = children.get(entry.key)
            if kids is None:
                entry.view_row, entry.view_kids = entry.plain_row, 0
            else:  # a group's row holds while it has as many members
                entry.plain_row = None
                if entry.view_kids != _tasks(kids):
                    entry.view_row = None
        top.sort(key=_by_id)
        for kids in children.values():
            kids.sort(key=_by_id)
        self.top, self.children = top, children
        self.named = {job.parent for job in self.job_of.values() if job.parent}

    def _take(self, news: Sequence[Job]) -> tuple[list[_Entry], int, bool]:
        """Jobs new or in a new version into their entries: (entries made, how many changed, whether
        one moved to another group)."""
        job_of, by_id = self.job_of, self.by_id
        made: list[_Entry] = []
        changed = 0
        moved = False
        for job in news:
            before = job_of.get(job.id)
            job_of[job.id] = job
            if before is None or (entry := by_id.get(job.id)) is None:
                entry = by_id[job.id] = _Entry(job, job.key)
                made.append(entry)
            elif before != job:
                moved = moved or before.parent != job.parent
                if before.state is not job.state:
                    self.restated.append((before.state, job.state, entry))
                entry.set_job(job, before)
                changed += 1
            else:
                entry.job = job  # equal: the new object, so the old one can go
        return made, changed, moved

    def _compare_all(self, pool: Sequence[Job], moved: bool) -> tuple[list[_Entry], list[_Entry], int, bool]:
        """Every job compared by id with the last ones (the first time, users switched, or one job
        object given twice): (entries made, entries gone, how many changed, whether any moved)."""
        ids = list(map(_JOB_ID, pool))
        old = self.by_id
        befores = list(map(self.job_of.get, ids))
        self.job_of = {key: job for key, job in zip(ids, befores) if job is not None}  # (_take fills in the rest)
        self.by_id = {key: entry for key in ids if (entry := old.get(key)) is not None}
        made, changed, moved_now = self._take(list(compress(pool, map(is_not, befores, pool))))
        self.job_of = dict(zip(ids, pool))
        gone = list(compress(old.values(), map(not_, map(self.by_id.__contains__, old))))
        return made, gone, changed, moved or moved_now

    def _patch(self, made: list[_Entry], gone: list[_Entry]) -> bool:
        """Top-level jobs in no group that came (``made``) or went (``gone``): out of the order and
        into it by id, when no group changes with them; False (nothing done) otherwise."""
        named, children = self.named, self.children
        if any(e.job.parent or e.job.id in named for e in made) or any(e.job.parent or e.key in children for e in gone):
            return False
        top, by_key = self.top, self.by_key
        if gone:
            went = {entry.key for entry in gone}
            if len(gone) * 64 > len(top) or not _take_out(top, gone):
                top = list(compress(top, map(not_, map(went.__contains__, map(_ROW_KEY, top)))))
            for key in went:
                del by_key[key]
        for entry in sorted(made, key=_by_id):
            entry.view_row, entry.view_kids = entry.plain_row, 0
            by_key[entry.key] = entry
            if not top or _by_id(top[-1]) < _by_id(entry):
                top.append(entry)  # (new jobs have the highest ids: at the end)
            else:
                insort(top, entry, key=_by_id)
        self.top = top
        return True


class _Delta:
    """What changed in the entries since rows were last given to the table, while only top-level jobs
    in no group came or went: the entries gone, and each change of state as (before, after, entry)
    (None: made, or gone). Enough to tell the table what differs and to count the states shown."""

    __slots__ = ("gone", "states")

    def __init__(self) -> None:
        self.gone: list[_Entry] = []
        self.states: list[tuple[JobState | None, JobState | None, _Entry]] = []


class QueueScreen(DataScreen):
    TITLE_TEXT = "Queue"
    SHOWS_USERS = True
    CSS_PATH = Path(__file__).parent / "queue.tcss"
    BINDINGS = [
        Binding("slash", "filter", "Filter", id="filter-jobs"),
        Binding("l", "logs", "Logs", id="job-logs"),
        Binding("c", "cancel", "Cancel", id="cancel-job"),
        Binding("a", "actions", "Actions", id="job-actions"),
        Binding("e", "toggle_group", "Expand", id="toggle-group"),
        Binding("space", "toggle_mark", "Mark", show=False, id="mark-job"),
        Binding("u", "toggle_users", "Mine/All", id="toggle-users"),
        Binding("H", "widen_history", "Older jobs", show=False, id="widen-history"),
        Binding("o", "sort_next", "Sort", id="sort-jobs"),
        Binding("O", "sort_reverse", "Reverse sort", show=False, id="reverse-sort"),
        Binding("s", "submit", "Submit", id="submit-job"),
        Binding("escape", "clear_filter", "Clear filter / marks", show=False, id="clear-filter"),
        *(Binding(v.key, f"verb('{v.name}')", v.label, show=False, id=v.binding_id) for v in JOB_VERBS),
        # Read-only: the keys above are gone from the footer, and pressing one says why.
        Binding("c", "app.refuse('cancel')", "Cancel (read-only)", show=False, id="cancel-job-read-only"),
        Binding("a", "app.refuse('job actions')", "Actions (read-only)", show=False, id="job-actions-read-only"),
        Binding("s", "app.refuse('submit')", "Submit (read-only)", show=False, id="submit-job-read-only"),
        *(
            Binding(
                v.key, f"app.refuse('{v.verb}')", f"{v.label} (read-only)", show=False, id=f"{v.binding_id}-read-only"
            )
            for v in JOB_VERBS
        ),
        Binding("x", "shell", "Shell", id="job-shell"),
        Binding("x", "app.refuse('shell')", "Shell (read-only)", show=False, id="job-shell-read-only"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.filter_text = ""
        self.job_filter: JobFilter = compile_filter("")
        self.filter_error = ""
        self._clusters: dict[str, _ClusterJobs] = {}
        self._entries: dict[str, _Entry] | None = None  # every entry by row key, once synced
        self._children: dict[str, list[_Entry]] = {}  # group row key -> its jobs
        self._top: list[_Entry] = []  # entries not under a group, in default order (cluster, id)
        self._generations: tuple[int, ...] = ()  # each cluster's ``generation`` when they were joined
        # _flat (every entry in default order, each group's members right after it), _group_at, _groups:
        # joined when first read after the lists changed (a filter, idle warming), not on every refresh
        self._joined: tuple[list[_Entry], list[int], list[int]] | None = ([], [], [])
        self._parent_of: dict[str, _Entry] = {}  # a member's row key -> its group's entry
        self._columns: tuple[int, JobColumns, list] | None = None  # (version, the filter's fields, each state)
        self._version = 0  # bumped whenever the entries change: the caches below are for one version
        self._matches: dict[str, list[int]] = {}  # filter text -> its matches' _flat indices (a few kept)
        self._views: dict[tuple, tuple[list[Row], Counter]] = {}  # (version, filter, opened) -> its rows, counts
        self._unfiltered: tuple[tuple, list[Row], Counter] | None = None  # (what it depends on, rows, counts)
        self._warmed = 0  # the entries version whose member rows are being made ahead (see _warm_members)
        # the rows last given to the table were every group closed, with these counts (else None), and
        # what changed since (None: not known); the next such rows then say what differs (_closed_rows)
        self._given_closed: Counter | None = None
        self._closed_now: Counter | None = None
        self._counted = False  # _closed_now was moved from _given_closed by the changes (and added up)
        # the groups opened, the jobs marked and the notes in the rows last given, when made by _closed_rows (and now)
        self._given_view: tuple[frozenset[str], frozenset[str], tuple] | None = None
        self._view_now: tuple[frozenset[str], frozenset[str], tuple] | None = None
        self._delta: _Delta | None = None
        self._changes: RowChanges | None = None  # what the rows about to be given differ in, when known
        # the rows on show when they are every group closed, with no marks, notes or filter (made by
        # _closed_rows: a job in no group shows its ``plain_row``), and their entries' version; else None
        self._shown_closed: tuple[int, list[Row]] | None = None
        self._closed_list: list[Row] | None = None  # the last such rows made (set by _visible_rows)
        self._kinds: tuple[int, bytearray, Counter] | None = None  # (version, kind per _flat index, states)
        self._no_row: list[int] | None = None  # the _flat indices of entries with no view row yet, last first
        # the _flat indices of entries whose text is still to make, ahead (they come first; None: not
        # looked for yet), and whether the filter's columns are made since
        self._no_text: list[int] | None = None
        self._texts_warmed = False
        self._warm_due = False  # a turn of _warm_members is due (see _warm_later)
        self._warm_paused = False  # it stopped while the screen was hidden (goes on when it is shown again)
        self.expanded: set[str] = set()
        self.marked: set[str] = set()  # row keys marked with space
        self._job_table: JobTable | None = None  # (looked up on every key by check_action: kept once found)
        self._offered: tuple = ()  # check_action of STATEFUL_ACTIONS when the footer was last drawn
        self.state_counts: Counter = Counter()
        self.shown = 0
        self.total = 0

    def compose(self) -> ComposeResult:
        yield ClusterBar()
        yield FilterBox(
            self._set_filter,
            placeholder="filter: words, field:value (cluster id name user state reason node kind gpus nnodes),"
            ' gpus:>4, -negate, "quoted words"',
            id="filter",
        )
        yield StatusLine(id="filter-error")
        yield QueueHint(id="queue-hint")
        yield Static(id="cluster-problems")
        yield JobTable(id="jobs")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#filter", Input).display = False
        self.query_one("#filter-error", Static).display = False
        self.query_one(JobTable).focus()
        self.refresh_data()

    # -- data --------------------------------------------------------------------------------------
    def refresh_data(self) -> None:
        with speed.collector_off(keep=True):  # (no GC pass over the lists of rows made here)
            self._refresh_data()

    def _refresh_data(self) -> None:
        table = self.query_one(JobTable)
        self._changes = self._closed_now = self._view_now = None  # (set by _closed_rows and _tell)
        rows = self._visible_rows()
        table.set_rows(rows, self._changes)
        self._shown_closed = (self._version, rows) if rows is self._closed_list else None
        self._given_closed, self._given_view = self._closed_now, self._view_now
        self._changes, self._delta = None, _Delta()
        if self._warmed != self._version and self._top:  # (once the new rows are painted)
            self._warmed, self._no_row, self._no_text, self._texts_warmed = self._version, None, None, False
            self._warm_paused = False
            if not self._catch_up():
                self.call_after_refresh(self._warm_later)
        elif self._warm_paused:  # on show again (``on_screen_resume``): warming goes on where it stopped
            self._warm_paused = False
            self._warm_later()
        self.query_one(QueueHint).show_for(self.shown, self.total, not self.job_filter.empty, not self.app.all_users)
        self._show_problems()
        self._update_bindings()
        self.refresh_bar()

    def _show_problems(self) -> None:
        """One line per cluster that lists no jobs because it is not healthy: its state and error."""
        problems = cluster_problems(s for s in self.app.hub.snapshots.values() if not s.jobs)
        box = self.query_one("#cluster-problems", Static)
        box.display = bool(problems)
        if problems:
            out = Text(no_wrap=True, overflow="ellipsis")
            for i, (name, problem) in enumerate(problems.items()):
                out.append("\n" if i else "")
                out.append(clean(name), "bold")
                out.append(f": {clean(problem)}")
            out.append("  (5: details)", "dim")
            box.update(out)

    def _update_bindings(self) -> None:
        """Redraw the footer only when the keys on offer changed (it is rebuilt whole: too slow
        for every cursor move or refresh)."""
        offered = tuple(self.check_action(action, ()) for action in STATEFUL_ACTIONS)
        if offered != self._offered:
            self._offered = offered
            self.refresh_bindings()

    def _sync(self) -> dict[str, str]:
        """Bring every cluster's entries up to date (mine or everyone's); the rows of clusters whose
        data did not change are reused as they are. Returns a note per cluster with old data."""
        hub = self.app.hub
        mine = not self.app.all_users
        rebuild = self._entries is None
        changed = False  # any job changed (its entry updated in place): the caches of rows go
        for name, snap in hub.snapshots.items():
            cluster = self._clusters.get(name)
            if cluster is None:
                cluster = self._clusters[name] = _ClusterJobs()
                rebuild = True
            # mine: where a cluster knows who I am (or knew, for its cached jobs), my jobs only
            me = (hub.backend(name).current_user or (snap.cached_user if snap.cached else "")) if mine else ""
            changed |= cluster.update(snap.jobs, me, snap.job_changes, snap.jobs_serial)
        ordered = [self._clusters[name] for name in sorted(self._clusters)]
        generations = tuple(cluster.generation for cluster in ordered)
        relist = rebuild or generations != self._generations  # jobs came, went or moved: the lists again
        if relist:
            patches: list[tuple[list[_Entry], list[_Entry]]] | None = (
                None if rebuild or len(generations) != len(self._generations) else []
            )
            for cluster, was in zip(ordered, self._generations):
                if patches is None or cluster.generation == was:
                    continue
                if cluster.generation != was + 1 or cluster.patched is None:
                    patches = None  # groups changed (or more than one update since): joined afresh
                else:
                    patches.append(cluster.patched)
            self._generations = generations
            if patches is None:
                self._delta = None  # (groups changed: the rows are compared in full next)
            self._top = list(chain.from_iterable(cluster.top for cluster in ordered))
            if patches is not None and self._entries is not None:  # top-level jobs in no group came or went
                entries = self._entries
                delta = self._delta
                for made, gone in patches:
                    for entry in gone:
                        entries.pop(entry.key, None)
                    for entry in made:
                        entries[entry.key] = entry
                    if delta is not None:
                        delta.gone.extend(gone)
                        delta.states.extend((entry.job.state, None, entry) for entry in gone)
                        delta.states.extend((None, entry.job.state, entry) for entry in made)
            else:
                self._children = {key: kids for cluster in ordered for key, kids in cluster.children.items()}
                self._entries = {}
                for cluster in ordered:
                    self._entries.update(cluster.by_key)
                entries, children = self._entries, self._children
                self._parent_of = {kid.key: entries[key] for key, kids in children.items() for kid in kids}
            self._joined = None  # (joined when next read)
        if self._delta is not None:
            for cluster in ordered:
                self._delta.states.extend(cluster.restated)
        if relist or changed:  # (changed alone: same jobs in the same groups, entries updated in place)
            self._version += 1
            self._matches.clear()
            self._unfiltered = None
        self.total = sum(len(snap.jobs) for snap in hub.snapshots.values())
        return {name: NOTES[snap.health] for name, snap in hub.snapshots.items() if snap.jobs and snap.health in NOTES}

    @property
    def _flat(self) -> list[_Entry]:
        """Every entry in default order, each group's members right after it."""
        return (self._joined or self._join())[0]

    @property
    def _group_at(self) -> list[int]:
        """Per ``_flat`` index: its group's index there, or -1 (not a member)."""
        return (self._joined or self._join())[1]

    @property
    def _groups(self) -> list[int]:
        """The ``_flat`` indices of groups."""
        return (self._joined or self._join())[2]

    def _join(self) -> tuple[list[_Entry], list[int], list[int]]:
        """``_flat``, ``_group_at`` and ``_groups`` from ``_top`` and ``_children``."""
        top, children = self._top, self._children
        flat: list[_Entry] = []
        group_of: list[int] = []
        groups: list[int] = []
        kid_lists = list(map(children.get, map(_ROW_KEY, top))) if children else []
        start = 0  # runs of top entries with no members go in whole: a turn per group, not per entry
        for i in compress(range(len(kid_lists)), kid_lists):
            flat.extend(top[start : i + 1])
            group_of.extend(repeat(-1, i + 1 - start))
            at = len(flat) - 1
            kids = kid_lists[i] or []
            groups.append(at)
            flat.extend(kids)
            group_of.extend(repeat(at, len(kids)))
            start = i + 1
        flat.extend(top[start:])
        group_of.extend(repeat(-1, len(top) - start))
        joined = self._joined = (flat, group_of, groups)
        return joined

    def _visible_rows(self) -> list[Row]:
        """The rows to show, in the default order (cluster, then id naturally), children under
        their group; the table applies any sort on top."""
        notes = self._sync()
        top, children = self._top, self._children
        if self.expanded:
            self.expanded = {key for key in self.expanded if key in children}
        entries = self._entries or {}
        if self.marked:
            self.marked = {key for key in self.marked if key in entries}
        clock = self._draw_clock()

        marked = self.marked
        if not self.job_filter.empty:
            return self._filtered_rows(clock, notes)
        if not children and not notes and not marked:  # the usual case, kept short
            plain, counts, made = self._closed_rows(clock)
            self._tell(list(map(plain.__getitem__, made)))
            self.state_counts, self.shown = counts, len(plain)
            self._closed_list = plain
            return plain
        depends = (self._version, frozenset(self.expanded), frozenset(marked), tuple(sorted(notes.items())))
        cached = self._unfiltered
        if cached is not None and cached[0] == depends:  # escape back to what was shown before the filter
            self.state_counts, self.shown = cached[2], len(cached[1])
            return cached[1]
        patched = self._toggled(cached, depends, clock, notes) if cached is not None else None
        if patched is not None:  # one group opened or closed (e): its rows put in or taken out
            self._unfiltered = (depends, *patched)
            self.state_counts, self.shown = patched[1], len(patched[0])
            return patched[0]
        if not marked and not notes and not self.expanded:  # every group closed: in C, but for rows to make
            rows, counts, made = self._closed_rows(clock)
            self._closed_list = rows
            self._tell(list(map(rows.__getitem__, made)))
            self._unfiltered = (depends, rows, counts)
            self.state_counts, self.shown = counts, len(rows)
            return rows
        edited = self._edited_rows(clock, notes) if len(self.expanded) + len(marked) <= EDITS else None
        if edited is not None:  # a few groups opened, a few jobs marked, old data noted: the rows above, edited
            self._unfiltered = (depends, *edited)
            self.state_counts, self.shown = edited[1], len(edited[0])
            return edited[0]
        rows = []
        counts = Counter()
        for entry in top:
            job = entry.job
            note = notes.get(job.cluster, "")
            kids = children.get(entry.key)
            mark = MARK if entry.key in marked else ""
            if not kids:
                rows.append(entry.row(clock, mark, 0, note, ""))
                counts[job.state] += 1
                continue
            open_ = entry.key in self.expanded
            rows.append(entry.row(clock, mark + (GROUP_OPEN if open_ else GROUP_CLOSED), _tasks(kids), note, ""))
            counts[job.state] += 1
            if open_:
                for kid in kids:
                    mark = MARK if kid.key in marked else ""
                    rows.append(kid.row(clock, mark + GROUP_CHILD, 0, note, entry.key))
                    counts[kid.job.state] += 1
        self._unfiltered = (depends, rows, counts)
        self.state_counts, self.shown = counts, len(rows)
        return rows

    def _closed_rows(self, clock: Callable[[], float]) -> tuple[list[Row], Counter, list[int]]:
        """The rows with every group closed and no marks or notes, the count of each state among them,
        and where rows were made now (groups, changed jobs; the others are taken as made, in C). When the
        rows given to the table last were made from these (``_given_closed``: their counts) and what
        changed since is known (``_delta``), the counts are those, moved by the changes."""
        top, children = self._top, self._children
        rows = list(map(_PLAIN_ROW, top))
        made = _unmade(rows)
        for at in made:  # groups, changed jobs
            entry = top[at]
            kids = children.get(entry.key)
            rows[at] = entry.row(clock, GROUP_CLOSED if kids else "", _tasks(kids), "", "")
        given, delta = self._given_closed, self._delta
        counts: Counter | None = None
        self._counted = False
        if given is not None and delta is not None:
            counts = Counter(given)
            parent_of = self._parent_of
            for before, after, entry in delta.states:
                if entry.key not in parent_of:  # (a group's member: not among these rows)
                    if before is not None:
                        counts[before] -= 1
                    if after is not None:
                        counts[after] += 1
            counts = Counter({state: n for state, n in counts.items() if n > 0})
            self._counted = counts.total() == len(top)
            if not self._counted:  # (the changes did not add up: counted afresh)
                counts = None
        if counts is None:
            counts = Counter(map(_STATE, top))
        self._closed_now = counts
        return rows, counts, made

    def _tell(self, put: list[Row], notes: dict[str, str] | None = None) -> None:
        """Tell the table what the rows about to be given differ in (``_changes``: ``put`` and the
        keys gone), when that is known: the rows given last were made the same way (the same groups
        opened, the same jobs marked, the same notes) and what changed since then is known."""
        view = (frozenset(self.expanded), frozenset(self.marked), tuple(sorted((notes or {}).items())))
        self._view_now = view
        delta = self._delta
        if self._counted and delta is not None and self._given_view == view:
            self._changes = RowChanges(put, [entry.key for entry in delta.gone])

    def _edited_rows(self, clock: Callable[[], float], notes: dict[str, str]) -> tuple[list[Row], Counter] | None:
        """The rows with every group closed (``_closed_rows``) and a few edited: the groups opened,
        with their members under them, the jobs marked, and the rows of clusters with old data
        (``notes``: each cluster's rows in ``_top`` are a run). None when one is not found there."""
        rows, counts, made = self._closed_rows(clock)
        entries, children, expanded, marked = self._entries or {}, self._children, self.expanded, self.marked
        top = self._top
        runs: list[tuple[int, int]] = []  # the runs of rows of the clusters noted
        noted: list[Row] = []
        if notes:
            start = 0
            for name in sorted(self._clusters):
                end = start + len(self._clusters[name].top)
                note = notes.get(name, "")
                if note:
                    run = top[start:end]
                    if any(entry.job.cluster != name for entry in run):
                        return None
                    runs.append((start, end))
                    rows[start:end] = again = [
                        entry.row(clock, GROUP_CLOSED if kids else "", _tasks(kids), note, "")
                        for entry in run
                        for kids in (children.get(entry.key),)
                    ]
                    noted += again
                start = end
        targets = set(expanded) | {key for key in marked if key not in self._parent_of}
        spots: dict[int, _Entry] = {}
        for key in targets:
            found = entries.get(key)
            at = self._top_index(found) if found is not None else None
            if found is None or at is None:
                return None
            spots[at] = found
        edited: list[Row] = []
        members: Counter = Counter()
        out: list[Row] = []
        start = 0
        for at in sorted(spots):
            entry = spots[at]
            out += rows[start:at]
            start = at + 1
            kids = children.get(entry.key)
            mark = MARK if entry.key in marked else ""
            note = notes.get(entry.job.cluster, "") if notes else ""
            if not kids:
                again = [entry.row(clock, mark, 0, note, "")]
            elif entry.key not in expanded:
                again = [entry.row(clock, mark + GROUP_CLOSED, _tasks(kids), note, "")]
            else:
                again = [entry.row(clock, mark + GROUP_OPEN, _tasks(kids), note, "")]
                for kid in kids:
                    again.append(kid.row(clock, (MARK if kid.key in marked else "") + GROUP_CHILD, 0, note, entry.key))
                    members[kid.job.state] += 1
            out += again
            edited += again
        out += rows[start:]
        put = [rows[at] for at in made if at not in spots and not any(lo <= at < hi for lo, hi in runs)]
        self._tell(put + [row for row in noted if row.key not in targets] + edited, notes)
        return out, counts + members if members else counts

    def _top_index(self, entry: _Entry) -> int | None:
        """Where ``entry`` is in ``_top`` (by cluster, then id: bisected), or None."""
        return _position(self._top, entry, _TOP_ORDER)

    def _toggled(
        self, cached: tuple[tuple, list[Row], Counter], depends: tuple, clock: Callable[[], float], notes: dict
    ) -> tuple[list[Row], Counter] | None:
        """The unfiltered rows ``cached`` with one group opened or closed, when that is all that
        changed: a copy with that group's rows put in or taken out, instead of every row again.
        None when something else changed too."""
        (version, was_open, marked, was_notes), rows, counts = cached
        if (version, marked, was_notes) != (depends[0], depends[2], depends[3]) or len(was_open ^ depends[1]) != 1:
            return None
        (key,) = was_open ^ depends[1]
        entry = (self._entries or {}).get(key)
        kids = self._children.get(key)
        if entry is None or not kids:
            return None
        table = self._table()
        at = table.cursor_row if table is not None and table.cursor_key == key else -1
        if not 0 <= at < len(rows) or rows[at].key != key:  # (the cursor's index is the row's, unsorted)
            try:
                at = list(map(_ROW_KEY, rows)).index(key)  # the group's row as shown (in C: a few ms at 100k)
            except ValueError:
                return None
        note = notes.get(entry.job.cluster, "")
        mark = MARK if key in marked else ""
        opening = key in depends[1]
        row = entry.row(clock, mark + (GROUP_OPEN if opening else GROUP_CLOSED), _tasks(kids), note, "")
        states = Counter(kid.job.state for kid in kids)
        if opening:
            members = [kid.row(clock, (MARK if kid.key in marked else "") + GROUP_CHILD, 0, note, key) for kid in kids]
            return [*rows[:at], row, *members, *rows[at + 1 :]], counts + states
        end = at + 1 + len(kids)
        if any(shown.parent != key for shown in rows[at + 1 : end]):
            return None
        return [*rows[:at], row, *rows[end:]], counts - states

    def _draw_clock(self) -> Callable[[], float]:
        """The clock a row's live cells read when drawn: the app's, looked up then (tests pin it)."""
        app = self.app

        def clock() -> float:
            return app.clock()

        return clock

    def _catch_up(self) -> bool:
        """After a refresh that changed few entries (at most ``CATCH_UP`` of them, in part), with the
        Queue on show: what the first filter keystroke needs for them made now, with the refresh,
        instead of in idle turns after it (their texts, the filter's columns, the rows of the members
        and groups, measured). A key typed right after the refresh (``/`` then a letter) leaves no
        idle turn, and that keystroke made them all itself: 100-200 ms at 100,000 jobs, 5% changed.
        True when done (else idle warming makes them, as at the first load)."""
        table = self._table()
        if table is None or not self.is_mounted or not self.app.shows(self):
            return False
        flat = self._flat
        no_text = sum(map(is_, map(_TEXTS, flat), repeat(None)))
        no_row = _unmade(map(_VIEW_ROW, flat))
        if no_text + len(no_row) > max(CATCH_UP_MIN, len(flat) * CATCH_UP):
            return False
        self._per_entry()  # (the texts not made yet first)
        self._kinds_now()
        clock = self._draw_clock()
        parent_of, children = self._parent_of, self._children
        made = [self._view_row(index, clock) for index in no_row]
        table.measure(row for row in made if row.key in parent_of or row.key in children)
        self._no_text, self._no_row, self._texts_warmed = [], [], True
        self.app.settled()  # (what was made lives on, as after idle warming)
        return True

    def _warm_later(self) -> None:
        """The next idle turn of ``_warm_members``, unless one is due already: one turn at a time,
        however many refreshes came meanwhile (each started another series, and a key waited for
        every turn due before it)."""
        if not self._warm_due:
            self._warm_due = True
            self.set_timer(WARM_SECONDS, self._warm_members)

    def _warm_members(self) -> None:
        """Make ahead, between keys, what the first filter keystroke needs: first what a bare word
        of the filter searches (``_texts``, for the entries a refresh changed: a first keystroke soon
        after a refresh found most of them not made, 20 ms at 100,000 jobs) and the filter's columns,
        then the rows of group members, a few at a time (that keystroke opens every group with a
        match, and ``e`` one): then they are made and measured. Stops when the entries change (the
        next refresh starts again); waits while keys come, and while the screen is hidden."""
        self._warm_due = False
        table = self._table()
        if self._warmed != self._version or table is None or not self.is_mounted:
            return
        if not self.app.shows(self):  # hidden (another screen on show, e.g. a log streaming): no idle work
            self._warm_paused = True
            return
        app = self.app
        since = app.idle_for()
        if since < WARM_AFTER_KEY:  # a key is being handled (/ right after a refresh): after it
            self._warm_due = True
            self.set_timer(WARM_AFTER_KEY - since, self._warm_members)
            return
        flat = self._flat
        until = time.perf_counter() + WARM_BUDGET  # (what is still to make is found in one pass in C)
        if not self._texts_warmed:
            missing = self._no_text
            if missing is None:  # the entries with no text, found in one pass in C
                missing = self._no_text = _unmade(map(_TEXTS, flat))
            while missing and time.perf_counter() < until:
                chunk = missing[-1024:]  # (a chunk all new, as at the first load: ~3 ms)
                del missing[-1024:]
                entries = list(map(flat.__getitem__, chunk))
                for entry, text in zip(entries, any_texts(list(map(_JOB, entries)))):
                    entry.text = text
            if not missing:  # every text made: the filter's columns (a few passes in C)
                self._texts_warmed = True
                self._per_entry()
                self._kinds_now()
                self.app.settled()  # (what was made lives on: out of the collector's sight, see speed.py)
            self._warm_later()
            return

        clock = self._draw_clock()
        parent_of, children = self._parent_of, self._children
        missing = self._no_row
        if missing is None:  # the entries with no view row yet, found in one pass in C (last first)
            missing = self._no_row = _unmade(map(_VIEW_ROW, flat))
            missing.reverse()
        made: list[Row] = []
        while missing and len(made) < WARM_ROWS and time.perf_counter() < until:
            index = missing.pop()
            if flat[index].view_row is not None:  # made meanwhile (a filter showed it)
                continue
            row = self._view_row(index, clock)
            key = flat[index].key
            if key in parent_of or key in children:  # a member, or a group (as opened)
                made.append(row)
        table.measure(made)
        if missing:
            self._warm_later()
        else:  # every row made and measured: they live on (a full GC pass over them came in the next key)
            self.app.settled()

    def _texts(self, start: int, end: int) -> list[str]:
        """The ``text`` of the entries ``_flat[start:end]``, made in one pass for those with none yet
        (an entry keeps its text until its job changes: a refresh makes only the changed ones')."""
        entries = self._flat[start:end]
        texts = list(map(_TEXTS, entries))
        missing = _unmade(texts)
        if missing:
            for at, text in zip(missing, any_texts([entries[at].job for at in missing])):
                texts[at] = entries[at].text = text
        return texts

    def _per_entry(self) -> tuple[JobColumns, list]:
        """The filter's fields (a column per field) and each entry's state, in ``_flat`` order, for
        this version of the entries."""
        columns = self._columns
        if columns is None or columns[0] != self._version:
            flat = self._flat
            texts = self._texts(0, len(flat))
            columns = self._columns = (self._version, JobColumns(_JobsOf(flat), texts), list(map(_STATE, flat)))
        return columns[1], columns[2]

    def _matching(self) -> list[int]:
        """The ``_flat`` indices of the entries the filter matches, in order. Only the matches of an
        earlier filter that this one narrows (a word typed on, a term added) are tested again, or the
        same filter's (a backspace); a few filters' matches are kept until the entries change."""
        job_filter = self.job_filter
        known = self._matches
        pool = known.get(job_filter.text)
        if pool is None:
            columns = self._per_entry()[0]
            narrowest: list[int] | None = None
            for text, matches in known.items():
                if (narrowest is None or len(matches) < len(narrowest)) and job_filter.narrows(compile_filter(text)):
                    narrowest = matches
            pool = job_filter.select(columns, narrowest)  # (narrowest None: every entry tested)
            if len(known) >= 16:
                del known[next(iter(known))]
            known[job_filter.text] = pool
        return pool

    def _filtered_rows(self, clock: Callable[[], float], notes: dict[str, str]) -> list[Row]:
        """The matching jobs, and the group of each matching member (opened), in default order:
        built from the matches alone, never from every job."""
        children, parent_of, marked, expanded = self._children, self._parent_of, self.marked, self.expanded
        if not notes and not marked:
            return self._filtered_view(clock)
        flat = self._flat
        matched = list(map(flat.__getitem__, self._matching()))
        hit_groups = {parent_of[e.key].key for e in matched if e.key in parent_of}
        shown: set[str] = set()  # group rows drawn
        rows: list[Row] = []
        counts: Counter = Counter()
        for entry in matched:
            job = entry.job
            note = notes.get(job.cluster, "") if notes else ""
            mark = MARK if marked and entry.key in marked else ""
            parent = parent_of.get(entry.key)
            if parent is None:
                kids = children.get(entry.key)
                if not kids:
                    rows.append(entry.row(clock, mark, 0, note, ""))
                else:
                    open_ = entry.key in hit_groups or entry.key in expanded
                    rows.append(
                        entry.row(clock, mark + (GROUP_OPEN if open_ else GROUP_CLOSED), _tasks(kids), note, "")
                    )
                    shown.add(entry.key)
                counts[job.state] += 1
                continue
            if parent.key not in shown:  # a member matched, its group did not: the group row first
                shown.add(parent.key)
                group_mark = MARK if marked and parent.key in marked else ""
                kids = children[parent.key]
                rows.append(parent.row(clock, group_mark + GROUP_OPEN, _tasks(kids), note, ""))
                counts[parent.job.state] += 1
            rows.append(entry.row(clock, mark + GROUP_CHILD, 0, note, parent.key))
            counts[job.state] += 1
        self.state_counts, self.shown = counts, len(rows)
        return rows

    def _view_row(self, index: int, clock: Callable[[], float]) -> Row:
        """The row of ``_flat[index]`` as a filter shows it with no notes or marks (a group open)."""
        entry = self._flat[index]
        row = entry.view_row
        if row is None:
            group = self._group_at[index]
            if group >= 0:
                row = entry.row(clock, GROUP_CHILD, 0, "", self._flat[group].key)
            else:
                kids = self._children.get(entry.key)
                row = entry.row(clock, GROUP_OPEN if kids else "", _tasks(kids), "", "")
                entry.view_kids = _tasks(kids)
            entry.view_row = row
        return row

    def _filtered_view(self, clock: Callable[[], float]) -> list[Row]:
        """``_filtered_rows`` with no notes and no marks: the matches' indices and their groups',
        mapped to rows made once per entry (in C, but for rows not made yet and the groups: a
        group's members are right after it in ``_flat``, so whether one matched is a bisection).
        A matching group with no matching member shows closed. The last few are kept: a backspace gives
        the table the very list it showed (which it kept, and comes back to without looking at every row)."""
        key = (self._version, self.job_filter.text, frozenset(self.expanded))
        views = self._views
        known = views.get(key)
        if known is not None:
            self.state_counts, self.shown = known[1], len(known[0])
            return known[0]
        matched = self._matching()
        flat, children, expanded = self._flat, self._children, self.expanded
        added: list[int] = []  # groups shown for a matching member only
        closed: list[int] = []  # matching groups with no matching member (unless opened)
        end = len(matched)
        for index in self._groups:
            at = bisect_right(matched, index)  # the first match after the group: a member of it?
            matching = at > 0 and matched[at - 1] == index
            if at < end and matched[at] <= index + len(children[flat[index].key]):
                if not matching:
                    added.append(index)
            elif matching:
                closed.append(index)
            elif at == end:
                break  # no match from here on
        order = matched
        if added:  # put in among the matches, in order (slices: in C)
            order, start = [], 0
            for index in added:
                at = bisect_left(matched, index, start)
                order += matched[start:at]
                order.append(index)
                start = at
            order += matched[start:]
        rows = list(map(_VIEW_ROW, map(flat.__getitem__, order)))
        for at in _unmade(rows):  # not made yet
            rows[at] = self._view_row(order[at], clock)
        for index in closed:
            entry = flat[index]
            if entry.key not in expanded:
                rows[bisect_left(order, index)] = entry.row(clock, GROUP_CLOSED, len(children[entry.key]), "", "")
        shown = self._shown_closed
        if shown is not None and shown[0] == self._version and 2 * len(order) > len(flat):
            counts = self._from_closed(order, rows)  # (most jobs match: what differs from the rows on show)
        else:
            states = self._per_entry()[1]
            counts = Counter(map(states.__getitem__, order))
        if len(views) >= 4 or any(version != self._version for version, *_ in views):
            views.clear()  # (the rows of other versions are no use)
        views[key] = (rows, counts)
        self.state_counts, self.shown = counts, len(rows)
        return rows

    def _kinds_now(self) -> tuple[bytearray, Counter]:
        """Per ``_flat`` index, what its entry is (0: a job in no group, 1: a group, 2: a member), and
        how many entries are in each state, for this version of the entries."""
        kinds = self._kinds
        if kinds is None or kinds[0] != self._version:
            of = bytearray(map((-1).__lt__, self._group_at))  # members: 1 here, 2 below
            of = of.translate(bytes((0, 2)) + bytes(254))
            for index in self._groups:
                of[index] = 1
            states = self._per_entry()[1]  # (list.count compares by identity first: no hashing)
            kinds = self._kinds = (
                self._version,
                of,
                Counter({state: n for state in JobState if (n := states.count(state))}),
            )
        return kinds[1], kinds[2]

    def _from_closed(self, order: list[int], rows: list[Row]) -> Counter:
        """For filtered rows (``order``: their ``_flat`` indices; ``rows``) given over the rows on show
        when those are every group closed (``_shown_closed``): what differs from those, as
        ``_changes``: every group and member shown is put, every other entry shown is the very row on
        show (a job in no group shows its plain row either way), and the entries not in ``order`` that
        were on show are gone. Then the table compares no row (the rows on show are kept, for escape).
        Returns the count of each state among ``rows``, from the few left out."""
        kinds, states = self._kinds_now()
        flat = self._flat
        put = list(compress(rows, map(kinds.__getitem__, order)))
        left_out = _missing(order, len(flat))
        gone = [flat[index].key for index in left_out if kinds[index] != 2]
        self._changes = RowChanges(put, gone, keep=True)
        every = self._per_entry()[1]
        return states - Counter(map(every.__getitem__, left_out))

    def count_summary(self) -> Text:
        """Counts of the rows shown, for the header: ``shown 5 of 8: pending 2 · running 3`` (the
        total first: on a narrow screen the line is cut at the end)."""
        out = Text(f"shown {self.shown} of {self.total}", no_wrap=True, overflow="ellipsis")
        if self.marked:
            out.append(f", {len(self.marked)} marked", "bold magenta")
        for i, (state, n) in enumerate(sorted(self.state_counts.items(), key=lambda kv: kv[0].value)):
            out.append(": " if i == 0 else " · ", "dim")
            out.append(f"{state.value} {n}", STATE_STYLES.get(state, ""))
        return out

    def _table(self) -> JobTable | None:
        table = self._job_table
        if table is None:  # not composed yet (bindings are checked before that); then found once
            tables = self.query(JobTable)
            table = self._job_table = tables.first() if tables else None
        return table

    def _selected_key(self) -> str | None:
        table = self._table()
        return table.cursor_key if table is not None else None

    def selected_job(self) -> Job | None:
        key = self._selected_key()
        entry = self._entries.get(key) if key and self._entries else None
        return entry.job if entry is not None else None

    # -- actions -----------------------------------------------------------------------------------
    def marked_jobs(self) -> list[Job]:
        """The marked jobs, in the table's order."""
        entries = self._entries or {}
        table = self._table()
        keys = table.row_keys if table is not None else sorted(self.marked)
        return [entries[k].job for k in keys if k in self.marked and k in entries]

    def _targets(self, fits: Callable[[Job], bool]) -> list[Job]:
        """The jobs a verb is for: the marked ones it fits, else the highlighted one if it fits."""
        if self.marked:
            return [job for job in self.marked_jobs() if fits(job)]
        job = self.selected_job()
        return [job] if job is not None and fits(job) else []

    def _can_cancel(self, job: Job) -> bool:
        backend = self.app.hub.backend(job.cluster)
        return not job.state.terminal and backend.capabilities.cancel and not backend.read_only

    def _can(self, verb: str) -> Callable[[Job], bool]:
        def fits(job: Job) -> bool:
            backend = self.app.hub.backend(job.cluster)
            return verb in backend.capabilities.actions and not backend.read_only

        return fits

    def _any_action(self, job: Job) -> bool:
        backend = self.app.hub.backend(job.cluster)
        return bool(backend.capabilities.actions) and not backend.read_only

    def check_action(self, action: str, parameters) -> bool | None:
        if action in ("cancel", "submit", "actions", "verb") and self.app.read_only:
            return False  # removed, not just disabled: read-only shows no mutating key
        if action == "verb":
            verb = JOB_VERB.get(str(parameters[0])) if parameters else None
            if verb is None or not any(
                verb.verb in self.app.hub.backend(n).capabilities.actions for n in self.app.hub.names
            ):
                return False  # no cluster has it: no key at all
            return True if self._targets(self._can(verb.verb)) else None
        if action in ("cancel", "actions") and self.marked:
            return True if self._targets(self._can_cancel if action == "cancel" else self._any_action) else None
        if action == "actions" and not any(self.app.hub.backend(n).capabilities.actions for n in self.app.hub.names):
            return False  # no cluster has extra verbs: no key at all
        if action == "shell":
            return self._shell_action()
        if action == "toggle_group" and not self._children:
            return False
        if action in ("cancel", "logs", "open_job", "actions", "toggle_group"):
            job = self.selected_job()
            if job is None:
                return None
            backend = self.app.hub.backend(job.cluster)
            caps = backend.capabilities
            if action == "cancel":
                return None if (job.state.terminal or not caps.cancel or backend.read_only) else True
            if action == "actions":
                return True if caps.actions and not backend.read_only else None
            if action == "logs":
                return True if caps.logs else None
            if action == "toggle_group":
                return True if (job.key in self._children or self._group_of(job)) else None
        return True

    def _shell_action(self) -> bool | None:
        """A cluster without shells that says why (``no_shell``) keeps the key, so that ``x`` says it."""
        if self.app.read_only or not any(shell_key(self.app.hub.backend(n).capabilities) for n in self.app.hub.names):
            return False  # read-only, or no cluster opens shells: no key at all
        job = self.selected_job()
        if job is None:
            return None
        backend = self.app.hub.backend(job.cluster)
        return None if (job.state.terminal or not shell_key(backend.capabilities) or backend.read_only) else True

    @work(group="shell", exit_on_error=False)
    async def action_shell(self) -> None:
        job = self.selected_job()
        if job is not None and self._shell_action() is True:
            await open_shell(self.app, job)

    def refuses(self, what: str) -> bool:
        """Whether ``what`` is refused for the highlighted job (or every marked one) because its
        cluster is read-only."""
        if what == "submit":
            return False
        jobs = self.marked_jobs() if self.marked else [j for j in [self.selected_job()] if j is not None]
        return bool(jobs) and all(self.app.hub.backend(j.cluster).read_only for j in jobs)

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = True
        self.set_focus(box)  # at once, not a message later: the box and the table's focus drawn in one frame

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        if not box.display and not box.value and not self.filter_text:
            if self.marked:  # then the marks
                self.marked.clear()
                self.refresh_data()
                return
            raise SkipAction()  # nothing to leave
        box.value = ""
        box.display = False
        self._set_filter("")
        self.set_focus(self.query_one(JobTable))

    def _set_filter(self, value: str) -> None:
        """Apply ``value`` if it compiles; otherwise say why under the box and keep the last good one."""
        error = self.query_one("#filter-error", Static)
        try:
            compiled = compile_filter(value)
        except FilterError as exc:
            self.filter_error = str(exc)
            error.update(Text(clean(self.filter_error), no_wrap=True, overflow="ellipsis"))
            error.display = True
            return
        self.filter_error = ""
        error.display = False
        if compiled.text.strip() == self.filter_text:
            return
        self.filter_text, self.job_filter = compiled.text.strip(), compiled
        self.refresh_data()

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = bool(box.value)
        self.query_one("#filter-error", Static).display = box.display and bool(self.filter_error)
        self.set_focus(self.query_one(JobTable))

    @on(VirtualTable.RowSelected, "#jobs")
    def _row_selected(self) -> None:
        self.action_open_job()

    @on(VirtualTable.RowHighlighted, "#jobs")
    def _row_highlighted(self) -> None:
        self._update_bindings()

    def action_sort_next(self) -> None:
        """Sort by the next column; group members stay under their group."""
        self.query_one(JobTable).cycle_sort()

    def action_sort_reverse(self) -> None:
        self.query_one(JobTable).reverse_sort()

    def action_open_job(self) -> None:
        from yanflow_tui.screens.detail import JobDetailScreen  # imported when first opened (startup)

        job = self.selected_job()
        if job is not None:
            self.app.push_screen(JobDetailScreen(job))

    def action_logs(self) -> None:
        job = self.selected_job()
        if job is not None:
            self.app.open_logs(job)

    def _group_of(self, job: Job) -> str | None:
        key = _parent_key(job)
        return key if key in self._children else None

    def action_toggle_group(self) -> None:
        job = self.selected_job()
        if job is None:
            return
        key = job.key if job.key in self._children else self._group_of(job)
        if key is None:
            return
        if key in self.expanded:
            self.expanded.discard(key)
        else:
            self.expanded.add(key)
        self.refresh_data()
        if key not in self.expanded:  # collapsed, maybe from a child: cursor to the group
            self.query_one(JobTable).move_cursor_to_key(key)

    def action_toggle_mark(self) -> None:
        """Mark or unmark the highlighted row, then move down (space, space... marks a run of rows)."""
        job = self.selected_job()
        table = self._table()
        if job is None or table is None:
            return
        if job.key in self.marked:
            self.marked.discard(job.key)
        else:
            self.marked.add(job.key)
        self.refresh_data()
        table.action_cursor_down()

    def action_toggle_users(self) -> None:
        """Switch between my jobs and everyone's, on every cluster."""
        app = self.app
        app.set_all_users(not app.all_users)
        self.refresh_data()  # redraws the header bar too
        self.notify("showing every user's jobs" if app.all_users else "showing my jobs", timeout=1.5, markup=False)

    def action_widen_history(self) -> None:
        """List finished jobs further back, on every cluster that keeps a history."""
        app = self.app
        said = []
        for name in app.hub.names:
            backend = app.hub.backend(name)
            if backend.capabilities.history:
                try:
                    said.append(f"{name}: {backend.widen_history()}")
                except Exception as exc:
                    said.append(f"{name}: {error_text(exc)}")
        if not said:
            self.notify("no cluster here keeps a history of finished jobs", timeout=3, markup=False)
            return
        app.request_refresh()
        self.notify("\n".join(said), timeout=4, markup=False)

    def action_actions(self) -> None:
        if self.check_action("actions", ()) is not True:
            return
        jobs = self._targets(self._any_action)
        if not jobs:
            return
        verbs = list(dict.fromkeys(v for j in jobs for v in self.app.hub.backend(j.cluster).capabilities.actions))

        def chosen(verb: str | None) -> None:
            if not verb:
                return
            fit = [j for j in jobs if self._can(verb)(j)]
            keyed = next((v for v in JOB_VERBS if v.verb == verb and not v.args), None)
            if keyed is not None:  # a verb with a key of its own asks what it needs (a signal...)
                ask(self.app, keyed, fit, lambda args: self._perform(fit, verb, args), self._checker(fit, verb))
                return
            confirm(
                self.app, f"{verb.capitalize()} {targets_text(fit)}?", {}, lambda args: self._perform(fit, verb, args)
            )

        where = f"{jobs[0].cluster}/{jobs[0].id}" if len(jobs) == 1 else f"{len(jobs)} marked jobs"
        self.app.push_screen(ChoiceScreen(f"Action on {where}", verbs), chosen)

    def action_verb(self, name: str) -> None:
        """One of ``keys.JOB_VERBS`` (hold, resubmit...) on the marked jobs, or the highlighted one."""
        verb = JOB_VERB.get(name)
        if verb is None or self.check_action("verb", (name,)) is not True:
            return
        jobs = self._targets(self._can(verb.verb))
        if verb.prefill and len(jobs) == 1:
            self._prefill(verb, jobs[0])
            return
        if jobs:
            ask(self.app, verb, jobs, lambda args: self._perform(jobs, verb.verb, args), self._checker(jobs, verb.verb))

    @work(group="verb-defaults", exclusive=True, exit_on_error=False)
    async def _prefill(self, verb: JobVerb, job: Job) -> None:
        """A backend that gives the job back as a job file (``capabilities.job_files``): the Submit form
        with that file loaded and the larger values set, to review and submit. Else ask it what to offer
        (e.g. the doubled time limit), then the prefilled prompts."""
        backend = self.app.hub.backend(job.cluster)
        if verb.form and backend.capabilities.job_files:  # the job back in the Submit form, the larger values set there
            try:
                name, text, values = await self.app.hub.call(backend.job_file(job.id, dict(verb.args)))
                path = job_file_path(f"{job.cluster}-{name}")
                await asyncio.to_thread(private_file, path, text)
            except Exception as exc:
                self.app.report_error(f"{verb.label}: not offered", error_text(exc))
                return
            self.app.open_in_submit(str(path), values, job.cluster)
            return
        try:
            defaults = await self.app.hub.call(backend.verb_defaults(job.id, verb.verb, dict(verb.args)))
        except Exception as exc:
            self.app.report_error(f"{verb.label}: not offered", error_text(exc))
            return
        check = self._checker([job], verb.verb)
        if not defaults or verb.verb == "edit":  # nothing to prefill, or the field's value now in its prompt
            ask(self.app, verb, [job], lambda args: self._perform([job], verb.verb, args), check, defaults)
            return
        ask_values(self.app, verb, job, defaults, lambda args: self._perform([job], verb.verb, args), check)

    def _checker(self, jobs: Sequence[Job], verb: str) -> Callable[[dict[str, str]], str]:
        """The backends' own check of typed values (no I/O), run before the confirmation."""

        def check(args: dict[str, str]) -> str:
            for cluster in dict.fromkeys(job.cluster for job in jobs):
                try:
                    self.app.hub.backend(cluster).check_args(verb, args)
                except Exception as exc:
                    return f"{cluster}: {error_text(exc)}"
            return ""

        return check

    def _perform(self, jobs: Sequence[Job], verb: str, args: dict[str, str]) -> None:
        self._mutate(
            jobs,
            lambda job: self.app.hub.backend(job.cluster).perform(job.id, verb, args),
            f"{verb.capitalize()} failed",
            verb,
        )

    def action_submit(self) -> None:
        self.app.action_show("submit")

    def action_cancel(self) -> None:
        if self.check_action("cancel", ()) is not True:
            return
        jobs = self._targets(self._can_cancel)
        if jobs:
            confirm(self.app, f"Cancel {targets_text(jobs)}?", {}, lambda _: self._cancel(jobs))

    def _cancel(self, jobs: Sequence[Job]) -> None:
        self._mutate(jobs, lambda job: self.app.hub.backend(job.cluster).cancel(job.id), "Cancel failed", "cancelled")

    @work(group="mutate", exit_on_error=False)
    async def _mutate(
        self, jobs: Sequence[Job], call: Callable[[Job], Awaitable[str | None]], failed: str, done: str
    ) -> None:
        """Await a gated backend call (cancel, perform) for each job, with the hub's timeout; say how
        it went (what the backend said, or one line per failure). Marks of the jobs done are cleared."""
        said, errors = [], []
        for job in jobs:
            try:
                answer = await self.app.hub.call(call(job))
            except Exception as exc:
                errors.append(f"{job.cluster}/{job.id}: {error_text(exc)}")
                continue
            self.marked.discard(job.key)
            said.append(answer or f"{done}: job {job.id} on {job.cluster}")
        if errors:
            self.app.report_error(failed, "\n".join(errors))
        if said:
            summary = said if len(said) <= 3 else [*said[:2], f"{done}: {len(said)} jobs in all"]
            self.notify(clean("\n".join(summary)), markup=False)
        for cluster in dict.fromkeys(job.cluster for job in jobs):
            self.app.request_refresh(cluster)
        self.refresh_data()
