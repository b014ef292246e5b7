"""What the Queue makes ahead while the user is idle, with no Textual and no timer: after a refresh
changed the entries, what the first filter keystroke needs (each entry's filter text, the filter's
columns), then the rows of group members and groups as a filter or ``e`` shows them, measured by the
table, a budget of time per turn. Members never shown, when there are ``LATER_FROM`` or more, get rows
with their cells ``LATER`` (a few thousand a turn, in C) that the table makes and measures in its own
turns, so that a keystroke typed soon after the first screen finds them all made. The screen runs the
turns on its timer; ``idle_for()`` says how long since the last key, ``settled()`` tells the collector
control that what was made lives on, ``measure(rows)`` has the table measure rows ahead."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from itertools import compress, repeat
from operator import is_

from yanflow_tui.filters import any_texts
from yanflow_tui.screens.models.joblist import JOB, TEXTS, VIEW_ROW, unmade
from yanflow_tui.screens.models.queueview import LATER_FROM, QueueView
from yanflow_tui.screens.widgets.tabledata import Row

WARM_ROWS = 500  # group members' rows made (and measured) per idle turn, before a filter or an expand shows them
WARM_BUDGET = 0.012  # seconds of such a turn spent on entries (made already or not), besides measuring
CATCH_UP, CATCH_UP_MIN = 0.15, 4096  # entries missing texts or rows, at most (a share of all): made with the refresh
LATER_CHUNK = 2048  # members given their LATER rows at a time (~3 ms with the table's part), from LATER_FROM on
WARM_AFTER_KEY = 0.05  # no such turn sooner after a key: none lands between the turns of its handling and its frame


class Warming:
    """The idle work for one version of ``view``'s entries (``begin`` after each refresh): ``catch_up``
    makes it all at once when little is missing, else ``turn`` makes a share of it per call."""

    def __init__(
        self,
        view: QueueView,
        measure: Callable[[Iterable[Row]], None],
        idle_for: Callable[[], float],
        settled: Callable[[], None],
        budget: float = WARM_BUDGET,
    ) -> None:
        self.view = view
        self._measure = measure
        self._idle_for = idle_for
        self._settled = settled
        self.budget = budget
        self.warmed = 0  # the entries version whose member rows are being made ahead
        self.no_row: list[int] | None = None  # the flat indices of entries with no view row yet, last first
        # the flat indices of entries whose text is still to make, ahead (they come first; None: not
        # looked for yet), and whether the filter's columns are made since
        self.no_text: list[int] | None = None
        self.texts_warmed = False
        # the flat indices of members still to give rows with their cells LATER (None: not looked for
        # yet; empty: too few to, their rows are made whole below)
        self.no_later: list[int] | None = None

    @property
    def stale(self) -> bool:
        """The entries changed since ``begin``: the next refresh begins again."""
        return self.warmed != self.view.version

    def begin(self) -> bool:
        """After rows were given: True when the entries changed (and there are some), and warming starts
        afresh for them."""
        view = self.view
        if self.warmed == view.version or not view.top:
            return False
        self.warmed, self.no_row, self.no_text, self.texts_warmed = view.version, None, None, False
        self.no_later = None
        return True

    def catch_up(self, clock: Callable[[], float]) -> bool:
        """After a refresh that changed few entries (at most ``CATCH_UP`` of them, in part), with the
        Queue on show: what the first filter keystroke needs for them made now, with the refresh,
        instead of in idle turns after it (their texts, the filter's columns, the rows of the members
        and groups, measured). A key typed right after the refresh (``/`` then a letter) leaves no
        idle turn, and that keystroke made them all itself: 100-200 ms at 100,000 jobs, 5% changed.
        True when done (else idle turns make them, as at the first load)."""
        view = self.view
        flat = view.flat
        no_text = sum(map(is_, map(TEXTS, flat), repeat(None)))
        no_row = unmade(map(VIEW_ROW, flat))
        if no_text + len(no_row) > max(CATCH_UP_MIN, len(flat) * CATCH_UP):
            return False
        view.per_entry()  # (the texts not made yet first)
        view.kinds()
        parent_of, children = view.parent_of, view.children
        made = [view.view_row(index, clock) for index in no_row]
        self._measure(row for row in made if row.key in parent_of or row.key in children)
        self.no_text, self.no_row, self.texts_warmed = [], [], True
        self._settled()  # (what was made lives on, as after idle warming)
        return True

    def turn(self, clock: Callable[[], float]) -> float | None:
        """One idle turn: first what a bare word of the filter searches (each entry's text, for the
        entries a refresh changed: a first keystroke soon after a refresh found most of them not
        made, 20 ms at 100,000 jobs) and the filter's columns, then the rows of group members (that
        keystroke opens every group with a match, and ``e`` one): many members get ``LATER`` rows a chunk
        at a time (``QueueView.later_rows``; 51,000 at 100,000 jobs: 25-30 ms of a keystroke typed
        before), handed to the table to measure; the others, and the groups, are made and measured a few
        at a time. Returns None when all is made; else the seconds to wait at least before the
        next turn (0: no more than the usual pause; more while keys come)."""
        since = self._idle_for()
        if since < WARM_AFTER_KEY:  # a key is being handled (/ right after a refresh): after it
            return WARM_AFTER_KEY - since
        view = self.view
        flat = view.flat
        until = time.perf_counter() + self.budget  # (what is still to make is found in one pass in C)
        if not self.texts_warmed:
            missing = self.no_text
            if missing is None:  # the entries with no text, found in one pass in C
                missing = self.no_text = unmade(map(TEXTS, flat))
            texts_made = bool(missing)
            while missing and time.perf_counter() < until:
                chunk = missing[-1024:]  # (a chunk all new, as at the first load: ~3 ms)
                del missing[-1024:]
                entries = list(map(flat.__getitem__, chunk))
                for entry, text in zip(entries, any_texts(list(map(JOB, entries)))):
                    entry.text = text
            if texts_made:  # (texts made this turn; once all are, the filter's columns, then the kinds, get a turn
                return 0.0  # each: ~15 and ~10 ms at 100,000 jobs; with the last texts, one turn took 33 ms)
            if not view.columns_ready:
                view.per_entry()
            else:
                self.texts_warmed = True
                view.kinds()
                self._settled()  # (what was made lives on: out of the collector's sight)
            return 0.0

        if self.no_later is None:  # the members with no view row yet: given LATER rows when many (next turns)
            group_at = view.group_at
            unshown = unmade(map(VIEW_ROW, flat))
            members = list(compress(unshown, map((-1).__lt__, map(group_at.__getitem__, unshown))))
            self.no_later = members if len(members) >= LATER_FROM else []
            if members:  # (a pass over every entry: the chunks in the next turns)
                return 0.0
        later = self.no_later
        while later and time.perf_counter() < until:
            chunk = later[-LATER_CHUNK:]
            del later[-LATER_CHUNK:]
            chunk = list(compress(chunk, map(is_, map(VIEW_ROW, map(flat.__getitem__, chunk)), repeat(None))))
            self._measure(view.later_rows(chunk))  # (the table makes and measures them in its own turns; those
            # a filter gave rows meanwhile keep them: the table holds them)
        if later:
            return 0.0

        parent_of, children = view.parent_of, view.children
        missing = self.no_row
        if missing is None:  # the entries with no view row yet, found in one pass in C (last first)
            missing = self.no_row = unmade(map(VIEW_ROW, flat))
            missing.reverse()
        made: list[Row] = []
        while missing and len(made) < WARM_ROWS and time.perf_counter() < until:
            index = missing.pop()
            if flat[index].view_row is not None:  # made meanwhile (a filter showed it)
                continue
            row = view.view_row(index, clock)
            key = flat[index].key
            if key in parent_of or key in children:  # a member, or a group (as opened)
                made.append(row)
        self._measure(made)
        if missing:
            return 0.0
        self._settled()  # every row made and measured: they live on (a full GC pass over them came in the next key)
        return None
