"""The Queue's rows, with no Textual: given every cluster's snapshot, whose jobs to list ("mine"), the
filter, the groups opened and the jobs marked, ``QueueView`` answers the rows to show (in the default
order: the table sorts on top), what they differ in from the rows given last (``RowChanges``, when
known) and the count of each state among them. It owns the caches that make a refresh or a keystroke
over 100,000 jobs cost little more than what changed: the joined lists, each filter's matches, the rows
last made for each view, the filter's columns. Each cache says what it was made for (the entries'
``version``, the view's groups, marks and notes) and is used only for that."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Mapping
from itertools import chain, compress, count, islice, repeat
from operator import attrgetter, ne, not_, sub
from typing import TYPE_CHECKING

from yanflow_tui.filters import JobColumns, JobFilter, any_texts, compile_filter
from yanflow_tui.hub import Health
from yanflow_tui.model import JobState
from yanflow_tui.screens.models.joblist import (
    PLAIN_ROW,
    ROW_KEY,
    STATE,
    TEXTS,
    VIEW_ROW,
    ClusterJobs,
    Entry,
    JobsOf,
    position,
    tasks,
    top_order,
    unmade,
)
from yanflow_tui.screens.render.rows import GROUP_CHILD, GROUP_CLOSED, GROUP_OPEN
from yanflow_tui.screens.widgets.tabledata import LATER, Row, RowChanges

if TYPE_CHECKING:
    from yanflow_tui.hub import ClusterSnapshot

NOTES = {Health.STALE: "stale", Health.ERROR: "error"}  # rows of a cluster whose data is old
MARK = "● "  # before the id of a marked row
IDLE_MARK = "▣ "  # before the id of a job holding an idle GPU (``yanflow_tui.idlegpus``), after MARK
EDITS = 64  # groups opened plus jobs marked up to which a refresh edits the rows with every group closed
# members' rows not made yet from which a filter gives them with their cells LATER (made as the table draws
# or measures them, ``made_row``): a first keystroke at 100,000 jobs shows ~50,000 never shown (issue #32)
LATER_FROM = 2048
_SORT = attrgetter("sort")


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


class Delta:
    """What changed in the entries since rows were last given to the table, while only top-level jobs
    in no group came or went: the entries gone, and each change of state as (before, after, entry)
    (None: made, or gone). Enough to tell the table what differs and to count the states shown."""

    __slots__ = ("gone", "states")

    def __init__(self) -> None:
        self.gone: list[Entry] = []
        self.states: list[tuple[JobState | None, JobState | None, Entry]] = []


class QueueView:
    """The Queue's rows and counts for the latest snapshots, and the caches behind them. The screen
    sets ``job_filter``, ``expanded`` and ``marked``, calls ``visible_rows`` on each refresh or key,
    gives the rows (with ``changes``) to its table, then calls ``given``. ``cursor_at(key)``: the
    table's cursor index when it is on ``key``, else -1 (where an opened group's row is looked for)."""

    def __init__(self, cursor_at: Callable[[str], int]) -> None:
        self._cursor_at = cursor_at
        self.job_filter: JobFilter = compile_filter("")
        self.expanded: set[str] = set()
        self.marked: set[str] = set()  # row keys marked with space
        self.idle: frozenset[str] = frozenset()  # row keys of jobs holding an idle GPU (set once per refresh)
        self._marks: dict[str, str] = {}  # row key -> its prefix (marked, idle), made by visible_rows
        self.state_counts: Counter = Counter()  # of the rows last made
        self.shown = 0
        self.total = 0
        self.clusters: dict[str, ClusterJobs] = {}
        self.entries: dict[str, Entry] | None = None  # every entry by row key, once synced
        self.children: dict[str, list[Entry]] = {}  # group row key -> its jobs
        self.top: list[Entry] = []  # entries not under a group, in default order (cluster, id)
        self._generations: tuple[int, ...] = ()  # each cluster's ``generation`` when they were joined
        # flat (every entry in default order, each group's members right after it), group_at, groups:
        # joined when first read after the lists changed (a filter, idle warming), not on every refresh
        self._joined: tuple[list[Entry], list[int], list[int]] | None = ([], [], [])
        self.parent_of: dict[str, Entry] = {}  # a member's row key -> its group's entry
        self._columns: tuple[int, JobColumns, list] | None = None  # (version, the filter's fields, each state)
        self.version = 0  # bumped whenever the entries change: the caches below are for one version
        self._matches: dict[str, list[int]] = {}  # filter text -> its matches' flat indices (a few kept)
        self._views: dict[tuple, tuple[list[Row], Counter]] = {}  # (version, filter, opened) -> its rows, counts
        self._unfiltered: tuple[tuple, list[Row], Counter] | None = None  # (what it depends on, rows, counts)
        # the rows last given to the table were every group closed, with these counts (else None), and
        # what changed since (None: not known); the next such rows then say what differs (_closed_rows)
        self._given_closed: Counter | None = None
        self._closed_now: Counter | None = None
        self._counted = False  # _closed_now was moved from _given_closed by the changes (and added up)
        # the groups opened, the jobs marked and the notes in the rows last given, when made by _closed_rows (and now)
        self._given_view: tuple[frozenset[str], frozenset[tuple[str, str]], tuple] | None = None
        self._view_now: tuple[frozenset[str], frozenset[tuple[str, str]], tuple] | None = None
        self._delta: Delta | None = None
        self.changes: RowChanges | None = None  # what the rows about to be given differ in, when known
        # the rows on show when they are every group closed, with no marks, notes or filter (made by
        # _closed_rows: a job in no group shows its ``plain_row``), and their entries' version; else None
        self._shown_closed: tuple[int, list[Row]] | None = None
        self._closed_list: list[Row] | None = None  # the last such rows made (set by visible_rows)
        self._kinds: tuple[int, bytearray, Counter] | None = None  # (version, kind per flat index, states)

    @property
    def columns_ready(self) -> bool:
        """The filter's columns are made for this version of the entries (no keystroke makes them)."""
        return self._columns is not None and self._columns[0] == self.version

    def given(self, rows: list[Row]) -> None:
        """``rows`` (from ``visible_rows``) were given to the table: what the next rows are told against."""
        self._shown_closed = (self.version, rows) if rows is self._closed_list else None
        self._given_closed, self._given_view = self._closed_now, self._view_now
        self.changes, self._delta = None, Delta()

    def _sync(self, snapshots: Mapping[str, ClusterSnapshot], users: Mapping[str, str]) -> dict[str, str]:
        """Bring every cluster's entries up to date (``users``: whose jobs each cluster lists, "" or
        absent: everyone's); the rows of clusters whose data did not change are reused as they are.
        Returns a note per cluster with old data."""
        rebuild = self.entries is None
        changed = False  # any job changed (its entry updated in place): the caches of rows go
        for name, snap in snapshots.items():
            cluster = self.clusters.get(name)
            if cluster is None:
                cluster = self.clusters[name] = ClusterJobs()
                cluster.phrase = snap.reason_phrase
                rebuild = True
            changed |= cluster.update(snap.jobs, users.get(name, ""), snap.job_changes, snap.jobs_serial)
        ordered = [self.clusters[name] for name in sorted(self.clusters)]
        generations = tuple(cluster.generation for cluster in ordered)
        relist = rebuild or generations != self._generations  # jobs came, went or moved: the lists again
        if relist:
            patches: list[tuple[list[Entry], list[Entry]]] | None = (
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
            self.top = list(chain.from_iterable(cluster.top for cluster in ordered))
            if patches is not None and self.entries is not None:  # top-level jobs in no group came or went
                entries = self.entries
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
                self.children = {key: kids for cluster in ordered for key, kids in cluster.children.items()}
                self.entries = {}
                for cluster in ordered:
                    self.entries.update(cluster.by_key)
                entries, children = self.entries, self.children
                self.parent_of = {kid.key: entries[key] for key, kids in children.items() for kid in kids}
            self._joined = None  # (joined when next read)
        if self._delta is not None:
            for cluster in ordered:
                self._delta.states.extend(cluster.restated)
        if relist or changed:  # (changed alone: same jobs in the same groups, entries updated in place)
            self.version += 1
            self._matches.clear()
            self._unfiltered = None
        self.total = sum(len(snap.jobs) for snap in snapshots.values())
        return {name: NOTES[snap.health] for name, snap in snapshots.items() if snap.jobs and snap.health in NOTES}

    @property
    def flat(self) -> list[Entry]:
        """Every entry in default order, each group's members right after it."""
        return (self._joined or self._join())[0]

    @property
    def group_at(self) -> list[int]:
        """Per ``_flat`` index: its group's index there, or -1 (not a member)."""
        return (self._joined or self._join())[1]

    @property
    def groups(self) -> list[int]:
        """The ``_flat`` indices of groups."""
        return (self._joined or self._join())[2]

    def _join(self) -> tuple[list[Entry], list[int], list[int]]:
        """``_flat``, ``_group_at`` and ``_groups`` from ``_top`` and ``_children``."""
        top, children = self.top, self.children
        flat: list[Entry] = []
        group_of: list[int] = []
        groups: list[int] = []
        kid_lists = list(map(children.get, map(ROW_KEY, top))) if children else []
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

    def visible_rows(
        self, snapshots: Mapping[str, ClusterSnapshot], users: Mapping[str, str], clock: Callable[[], float]
    ) -> list[Row]:
        """The rows to show for these snapshots (``users``: see ``_sync``), in the default order
        (cluster, then id naturally), children under their group; the table applies any sort on top.
        ``changes`` then says what they differ in from the rows given last (see ``given``), when known."""
        self.changes = self._closed_now = self._view_now = None  # (set by _closed_rows and _tell)
        notes = self._sync(snapshots, users)
        top, children = self.top, self.children
        if self.expanded:
            self.expanded = {key for key in self.expanded if key in children}
        entries = self.entries or {}
        if self.marked:
            self.marked = {key for key in self.marked if key in entries}
        marked = self._marks = self._marks_of(entries) if self.marked or self.idle else {}
        if not self.job_filter.empty:
            return self.filtered_rows(clock, notes)
        if not children and not notes and not marked:  # the usual case, kept short
            plain, counts, made = self._closed_rows(clock)
            self._tell(list(map(plain.__getitem__, made)))
            self.state_counts, self.shown = counts, len(plain)
            self._closed_list = plain
            return plain
        depends = (self.version, frozenset(self.expanded), frozenset(marked.items()), tuple(sorted(notes.items())))
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
            mark = marked.get(entry.key, "")
            if not kids:
                rows.append(entry.row(clock, mark, 0, note, ""))
                counts[job.state] += 1
                continue
            open_ = entry.key in self.expanded
            rows.append(entry.row(clock, mark + (GROUP_OPEN if open_ else GROUP_CLOSED), tasks(kids), note, ""))
            counts[job.state] += 1
            if open_:
                for kid in kids:
                    mark = marked.get(kid.key, "")
                    rows.append(kid.row(clock, mark + GROUP_CHILD, 0, note, entry.key))
                    counts[kid.job.state] += 1
        self._unfiltered = (depends, rows, counts)
        self.state_counts, self.shown = counts, len(rows)
        return rows

    def _marks_of(self, entries: Mapping[str, Entry]) -> dict[str, str]:
        """Each marked or idle row's prefix: a few keys, made once per ``visible_rows``."""
        marks = {key: IDLE_MARK for key in self.idle if key in entries}
        for key in self.marked:
            marks[key] = MARK + marks.get(key, "")
        return marks

    def _closed_rows(self, clock: Callable[[], float]) -> tuple[list[Row], Counter, list[int]]:
        """The rows with every group closed and no marks or notes, the count of each state among them,
        and where rows were made now (groups, changed jobs; the others are taken as made, in C). When the
        rows given to the table last were made from these (``_given_closed``: their counts) and what
        changed since is known (``_delta``), the counts are those, moved by the changes."""
        top, children = self.top, self.children
        rows = list(map(PLAIN_ROW, top))
        made = unmade(rows)
        for at in made:  # groups, changed jobs
            entry = top[at]
            kids = children.get(entry.key)
            rows[at] = entry.row(clock, GROUP_CLOSED if kids else "", tasks(kids), "", "")
        given, delta = self._given_closed, self._delta
        counts: Counter | None = None
        self._counted = False
        if given is not None and delta is not None:
            counts = Counter(given)
            parent_of = self.parent_of
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
            counts = Counter(map(STATE, top))
        self._closed_now = counts
        return rows, counts, made

    def _tell(self, put: list[Row], notes: dict[str, str] | None = None) -> None:
        """Tell the table what the rows about to be given differ in (``changes``: ``put`` and the
        keys gone), when that is known: the rows given last were made the same way (the same groups
        opened, the same jobs marked, the same notes) and what changed since then is known."""
        view = (frozenset(self.expanded), frozenset(self._marks.items()), tuple(sorted((notes or {}).items())))
        self._view_now = view
        delta = self._delta
        if self._counted and delta is not None and self._given_view == view:
            self.changes = RowChanges(put, [entry.key for entry in delta.gone])

    def _edited_rows(self, clock: Callable[[], float], notes: dict[str, str]) -> tuple[list[Row], Counter] | None:
        """The rows with every group closed (``_closed_rows``) and a few edited: the groups opened,
        with their members under them, the jobs marked, and the rows of clusters with old data
        (``notes``: each cluster's rows in ``_top`` are a run). None when one is not found there."""
        rows, counts, made = self._closed_rows(clock)
        entries, children, expanded, marked = self.entries or {}, self.children, self.expanded, self._marks
        top = self.top
        runs: list[tuple[int, int]] = []  # the runs of rows of the clusters noted
        noted: list[Row] = []
        if notes:
            start = 0
            for name in sorted(self.clusters):
                end = start + len(self.clusters[name].top)
                note = notes.get(name, "")
                if note:
                    run = top[start:end]
                    if any(entry.job.cluster != name for entry in run):
                        return None
                    runs.append((start, end))
                    rows[start:end] = again = [
                        entry.row(clock, GROUP_CLOSED if kids else "", tasks(kids), note, "")
                        for entry in run
                        for kids in (children.get(entry.key),)
                    ]
                    noted += again
                start = end
        targets = set(expanded) | {key for key in marked if key not in self.parent_of}
        spots: dict[int, Entry] = {}
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
            mark = marked.get(entry.key, "")
            note = notes.get(entry.job.cluster, "") if notes else ""
            if not kids:
                again = [entry.row(clock, mark, 0, note, "")]
            elif entry.key not in expanded:
                again = [entry.row(clock, mark + GROUP_CLOSED, tasks(kids), note, "")]
            else:
                again = [entry.row(clock, mark + GROUP_OPEN, tasks(kids), note, "")]
                for kid in kids:
                    again.append(kid.row(clock, marked.get(kid.key, "") + GROUP_CHILD, 0, note, entry.key))
                    members[kid.job.state] += 1
            out += again
            edited += again
        out += rows[start:]
        put = [rows[at] for at in made if at not in spots and not any(lo <= at < hi for lo, hi in runs)]
        self._tell(put + [row for row in noted if row.key not in targets] + edited, notes)
        return out, counts + members if members else counts

    def _top_index(self, entry: Entry) -> int | None:
        """Where ``entry`` is in ``_top`` (by cluster, then id: bisected), or None."""
        return position(self.top, entry, top_order)

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
        entry = (self.entries or {}).get(key)
        kids = self.children.get(key)
        if entry is None or not kids:
            return None
        at = self._cursor_at(key)
        if not 0 <= at < len(rows) or rows[at].key != key:  # (the cursor's index is the row's, unsorted)
            try:
                at = list(map(ROW_KEY, rows)).index(key)  # the group's row as shown (in C: a few ms at 100k)
            except ValueError:
                return None
        note = notes.get(entry.job.cluster, "")
        marks = self._marks
        mark = marks.get(key, "")
        opening = key in depends[1]
        row = entry.row(clock, mark + (GROUP_OPEN if opening else GROUP_CLOSED), tasks(kids), note, "")
        states = Counter(kid.job.state for kid in kids)
        if opening:
            members = [kid.row(clock, marks.get(kid.key, "") + GROUP_CHILD, 0, note, key) for kid in kids]
            return [*rows[:at], row, *members, *rows[at + 1 :]], counts + states
        end = at + 1 + len(kids)
        if any(shown.parent != key for shown in rows[at + 1 : end]):
            return None
        return [*rows[:at], row, *rows[end:]], counts - states

    def _texts(self, start: int, end: int) -> list[str]:
        """The ``text`` of the entries ``_flat[start:end]``, made in one pass for those with none yet
        (an entry keeps its text until its job changes: a refresh makes only the changed ones')."""
        entries = self.flat[start:end]
        texts = list(map(TEXTS, entries))
        missing = unmade(texts)
        if missing:
            for at, text in zip(missing, any_texts([entries[at].job for at in missing])):
                texts[at] = entries[at].text = text
        return texts

    def per_entry(self) -> tuple[JobColumns, list]:
        """The filter's fields (a column per field) and each entry's state, in ``_flat`` order, for
        this version of the entries."""
        columns = self._columns
        if columns is None or columns[0] != self.version:
            flat = self.flat
            texts = self._texts(0, len(flat))
            columns = self._columns = (self.version, JobColumns(JobsOf(flat), texts), list(map(STATE, flat)))
        return columns[1], columns[2]

    def matching(self) -> list[int]:
        """The ``_flat`` indices of the entries the filter matches, in order. Only the matches of an
        earlier filter that this one narrows (a word typed on, a term added) are tested again, or the
        same filter's (a backspace); a few filters' matches are kept until the entries change."""
        job_filter = self.job_filter
        known = self._matches
        pool = known.get(job_filter.text)
        if pool is None:
            columns = self.per_entry()[0]
            narrowest: list[int] | None = None
            for text, matches in known.items():
                if (narrowest is None or len(matches) < len(narrowest)) and job_filter.narrows(compile_filter(text)):
                    narrowest = matches
            pool = job_filter.select(columns, narrowest)  # (narrowest None: every entry tested)
            if len(known) >= 16:
                del known[next(iter(known))]
            known[job_filter.text] = pool
        return pool

    def filtered_rows(self, clock: Callable[[], float], notes: dict[str, str]) -> list[Row]:
        """The matching jobs, and the group of each matching member (opened), in default order:
        built from the matches alone, never from every job."""
        children, parent_of, marked, expanded = self.children, self.parent_of, self._marks, self.expanded
        if not notes and not marked:
            return self.filtered_view(clock)
        flat = self.flat
        matched = list(map(flat.__getitem__, self.matching()))
        hit_groups = {parent_of[e.key].key for e in matched if e.key in parent_of}
        shown: set[str] = set()  # group rows drawn
        rows: list[Row] = []
        counts: Counter = Counter()
        for entry in matched:
            job = entry.job
            note = notes.get(job.cluster, "") if notes else ""
            mark = marked.get(entry.key, "") if marked else ""
            parent = parent_of.get(entry.key)
            if parent is None:
                kids = children.get(entry.key)
                if not kids:
                    rows.append(entry.row(clock, mark, 0, note, ""))
                else:
                    open_ = entry.key in hit_groups or entry.key in expanded
                    rows.append(entry.row(clock, mark + (GROUP_OPEN if open_ else GROUP_CLOSED), tasks(kids), note, ""))
                    shown.add(entry.key)
                counts[job.state] += 1
                continue
            if parent.key not in shown:  # a member matched, its group did not: the group row first
                shown.add(parent.key)
                group_mark = marked.get(parent.key, "") if marked else ""
                kids = children[parent.key]
                rows.append(parent.row(clock, group_mark + GROUP_OPEN, tasks(kids), note, ""))
                counts[parent.job.state] += 1
            view = entry.view_row  # (unmarked, no note: the very row a filter shows, maybe made LATER)
            if view is not None and not mark and not note and view.parent == parent.key:
                rows.append(view)
            else:
                rows.append(entry.row(clock, mark + GROUP_CHILD, 0, note, parent.key))
            counts[job.state] += 1
        self.state_counts, self.shown = counts, len(rows)
        return rows

    def view_row(self, index: int, clock: Callable[[], float]) -> Row:
        """The row of ``_flat[index]`` as a filter shows it with no notes or marks (a group open)."""
        entry = self.flat[index]
        row = entry.view_row
        if row is None:
            group = self.group_at[index]
            if group >= 0:
                row = entry.row(clock, GROUP_CHILD, 0, "", self.flat[group].key)
            else:
                kids = self.children.get(entry.key)
                row = entry.row(clock, GROUP_OPEN if kids else "", tasks(kids), "", "")
                entry.view_kids = tasks(kids)
            entry.view_row = row
        return row

    def later_rows(self, indices: list[int]) -> list[Row]:
        """The view rows of the members ``_flat[indices]`` (each a member: ``group_at`` >= 0) with their
        cells ``LATER``, kept as the entries' view rows (a keystroke on gives the table the very rows
        again), in C."""
        flat = self.flat
        entries = list(map(flat.__getitem__, indices))
        parents = map(ROW_KEY, map(flat.__getitem__, map(self.group_at.__getitem__, indices)))
        fields = zip(map(ROW_KEY, entries), repeat(LATER), map(_SORT, entries), parents, repeat(""))
        later: list[Row] = list(map(tuple.__new__, repeat(Row), fields))  # (Row(*fields), in C)
        list(map(setattr, entries, repeat("view_row"), later))  # (entry.view_row = row, in C)
        return later

    def _members_later(self, order: list[int], rows: list[Row], missing: list[int]) -> list[int]:
        """``later_rows`` for the members among ``missing`` (positions in ``rows``, of the ``_flat``
        indices ``order``), put in ``rows``; returns the positions left to make (groups and jobs in no
        group: few)."""
        indices = list(map(order.__getitem__, missing))
        members = list(map((-1).__lt__, map(self.group_at.__getitem__, indices)))
        for at, row in zip(compress(missing, members), self.later_rows(list(compress(indices, members)))):
            rows[at] = row
        return list(compress(missing, map(not_, members)))

    def made_row(self, row: Row, clock: Callable[[], float]) -> Row | None:
        """The row that ``row``, given with its cells ``LATER`` (``_members_later``), stands for: its
        member's row as a filter shows it, made now; None when its job is gone."""
        entry = self.entries.get(row.key) if self.entries is not None else None
        return entry.row(clock, GROUP_CHILD, 0, "", row.parent) if entry is not None else None

    def filtered_view(self, clock: Callable[[], float]) -> list[Row]:
        """``_filtered_rows`` with no notes and no marks: the matches' indices and their groups',
        mapped to rows made once per entry (in C, but for rows not made yet and the groups: a
        group's members are right after it in ``_flat``, so whether one matched is a bisection).
        A matching group with no matching member shows closed. The last few are kept: a backspace gives
        the table the very list it showed (which it kept, and comes back to without looking at every row)."""
        key = (self.version, self.job_filter.text, frozenset(self.expanded))
        views = self._views
        known = views.get(key)
        if known is not None:
            self.state_counts, self.shown = known[1], len(known[0])
            return known[0]
        matched = self.matching()
        flat, children, expanded = self.flat, self.children, self.expanded
        added: list[int] = []  # groups shown for a matching member only
        closed: list[int] = []  # matching groups with no matching member (unless opened)
        end = len(matched)
        for index in self.groups:
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
        rows = list(map(VIEW_ROW, map(flat.__getitem__, order)))
        missing = unmade(rows)  # not made yet
        if len(missing) >= LATER_FROM:
            missing = self._members_later(order, rows, missing)
        for at in missing:
            rows[at] = self.view_row(order[at], clock)
        for index in closed:
            entry = flat[index]
            if entry.key not in expanded:
                rows[bisect_left(order, index)] = entry.row(clock, GROUP_CLOSED, len(children[entry.key]), "", "")
        shown = self._shown_closed
        if shown is not None and shown[0] == self.version and 2 * len(order) > len(flat):
            counts = self._from_closed(order, rows)  # (most jobs match: what differs from the rows on show)
        else:
            states = self.per_entry()[1]
            counts = Counter(map(states.__getitem__, order))
        if len(views) >= 4 or any(version != self.version for version, *_ in views):
            views.clear()  # (the rows of other versions are no use)
        views[key] = (rows, counts)
        self.state_counts, self.shown = counts, len(rows)
        return rows

    def kinds(self) -> tuple[bytearray, Counter]:
        """Per ``_flat`` index, what its entry is (0: a job in no group, 1: a group, 2: a member), and
        how many entries are in each state, for this version of the entries."""
        kinds = self._kinds
        if kinds is None or kinds[0] != self.version:
            of = bytearray(map((-1).__lt__, self.group_at))  # members: 1 here, 2 below
            of = of.translate(bytes((0, 2)) + bytes(254))
            for index in self.groups:
                of[index] = 1
            states = self.per_entry()[1]  # (list.count compares by identity first: no hashing)
            kinds = self._kinds = (
                self.version,
                of,
                Counter({state: n for state in JobState if (n := states.count(state))}),
            )
        return kinds[1], kinds[2]

    def _from_closed(self, order: list[int], rows: list[Row]) -> Counter:
        """For filtered rows (``order``: their ``_flat`` indices; ``rows``) given over the rows on show
        when those are every group closed (``_shown_closed``): what differs from those, as
        ``changes``: every group and member shown is put, every other entry shown is the very row on
        show (a job in no group shows its plain row either way), and the entries not in ``order`` that
        were on show are gone. Then the table compares no row (the rows on show are kept, for escape).
        Returns the count of each state among ``rows``, from the few left out."""
        kinds, states = self.kinds()
        flat = self.flat
        put = list(compress(rows, map(kinds.__getitem__, order)))
        left_out = _missing(order, len(flat))
        gone = [flat[index].key for index in left_out if kinds[index] != 2]
        self.changes = RowChanges(put, gone, keep=True)
        every = self.per_entry()[1]
        return states - Counter(map(every.__getitem__, left_out))
