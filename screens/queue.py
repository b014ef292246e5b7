"""The Queue screen: every cluster's jobs in one virtualised table, updated in place by row key.

Jobs with a ``parent`` (array tasks, pods of a multi-node job, trials) sit collapsed under their
group row; ``e`` expands or collapses it. ``/`` filters with the field language of
``yanflow_tui.filters``; ``o``/``O`` and header clicks sort (children stay under their group). Extra
backend verbs (pause, activate...) are under ``a``, and those of ``keys.JOB_VERBS`` (hold, resubmit...)
on keys of their own; like cancel they are confirmed and go through the backend's gate. ``space``
marks rows: cancel and every verb then act on the marked jobs, after one confirmation."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Input, Static

from yanflow_tui import queuecolumns, speed
from yanflow_tui.filters import FilterError, compile_filter
from yanflow_tui.hub import error_text
from yanflow_tui.keys import CANCEL_KEY, JOB_VERB, JOB_VERBS, JobVerb
from yanflow_tui.model import Job
from yanflow_tui.sanitize import clean
from yanflow_tui.screens.base import DataScreen
from yanflow_tui.screens.dialogs import ChoiceScreen
from yanflow_tui.screens.inside import open_shell, shell_key
from yanflow_tui.screens.job_verbs import actionable, call_each, cancellable, checker, fits_verb, prefill
from yanflow_tui.screens.models.joblist import parent_key
from yanflow_tui.screens.models.queueview import QueueView
from yanflow_tui.screens.models.warming import Warming
from yanflow_tui.screens.render.cluster_rows import cluster_problems
from yanflow_tui.screens.render.rows import (
    STATE_STYLES,
)
from yanflow_tui.screens.resume_flow import can_find_checkpoints, resume_job
from yanflow_tui.screens.verb_flow import ask, confirm, targets_text
from yanflow_tui.screens.widgets.cluster_bar import ClusterBar
from yanflow_tui.screens.widgets.filter_box import FilterBox
from yanflow_tui.screens.widgets.footer import Footer
from yanflow_tui.screens.widgets.queue_hint import QueueHint
from yanflow_tui.screens.widgets.status_line import StatusLine
from yanflow_tui.screens.widgets.table import Column, Row, VirtualTable

COLUMNS = tuple(  # the Queue's columns, declared in ``yanflow_tui.queuecolumns``
    Column(c.key, c.header, c.min_width, c.flex, c.floor, c.give_way, c.justify, c.style) for c in queuecolumns.COLUMNS
)
# actions whose key depends on the selected job or the data (see check_action)
STATEFUL_ACTIONS = ("cancel", "logs", "open_job", "actions", "toggle_group", "submit")
WARM_SECONDS = 0.005  # between two idle turns (a key waits for one at most): all done ~70 ms after a 5% refresh at 100k


class JobTable(VirtualTable):
    BINDINGS = [Binding("enter", "select_cursor", "Open", id="open-job")]

    def __init__(self, **kwargs) -> None:
        super().__init__(COLUMNS, **kwargs)


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
        Binding("y", "copy_id", "Copy id", show=False, id="copy-job-id"),
        Binding("escape", "clear_filter", "Clear filter / marks", show=False, id="clear-filter"),
        Binding(CANCEL_KEY, "clear_filter", "Clear filter / marks", show=False, id="clear-filter-alt"),
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
        Binding("C", "resume", "Resume from checkpoint", show=False, id="resume-job"),
        Binding("C", "app.refuse('resume')", "Resume (read-only)", show=False, id="resume-job-read-only"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.filter_text = ""
        self.filter_error = ""
        self.view = QueueView(self._cursor_at)  # the rows, their counts and every cache behind them
        self.warming = Warming(self.view, self._measure, self._idle_for, self._settled)
        self._warm_due = False  # a turn of _warm_members is due (see _warm_later)
        self._warm_paused = False  # it stopped while the screen was hidden (goes on when it is shown again)
        self._job_table: JobTable | None = None  # (looked up on every key by check_action: kept once found)
        self._offered: tuple = ()  # check_action of STATEFUL_ACTIONS when the footer was last drawn

    @property
    def marked(self) -> set[str]:
        """Row keys marked with space (the view's)."""
        return self.view.marked

    @property
    def expanded(self) -> set[str]:
        """Group row keys opened with ``e`` (the view's)."""
        return self.view.expanded

    def compose(self) -> ComposeResult:
        yield ClusterBar()
        yield FilterBox(
            self._set_filter,
            placeholder=queuecolumns.FILTER_PLACEHOLDER,
            id="filter",
        )
        yield QueueHint(id="queue-hint")
        yield Static(id="cluster-problems")
        yield JobTable(id="jobs")
        yield StatusLine(id="filter-error")  # under the rows, over the box (docked at the bottom)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#filter", Input).display = False
        self.query_one("#filter-error", Static).display = False
        table = self.query_one(JobTable)
        clock = self._draw_clock()
        table.make_row = lambda row: self.view.made_row(row, clock)  # (rows a filter gives LATER)
        table.focus()
        self.refresh_data()

    # -- data --------------------------------------------------------------------------------------
    def refresh_data(self) -> None:
        with speed.collector_off(keep=True):  # (no GC pass over the lists of rows made here)
            self._refresh_data()

    def _refresh_data(self) -> None:
        view = self.view
        rows = self._view_rows()
        self.query_one(JobTable).set_rows(rows, view.changes)
        view.given(rows)
        if self.warming.begin():  # the entries changed (once the new rows are painted)
            self._warm_paused = False
            if not self._catch_up():
                self.call_after_refresh(self._warm_later)
        elif self._warm_paused:  # on show again (``on_screen_resume``): warming goes on where it stopped
            self._warm_paused = False
            self._warm_later()
        self.query_one(QueueHint).show_for(view.shown, view.total, not view.job_filter.empty, not self.app.all_users)
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

    def _view_rows(self) -> list[Row]:
        """The view's rows for the hub's snapshots now: mine (where a cluster knows who I am, or knew for
        its cached jobs) or everyone's."""
        hub = self.app.hub
        users = {}
        if not self.app.all_users:
            for name, snap in hub.snapshots.items():
                users[name] = hub.backend(name).current_user or (snap.cached_user if snap.cached else "")
        self.view.idle = self.app.idle.idle_jobs()  # the jobs holding an idle GPU: once per refresh, not per row
        return self.view.visible_rows(hub.snapshots, users, self._draw_clock())

    def _draw_clock(self) -> Callable[[], float]:
        """The clock a row's live cells read when drawn: the app's, looked up then (tests pin it)."""
        app = self.app

        def clock() -> float:
            return app.clock()

        return clock

    def _cursor_at(self, key: str) -> int:
        """The table's cursor index when it is on ``key``, else -1 (for the view)."""
        table = self._table()
        return table.cursor_row if table is not None and table.cursor_key == key else -1

    def _measure(self, rows: Iterable[Row]) -> None:
        table = self._table()
        if table is not None:
            table.measure(rows)

    def _idle_for(self) -> float:
        """Seconds since the last key (the app keeps the time of each)."""
        return self.app.idle_for()

    def _settled(self) -> None:
        self.app.settled()  # (what was made lives on: out of the collector's sight, see speed.py)

    # -- idle warming (the work itself: models/warming.py) -----------------------------------------
    def _catch_up(self) -> bool:
        """With the Queue on show, what the first filter keystroke needs made with the refresh when
        few entries changed (``Warming.catch_up``); False: left to idle turns."""
        if self._table() is None or not self.is_mounted or not self.app.shows(self):
            return False
        return self.warming.catch_up(self._draw_clock())

    def _warm_later(self) -> None:
        """The next idle turn of ``_warm_members``, unless one is due already: one turn at a time,
        however many refreshes came meanwhile (each started another series, and a key waited for
        every turn due before it)."""
        if not self._warm_due:
            self._warm_due = True
            self.set_timer(WARM_SECONDS, self._warm_members)

    def _warm_members(self) -> None:
        """One idle turn of ``Warming``: stops when the entries change (the next refresh starts
        again); waits while keys come, and while the screen is hidden."""
        self._warm_due = False
        if self.warming.stale or self._table() is None or not self.is_mounted:
            return
        if not self.app.shows(self):  # hidden (another screen on show, e.g. a log streaming): no idle work
            self._warm_paused = True
            return
        wait = self.warming.turn(self._draw_clock())
        if wait:  # a key is being handled: after it
            self._warm_due = True
            self.set_timer(wait, self._warm_members)
        elif wait is not None:
            self._warm_later()

    def count_summary(self) -> Text:
        """Counts of the rows shown, for the header: ``shown 5 of 8: pending 2 · running 3`` (the
        total first: on a narrow screen the line is cut at the end)."""
        view = self.view
        out = Text(f"shown {view.shown} of {view.total}", no_wrap=True, overflow="ellipsis")
        if self.marked:
            out.append(f", {len(self.marked)} marked", "bold magenta")
        for i, (state, n) in enumerate(sorted(view.state_counts.items(), key=lambda kv: kv[0].value)):
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
        entries = self.view.entries
        entry = entries.get(key) if key and entries else None
        return entry.job if entry is not None else None

    # -- actions -----------------------------------------------------------------------------------
    def marked_jobs(self) -> list[Job]:
        """The marked jobs, in the table's order."""
        entries = self.view.entries or {}
        table = self._table()
        keys = table.row_keys if table is not None else sorted(self.marked)
        return [entries[k].job for k in keys if k in self.marked and k in entries]

    def _targets(self, fits: Callable[[Job], bool]) -> list[Job]:
        """The jobs a verb is for: the marked ones it fits, else the highlighted one if it fits."""
        if self.marked:
            return [job for job in self.marked_jobs() if fits(job)]
        job = self.selected_job()
        return [job] if job is not None and fits(job) else []

    def check_action(self, action: str, parameters) -> bool | None:
        if action == "resume":  # read-only: the refusing key instead
            return self._resume_action()
        if action in ("cancel", "submit", "actions", "verb") and self.app.read_only:
            return False  # removed, not just disabled: read-only shows no mutating key
        if action == "verb":
            verb = JOB_VERB.get(str(parameters[0])) if parameters else None
            if verb is None or not any(
                verb.verb in self.app.hub.backend(n).capabilities.actions for n in self.app.hub.names
            ):
                return False  # no cluster has it: no key at all
            return True if self._targets(fits_verb(self.app, verb.verb)) else None
        if action in ("cancel", "actions") and self.marked:
            return (
                True if self._targets(cancellable(self.app) if action == "cancel" else actionable(self.app)) else None
            )
        if action == "actions" and not any(self.app.hub.backend(n).capabilities.actions for n in self.app.hub.names):
            return False  # no cluster has extra verbs: no key at all
        if action == "shell":
            return self._shell_action()
        if action == "toggle_group" and not self.view.children:
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
                return True if (job.key in self.view.children or self._group_of(job)) else None
        return True

    def _resume_action(self) -> bool | None:
        """The resume key: where a cluster can find a job's checkpoints (its files, or checkpoints of its own)."""
        finds = [n for n in self.app.hub.names if can_find_checkpoints(self.app.hub.backend(n).capabilities)]
        if self.app.read_only or not finds:
            return False  # read-only, or no cluster can find a checkpoint: no key at all
        job = self.selected_job()
        return True if job is not None and job.cluster in finds else None

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
        if what in ("submit", "resume"):  # resume may go to another cluster: the form lists the writable ones
            return False
        jobs = self.marked_jobs() if self.marked else [j for j in [self.selected_job()] if j is not None]
        return bool(jobs) and all(self.app.hub.backend(j.cluster).read_only for j in jobs)

    def action_filter(self) -> None:
        self.query_one("#filter", FilterBox).open()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", FilterBox)
        if not box.display and not box.value and not self.filter_text:
            if self.marked:  # then the marks
                self.marked.clear()
                self.refresh_data()
                return
            raise SkipAction()  # nothing to leave
        box.close()
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
        self.filter_text, self.view.job_filter = compiled.text.strip(), compiled
        self.refresh_data()

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        box = self.query_one("#filter", FilterBox)
        box.done(keep=bool(box.value))
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

    def action_copy_id(self) -> None:
        """``y``: the highlighted job's id (the marked jobs' ids, one a line) to the clipboard (OSC 52)."""
        jobs = self.marked_jobs() if self.marked else [j for j in [self.selected_job()] if j is not None]
        if jobs:
            ids = "\n".join(job.id for job in jobs)
            self.app.copy_text(ids, "job id" if len(jobs) == 1 else f"{len(jobs)} job ids")

    def action_logs(self) -> None:
        job = self.selected_job()
        if job is not None:
            self.app.open_logs(job)

    def _group_of(self, job: Job) -> str | None:
        key = parent_key(job)
        return key if key in self.view.children else None

    def action_toggle_group(self) -> None:
        job = self.selected_job()
        if job is None:
            return
        key = job.key if job.key in self.view.children else self._group_of(job)
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
        jobs = self._targets(actionable(self.app))
        if not jobs:
            return
        verbs = list(dict.fromkeys(v for j in jobs for v in self.app.hub.backend(j.cluster).capabilities.actions))

        def chosen(verb: str | None) -> None:
            if not verb:
                return
            fit = [j for j in jobs if fits_verb(self.app, verb)(j)]
            keyed = next((v for v in JOB_VERBS if v.verb == verb and not v.args), None)
            if keyed is not None:  # a verb with a key of its own asks what it needs (a signal...)
                ask(self.app, keyed, fit, lambda args: self._perform(fit, verb, args), checker(self.app, fit, verb))
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
        jobs = self._targets(fits_verb(self.app, verb.verb))
        if verb.prefill and len(jobs) == 1:
            self._prefill(verb, jobs[0])
            return
        if jobs:
            ask(
                self.app,
                verb,
                jobs,
                lambda args: self._perform(jobs, verb.verb, args),
                checker(self.app, jobs, verb.verb),
            )

    @work(group="verb-defaults", exclusive=True, exit_on_error=False)
    async def _prefill(self, verb: JobVerb, job: Job) -> None:
        await prefill(self.app, verb, job, self._perform)

    def _perform(self, jobs: Sequence[Job], verb: str, args: dict[str, str]) -> None:
        self._mutate(
            jobs,
            lambda job: self.app.hub.backend(job.cluster).perform(job.id, verb, args),
            f"{verb.capitalize()} failed",
            verb,
        )

    def action_submit(self) -> None:
        self.app.action_show("submit")

    @work(group="resume", exclusive=True, exit_on_error=False)
    async def action_resume(self) -> None:
        """The Submit form on the highlighted job's spec, resuming from its newest checkpoint (``resume_flow``)."""
        job = self.selected_job()
        if job is not None:
            await resume_job(self.app, job)

    def action_cancel(self) -> None:
        if self.check_action("cancel", ()) is not True:
            return
        jobs = self._targets(cancellable(self.app))
        if jobs:
            confirm(self.app, f"Cancel {targets_text(jobs)}?", {}, lambda _: self._cancel(jobs))

    def _cancel(self, jobs: Sequence[Job]) -> None:
        self._mutate(jobs, lambda job: self.app.hub.backend(job.cluster).cancel(job.id), "Cancel failed", "cancelled")

    @work(group="mutate", exit_on_error=False)
    async def _mutate(
        self, jobs: Sequence[Job], call: Callable[[Job], Awaitable[str | None]], failed: str, done: str
    ) -> None:
        """The call for each job (``job_verbs.call_each``); marks of the jobs done are cleared."""
        await call_each(self.app, jobs, call, failed, done, lambda job: self.marked.discard(job.key))
        self.refresh_data()
