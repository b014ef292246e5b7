"""The jobs on one node, opened from the Nodes screen: a table of the jobs whose node list names it
(or that hold one of its GPUs). ``enter`` opens a job's detail view, ``l`` its logs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from yanflow_tui.keys import CANCEL_KEY
from yanflow_tui.model import Job, Node
from yanflow_tui.sanitize import clean
from yanflow_tui.screens.detail import JobDetailScreen
from yanflow_tui.screens.render.rows import STATE_STYLES, age_text, natural_key, text

if TYPE_CHECKING:
    from textual import getters

    from yanflow_tui.app import YanflowApp


def jobs_on(node: Node, jobs: tuple[Job, ...] | list[Job]) -> list[Job]:
    """The live jobs on ``node``: those naming it in ``job.nodes`` or holding one of its GPUs, by id.
    Finished jobs have left the node; a group row (an array, a multi-node job) is listed through its
    members, not again as itself."""
    holders = {g.job_id for g in node.gpus if g.job_id}
    groups = {(j.cluster, j.parent) for j in jobs if j.parent}
    found = [
        j
        for j in jobs
        if not j.state.terminal and (j.cluster, j.id) not in groups and (node.name in j.nodes or j.id in holders)
    ]
    return sorted(found, key=lambda j: natural_key(j.id))


def gpus_held(node: Node, job: Job) -> str:
    """The indices of ``node``'s GPUs that ``job`` holds, where the backend says."""
    held = [str(g.index) for g in node.gpus if g.job_id == job.id]
    return ",".join(held) or "-"


class NodeJobsTable(DataTable):
    BINDINGS = [Binding("enter", "select_cursor", "Open", id="open-node-job")]


class NodeJobsScreen(ModalScreen[None]):
    """The jobs on one node. ``note`` says why the list is shown (e.g. a GPU without a job id)."""

    CSS_PATH = "nodes.tcss"
    if TYPE_CHECKING:
        app = getters.app(YanflowApp)
    BINDINGS = [
        Binding("escape", "dismiss", "Close", id="node-jobs-close"),
        Binding(CANCEL_KEY, "dismiss", "Close", id="node-jobs-close-alt"),
        Binding("l", "logs", "Logs", id="node-job-logs"),
    ]

    def __init__(self, node: Node, note: str = "") -> None:
        super().__init__()
        self.node = node
        self.note = note
        self.jobs: list[Job] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            title = Text(f"Jobs on {clean(self.node.cluster)}/{clean(self.node.name)}", style="bold")
            title.append("   enter: details · l: logs · escape: close", "dim")
            yield Static(title)
            yield Static(Text(clean(self.note)), id="node-jobs-note")
            yield NodeJobsTable(id="node-jobs", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        snapshot = self.app.hub.snapshots.get(self.node.cluster)
        self.jobs = jobs_on(self.node, snapshot.jobs if snapshot else ())
        note = self.query_one("#node-jobs-note", Static)
        note.display = bool(self.note) or not self.jobs
        if not self.jobs:
            note.update(Text(clean(f"{self.note} No job on this node.".strip())))
        table = self.query_one(NodeJobsTable)
        for column in ("ID", "NAME", "USER", "STATE", "GPUS", "GPUS HERE", "AGE", "REASON"):
            table.add_column(column, key=column.lower())
        now = self.app.clock()
        for job in self.jobs:
            table.add_row(
                text(job.id),
                text(job.name),
                text(job.user),
                text(job.state.value, STATE_STYLES.get(job.state, "")),
                text(job.gpus or "-"),
                text(gpus_held(self.node, job)),
                text(age_text(job.submit_time, now)),
                text(job.reason, "dim"),
                key=job.key,
            )
        table.focus()

    def selected(self) -> Job | None:
        table = self.query_one(NodeJobsTable)
        if not self.jobs or not table.row_count:
            return None
        return self.jobs[min(table.cursor_row, len(self.jobs) - 1)]

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        job = self.selected()
        if job is not None:
            self.app.push_screen(JobDetailScreen(job))

    def check_action(self, action: str, parameters) -> bool | None:
        if action == "logs":
            return self.app.hub.backend(self.node.cluster).capabilities.logs
        return True

    def action_logs(self) -> None:
        job = self.selected()
        if job is None:
            return
        self.dismiss()
        self.app.open_logs(job)
