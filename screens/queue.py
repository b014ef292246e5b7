"""The Queue screen: every cluster's jobs in one table, updated in place by row key."""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Input

from yanflow_tui.hub import error_text
from yanflow_tui.model import Job
from yanflow_tui.sanitize import clean
from yanflow_tui.rows import JOB_COLUMNS, JOB_HEADERS, job_cells, job_matches
from yanflow_tui.screens.dialogs import ConfirmScreen, JobDetailScreen
from yanflow_tui.screens.widgets import ClusterBar, DataScreen


class JobTable(DataTable):
    BINDINGS = [Binding("enter", "select_cursor", "Open", id="open-job")]


def _id_order(cluster: str, job_id: str) -> tuple:
    return (cluster, 0, int(job_id), "") if job_id.isdigit() else (cluster, 1, 0, job_id)


def _sort_key(job: Job) -> tuple:
    return _id_order(job.cluster, job.id)


class QueueScreen(DataScreen):
    TITLE_TEXT = "Queue"
    BINDINGS = [
        Binding("slash", "filter", "Filter", id="filter-jobs"),
        Binding("l", "logs", "Logs", id="job-logs"),
        Binding("c", "cancel", "Cancel", id="cancel-job"),
        Binding("s", "submit", "Submit", id="submit-job"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="clear-filter"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.filter_text = ""
        self._jobs: dict[str, Job] = {}

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
        jobs = [j for snap in self.app.hub.snapshots.values() for j in snap.jobs if job_matches(j, self.filter_text)]
        jobs.sort(key=_sort_key)
        wanted = {job.key: job for job in jobs}
        selected = self._selected_key()
        for key in [k for k in self._jobs if k not in wanted]:
            table.remove_row(key)
            del self._jobs[key]
        now = self.app.clock()
        appended = False
        for key, job in wanted.items():
            cells = job_cells(job, now)
            old = self._jobs.get(key)
            if old is None:
                table.add_row(*cells, key=key)
                appended = True
            elif old != job or cells[7].plain != table.get_cell(key, "age").plain:
                for column, cell in zip(JOB_COLUMNS, cells):
                    table.update_cell(key, column, cell)
            self._jobs[key] = job
        if appended and len(wanted) > 1:
            table.sort("cluster", "id", key=lambda cells: _id_order(cells[0].plain, cells[1].plain))
        if selected in wanted and table.row_count:
            table.move_cursor(row=table.get_row_index(selected), animate=False)
        self.refresh_bindings()

    def _selected_key(self) -> str | None:
        table = self.query_one(JobTable)
        if not table.row_count:
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
        if action in ("cancel", "submit") and self.app.read_only:
            return False  # removed, not just disabled: read-only shows no mutating key
        if action in ("cancel", "logs", "open_job"):
            job = self.selected_job()
            if job is None:
                return None
            caps = self.app.hub.backend(job.cluster).capabilities
            if action == "cancel":
                return None if (job.state.terminal or not caps.cancel or self.app.hub.backend(job.cluster).read_only) else True
            if action == "logs":
                return True if caps.logs else None
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
