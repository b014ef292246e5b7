"""The Queue screen: every cluster's jobs in one table, updated in place by row key.

Jobs with a ``parent`` (array tasks, pods of a multi-node job, trials) sit collapsed under their
group row; ``space`` expands or collapses it. Extra backend verbs (pause, activate...) are under
``a``; like cancel they are confirmed and go through the backend's gate."""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Input

from yanflow_tui.hub import error_text
from yanflow_tui.model import Job
from yanflow_tui.sanitize import clean
from yanflow_tui.rows import (GROUP_CHILD, GROUP_CLOSED, GROUP_OPEN, JOB_COLUMNS, JOB_HEADERS, job_cells,
                              job_matches, natural_key)
from yanflow_tui.screens.detail import JobDetailScreen
from yanflow_tui.screens.dialogs import ChoiceScreen, ConfirmScreen
from yanflow_tui.screens.widgets import ClusterBar, DataScreen


class JobTable(DataTable):
    BINDINGS = [Binding("enter", "select_cursor", "Open", id="open-job")]


def _order(cluster: str, job_id: str, parent: str = "") -> tuple:
    """Display order: by cluster, then id (naturally); a child right after its group row."""
    if parent:
        return (cluster, natural_key(parent), 1, natural_key(job_id))
    return (cluster, natural_key(job_id), 0, ())


def _parent_key(job: Job) -> str:
    """The row key of the group ``job`` belongs under; "" for a top-level job."""
    return f"{job.cluster}/{job.parent}" if job.parent else ""


