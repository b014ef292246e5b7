"""One cluster's jobs as the Queue lists them, with no Textual: an ``Entry`` per job (what the Queue
derives from it, kept until the job changes: its rows, sort values, filter text) and ``ClusterJobs``
(the entries, the groups and their default order, kept in place from one snapshot to the next). The
helpers here find entries in those lists; ``queueview.py`` joins every cluster's lists into rows."""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from itertools import compress, count, repeat
from operator import attrgetter, is_, is_not, not_

from yanflow_tui.model import Job, JobChanges, JobState
from yanflow_tui.screens.render.rows import job_live_cells, job_sort_values
from yanflow_tui.screens.widgets.tabledata import Row


def tasks(kids: list[Entry] | None) -> int:
    """A group row's count: its members' tasks (a pending array remainder's one row holds several)."""
    return sum([kid.job.tasks for kid in kids]) if kids else 0


def parent_key(job: Job) -> str:
    """The row key of the group ``job`` belongs under; "" for a top-level job."""
    return f"{job.cluster}/{job.parent}" if job.parent else ""


STATE = attrgetter("job.state")
ROW_KEY = attrgetter("key")
_JOB_ID = attrgetter("id")
VIEW_ROW = attrgetter("view_row")
PLAIN_ROW = attrgetter("plain_row")
TEXTS = attrgetter("text")
JOB = attrgetter("job")


class Entry:
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
        "phrase",
    )

    def __init__(self, job: Job, key: str, phrase: Callable[[str], str] | None = None) -> None:
        self.key = key
        self.phrase = phrase  # the cluster's short phrase of a reason, for the REASON cell (None: as it is)
        self.sort: tuple = ()
        self._marker, self._count, self._note, self._parent = "", 0, "", ""  # what ``_row`` was made for
        # an earlier version of the job, and the marker, count, note and cells of a row made for it
        self._like: tuple[Job, str, int, str, tuple] | None = None
        self.set_job(job, None)

    def set_job(self, job: Job, previous: Job | None) -> None:
        if previous is not None and self._row is not None:  # its cells, for the next version's row to reuse
            self._like = (previous, self._marker, self._count, self._note, self._row.cells)
        self.job = job
        self.text: str | None = None  # the job's ``JobFields.any``, once made (see QueueView._texts)
        self.sort = job_sort_values(job, previous, self.sort if previous is not None else None)
        self.plain_row: Row | None = None  # the row as a top-level job of a fresh cluster, once made
        self.view_row: Row | None = None  # the row as a filter shows it (groups open), once made
        self.view_kids = 0  # a group's: how many members ``view_row`` says it has (0: not a group's row)
        self._row: Row | None = None
        self._other: tuple | None = None  # the version before: (marker, count, note, parent, row)

    @property
    def old_version(self) -> Job | None:
        """The job's version before ``set_job``, while kept for the next row to reuse its cells."""
        return self._like[0] if self._like is not None else None

    def row(self, clock: Callable[[], float], marker: str, count: int, note: str, parent: str) -> Row:
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
            cells = job_live_cells(self.job, clock, marker, count, note, base, self.phrase)
            row = Row(self.key, cells, self.sort, parent, "dim" if note else "")
        self._row = row
        self._marker, self._count, self._note, self._parent = marker, count, note, parent
        if not marker and not count and not note and not parent:
            self.plain_row = self.view_row = row  # (a top-level job with no group: a filter shows it so)
            self.view_kids = 0
        return row


class JobsOf(Collection[Job]):
    """The jobs of ``entries``, read where a filter's column needs them (most need none: a bare word)."""

    __slots__ = ("_entries",)

    def __init__(self, entries: list[Entry]) -> None:
        self._entries = entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Job]:
        return map(JOB, self._entries)

    def __contains__(self, job: object) -> bool:
        return any(map(is_, self, repeat(job)))


def _by_id(entry: Entry) -> tuple:
    return entry.sort[1]


def top_order(entry: Entry) -> tuple:
    """The Queue's default order of top-level entries: by cluster, then id."""
    return (entry.job.cluster, entry.sort[1])


def position(entries: list[Entry], entry: Entry, key: Callable[[Entry], tuple]) -> int | None:
    """Where ``entry`` itself is in ``entries`` (sorted by ``key``): bisected, then on past the
    entries of an equal key (ids of equal natural order: "07" and "7"); None when it is not there."""
    wanted = key(entry)
    at = bisect_left(entries, wanted, key=key)
    while at < len(entries) and entries[at] is not entry and key(entries[at]) == wanted:
        at += 1
    return at if at < len(entries) and entries[at] is entry else None


def unmade(values: Iterable[object]) -> list[int]:
    """The indices of ``values`` that are None (not made yet), found in one pass in C."""
    return list(compress(count(), map(is_, values, repeat(None))))


def _take_out(top: list[Entry], gone: list[Entry]) -> bool:
    """Take each of ``gone`` out of ``top`` (sorted by id) where bisection finds it; False (``top``
    as it was) when one is not there."""
    spots = []
    for entry in gone:
        at = position(top, entry, _by_id)
        if at is None:
            return False
        spots.append(at)
    for at in sorted(spots, reverse=True):
        del top[at]
    return True


class ClusterJobs:
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
        "phrase",
    )

    def __init__(self) -> None:
        self.generation = 0  # +1 each time the groups or the order changed
        self.jobs: tuple[Job, ...] | None = None
        self.me = ""
        self.serial = 0  # the backend's answer ``jobs`` came from (``JobList.serial``; 0: not known)
        # the entries put into and taken out of ``top`` when the last +1 of ``generation`` did only that
        self.patched: tuple[list[Entry], list[Entry]] | None = None
        self.restated: list[tuple[JobState, JobState, Entry]] = []  # the last update's changes of state
        self.by_id: dict[str, Entry] = {}
        self.by_key: dict[str, Entry] = {}
        self.top: list[Entry] = []
        self.children: dict[str, list[Entry]] = {}  # group row key -> its members
        self.job_of: dict[str, Job] = {}  # id -> the job its entry holds
        self.pool: Sequence[Job] = ()  # the jobs taken last (kept: ``seen`` holds their identities)
        self.seen: set[int] = set()
        self.exact = False  # ``pool`` and ``seen`` are the jobs taken last (not after a change list)
        self.named: set[str] = set()  # ids named as a parent, present or not
        self.phrase: Callable[[str], str] | None = None  # the backend's short phrase of a reason (Entry.phrase)

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

    def _apply(self, changes: JobChanges, me: str) -> tuple[list[Entry], list[Entry], int, bool]:
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
        children: dict[str, list[Entry]] = {}
        top: list[Entry] = []
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
                if entry.view_kids != tasks(kids):
                    entry.view_row = None
        top.sort(key=_by_id)
        for kids in children.values():
            kids.sort(key=_by_id)
        self.top, self.children = top, children
        self.named = {job.parent for job in self.job_of.values() if job.parent}

    def _take(self, news: Sequence[Job]) -> tuple[list[Entry], int, bool]:
        """Jobs new or in a new version into their entries: (entries made, how many changed, whether
        one moved to another group)."""
        job_of, by_id = self.job_of, self.by_id
        made: list[Entry] = []
        changed = 0
        moved = False
        for job in news:
            before = job_of.get(job.id)
            job_of[job.id] = job
            if before is None or (entry := by_id.get(job.id)) is None:
                entry = by_id[job.id] = Entry(job, job.key, self.phrase)
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

    def _compare_all(self, pool: Sequence[Job], moved: bool) -> tuple[list[Entry], list[Entry], int, bool]:
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

    def _patch(self, made: list[Entry], gone: list[Entry]) -> bool:
        """Top-level jobs in no group that came (``made``) or went (``gone``): out of the order and
        into it by id, when no group changes with them; False (nothing done) otherwise."""
        named, children = self.named, self.children
        if any(e.job.parent or e.job.id in named for e in made) or any(e.job.parent or e.key in children for e in gone):
            return False
        top, by_key = self.top, self.by_key
        if gone:
            went = {entry.key for entry in gone}
            if len(gone) * 64 > len(top) or not _take_out(top, gone):
                top = list(compress(top, map(not_, map(went.__contains__, map(ROW_KEY, top)))))
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