class QueueScreen(DataScreen):
    TITLE_TEXT = "Queue"
    SHOWS_USERS = True
    BINDINGS = [
        Binding("slash", "filter", "Filter", id="filter-jobs"),
        Binding("l", "logs", "Logs", id="job-logs"),
        Binding("c", "cancel", "Cancel", id="cancel-job"),
        Binding("a", "actions", "Actions", id="job-actions"),
        Binding("space", "toggle_group", "Expand", id="toggle-group"),
        Binding("u", "toggle_users", "Mine/All", id="toggle-users"),
        Binding("s", "submit", "Submit", id="submit-job"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="clear-filter"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.filter_text = ""
        self._jobs: dict[str, Job] = {}
        self._cells: dict[str, tuple[str, ...]] = {}
        self._order: dict[tuple[str, str], tuple] = {}  # (cluster cell, id cell) -> display order
        self._children: dict[str, list[Job]] = {}  # group row key -> its jobs
        self.expanded: set[str] = set()

    def compose(self) -> ComposeResult:
        yield ClusterBar()
        yield Input(placeholder="filter: text in cluster, id, name, user, state, reason", id="filter")
        yield JobTable(id="jobs", cursor_type="row", zebra_stripes=True, cursor_foreground_priority="renderable")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(JobTable)
        for key, header in zip(JOB_COLUMNS, JOB_HEADERS):
            table.add_column(header, key=key)
        self.query_one("#filter", Input).display = False
        table.focus()
        self.refresh_data()

    # -- data --------------------------------------------------------------------------------------
    def refresh_data(self) -> None:
        table = self.query_one(JobTable)
        rows = self._visible_rows()
        wanted = {job.key: (job, marker, count) for job, marker, count in rows}
        selected = self._selected_key()
        for key in [k for k in self._jobs if k not in wanted]:
            table.remove_row(key)
            del self._jobs[key], self._cells[key]
        now = self.app.clock()
        appended = False
        self._order = {}
        for key, (job, marker, count) in wanted.items():
            cells = job_cells(job, now, marker, count)
            plain = tuple(c.plain for c in cells)
            self._order[(plain[0], plain[1])] = _order(job.cluster, job.id, job.parent if marker == GROUP_CHILD else "")
            if key not in self._jobs:
                table.add_row(*cells, key=key)
                appended = True
            elif plain != self._cells[key]:
                for column, cell, before, after in zip(JOB_COLUMNS, cells, self._cells[key], plain):
                    if before != after:
                        table.update_cell(key, column, cell)
            self._jobs[key], self._cells[key] = job, plain
        if appended and len(wanted) > 1:
            order = self._order
            table.sort("cluster", "id", key=lambda cells: order.get((cells[0].plain, cells[1].plain), ()))
        if appended:
            # DataTable widens columns for new rows on idle but keeps rows rendered at the old
            # width in its cache (Textual 8.2); repaint once the widths are known.
            self.call_after_refresh(table.notify_style_update)
        if selected in wanted and table.row_count:
            table.move_cursor(row=table.get_row_index(selected), animate=False)
        self.refresh_bindings()

    def _visible_rows(self) -> list[tuple[Job, str, int]]:
        """(job, id marker, child count) for every row to show, groups first, children under them."""
        hub = self.app.hub
        jobs = [j for snap in hub.snapshots.values() for j in snap.jobs]
        if not self.app.all_users:  # mine: where a cluster knows who I am, my jobs only
            me = {name: hub.backend(name).current_user for name in hub.names}
            jobs = [j for j in jobs if not me.get(j.cluster) or j.user == me[j.cluster]]
        keys = {j.key for j in jobs}
        children: dict[str, list[Job]] = {}
        top: list[Job] = []
        for job in jobs:
            parent_key = _parent_key(job)
            if parent_key and parent_key in keys and parent_key != job.key:
                children.setdefault(parent_key, []).append(job)
            else:
                top.append(job)
        self._children = children
        self.expanded &= set(children)
        needle = self.filter_text
        rows: list[tuple[Job, str, int]] = []
        for job in top:
            kids = children.get(job.key, [])
            shown_kids = [k for k in kids if job_matches(k, needle)] if needle else kids
            if needle and not job_matches(job, needle) and not shown_kids:
                continue
            if not kids:
                rows.append((job, "", 0))
                continue
            open_ = job.key in self.expanded or bool(needle and shown_kids)
            rows.append((job, GROUP_OPEN if open_ else GROUP_CLOSED, len(kids)))
            if open_:
                rows.extend((kid, GROUP_CHILD, 0) for kid in shown_kids)
        return rows

    def _selected_key(self) -> str | None:
        tables = self.query(JobTable)  # empty until composed; bindings are checked before that
        table = tables.first() if tables else None
        if table is None or not table.row_count:
            return None
        try:
            return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        except Exception:  # noqa: BLE001 - cursor outside the table
            return None

    def selected_job(self) -> Job | None:
        key = self._selected_key()
        return self._jobs.get(key) if key else None

    # -- actions -----------------------------------------------------------------------------------
    def check_action(self, action: str, parameters) -> bool | None:
        if action in ("cancel", "submit", "actions") and self.app.read_only:
            return False  # removed, not just disabled: read-only shows no mutating key
        if action == "actions" and not any(self.app.hub.backend(n).capabilities.actions for n in self.app.hub.names):
            return False  # no cluster has extra verbs: no key at all
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

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = True
        box.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = ""
        box.display = False
        self.query_one(JobTable).focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        self.refresh_data()

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = bool(box.value)
        self.query_one(JobTable).focus()

    @on(DataTable.RowSelected)
    def _row_selected(self) -> None:
        self.action_open_job()

    @on(DataTable.RowHighlighted)
    def _row_highlighted(self) -> None:
        self.refresh_bindings()

    def action_open_job(self) -> None:
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
        if key not in self.expanded and key in self._jobs:  # collapsed, maybe from a child: cursor to the group
            table = self.query_one(JobTable)
            table.move_cursor(row=table.get_row_index(key), animate=False)

    def action_toggle_users(self) -> None:
        """Switch between my jobs and everyone's, on every cluster."""
        app = self.app
        app.all_users = not app.all_users
        for name in app.hub.names:
            app.hub.backend(name).set_all_users(app.all_users)
        self.refresh_data()
        self.refresh_bar()
        app.request_refresh()
        self.notify("showing every user's jobs" if app.all_users else "showing my jobs", timeout=1.5, markup=False)

    def action_actions(self) -> None:
        job = self.selected_job()
        if job is None or self.check_action("actions", ()) is not True:
            return
        verbs = list(self.app.hub.backend(job.cluster).capabilities.actions)

        def chosen(verb: str | None) -> None:
            if verb:
                def answered(yes: bool | None) -> None:
                    if yes:
                        self._perform(job, verb)

                self.app.push_screen(ConfirmScreen(f"{verb.capitalize()} job {job.id} ({job.name}) on {job.cluster}?"),
                                     answered)

        self.app.push_screen(ChoiceScreen(f"Action on {job.cluster}/{job.id}", verbs), chosen)

    @work(group="perform", exit_on_error=False)
    async def _perform(self, job: Job, verb: str) -> None:
        hub = self.app.hub
        try:
            await hub.call(hub.backend(job.cluster).perform(job.id, verb))
        except Exception as exc:  # noqa: BLE001 - every failure becomes a notification
            self.app.report_error(f"{verb.capitalize()} failed", error_text(exc))
            return
        self.notify(clean(f"{verb}: job {job.id} on {job.cluster}"), markup=False)
        self.app.request_refresh(job.cluster)

    def action_submit(self) -> None:
        self.app.action_show("submit")

    def action_cancel(self) -> None:
        job = self.selected_job()
        if job is None or self.check_action("cancel", ()) is not True:
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._cancel(job)

        self.app.push_screen(ConfirmScreen(f"Cancel job {job.id} ({job.name}) on {job.cluster}?"), answered)

    @work(group="cancel", exit_on_error=False)
    async def _cancel(self, job: Job) -> None:
        hub = self.app.hub
        try:
            await hub.call(hub.backend(job.cluster).cancel(job.id))
        except Exception as exc:  # noqa: BLE001 - every failure becomes a notification
            self.app.report_error("Cancel failed", error_text(exc))
            return
        self.notify(clean(f"cancelled job {job.id} on {job.cluster}"), markup=False)
        self.app.request_refresh(job.cluster)
