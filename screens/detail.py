"""The job detail view: fields, describe output (events, reason), the nodes and GPUs it holds, a
live metrics plot, training curves from the job's TensorBoard event files, the checkpoint list with
atomic download, efficiency as seff shows it, the raw spec as the cluster holds it (``v`` opens it in
$EDITOR, the console suspended), and files, a shell and port-forwards inside the running job -- each
where the job's backend has them."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, ProgressBar, Static

from yanflow_tui import liveuse
from yanflow_tui.copyables import copyables
from yanflow_tui.efficiency import Efficiency
from yanflow_tui.failureevidence import find_first_failure
from yanflow_tui.firstfailure import FirstFailure
from yanflow_tui.hub import error_text
from yanflow_tui.inside import size_text
from yanflow_tui.jobhealth import gpu_source_of, job_health, running
from yanflow_tui.keys import CANCEL_KEY, CURVE_KEYS
from yanflow_tui.liveuse import LiveUse
from yanflow_tui.locations import safe_filename
from yanflow_tui.model import Checkpoint, Job, JobState, MetricPoint
from yanflow_tui.sanitize import clean
from yanflow_tui.screens.base import LiveScreen
from yanflow_tui.screens.dialogs import ChoiceScreen, PromptScreen
from yanflow_tui.screens.inside import forwards_text, open_forward, open_shell, shell_key
from yanflow_tui.screens.progress import DownloadProgress
from yanflow_tui.screens.render.placement import placement_text
from yanflow_tui.screens.render.plot import line_plot
from yanflow_tui.screens.render.why import why_text
from yanflow_tui.screens.resume_flow import can_find_checkpoints, resume_job
from yanflow_tui.screens.tensorboard import open_tensorboard, stop_tensorboard, tensorboard_text
from yanflow_tui.screens.widgets.curves import CurvesView
from yanflow_tui.screens.widgets.footer import Footer
from yanflow_tui.screens.widgets.members import MembersTable

CURVES_HEADING = (
    "Curves, from the TensorBoard event files  ({curves-tag}: next tag, {curves-x-axis}: step / wall time, "
    "{curves-smoothing}: smoothing)"
).format_map(CURVE_KEYS)


class JobDetailScreen(ModalScreen[None], LiveScreen):  # ModalScreen first: Textual takes CSS from the first base
    """One job: its fields, the backend's describe output (events, reason), its members (trials,
    tasks, ranks) as a sortable table, metrics drawn as a plot and refreshed while it runs, and
    checkpoints with download -- each where the job or its backend has them."""

    BINDINGS = [
        Binding("escape", "dismiss", "Close", id="detail-close"),
        Binding(CANCEL_KEY, "dismiss", "Close", id="detail-close-alt"),
        Binding("l", "logs", "Logs", id="detail-logs"),
        Binding("d", "download", "Download checkpoint", id="download-checkpoint"),
        Binding("o", "sort_members", "Sort members", id="sort-members"),
        Binding("O", "reverse_members", "Reverse order", id="reverse-members"),
        Binding(CURVE_KEYS["curves-tag"], "curves_tag", "Next tag", id="curves-tag"),
        Binding(CURVE_KEYS["curves-x-axis"], "curves_x_axis", "Step / wall time", id="curves-x-axis"),
        Binding(CURVE_KEYS["curves-smoothing"], "curves_smoothing", "Smoothing", id="curves-smoothing"),
        Binding("v", "edit_spec", "Open in $EDITOR", id="detail-open-editor"),
        Binding("f", "files", "Files", id="detail-files"),
        Binding("x", "shell", "Shell", id="detail-shell"),
        Binding("x", "refuse_shell", "Shell (read-only)", show=False, id="detail-shell-read-only"),
        Binding("p", "forward", "Port-forward", id="detail-forward"),
        Binding("P", "close_forwards", "Close forwards", id="detail-close-forwards"),
        Binding("t", "tensorboard", "TensorBoard", id="detail-tensorboard"),
        Binding("T", "stop_tensorboard", "Stop TensorBoard", id="detail-stop-tensorboard"),
        Binding("j", "first_failure", "Jump to first failure", id="detail-first-failure"),
        Binding("y", "copy", "Copy a path or URL", show=False, id="detail-copy"),
        Binding("C", "resume", "Resume from checkpoint", id="detail-resume"),
        Binding("C", "app.refuse('resume')", "Resume (read-only)", show=False, id="detail-resume-read-only"),
    ]
    METRICS_SECONDS = 5.0
    EFFICIENCY_SECONDS = 15.0  # sstat reaches every node of a running job: not too often

    def __init__(self, job: Job) -> None:
        super().__init__()
        self.job = job
        self.checkpoint_list: list[Checkpoint] = []
        self.metric_points: list[MetricPoint] = []
        self.progress = DownloadProgress(self, "#download")
        self.raw_text = ""  # the raw spec once read, for ``v``
        self.first_failure: FirstFailure | None = None  # a failed job's, once found (``j`` jumps to it)
        self.usage: Efficiency | None = None  # the efficiency figures last read (the live-use block's CPU, memory)
        self.live: LiveUse | None = None  # the live source's figures last read (/proc, the metrics API...)
        self.live_source = ""  # that source's name, or the missing one's (``liveuse.read``)

    @property
    def caps(self):
        return self.app.hub.backend(self.job.cluster).capabilities

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog"):
            yield Static(Text(f"{clean(self.job.cluster)}/{clean(self.job.id)}  {clean(self.job.name)}", style="bold"))
            yield Static(Text("Why: asking the cluster…", style="dim"), id="why")
            yield Static(id="first-failure")
            yield Static(details_text(self.job), id="details")
            yield Static(Text("loading…"), id="describe")
            yield Static(Text("Nodes and GPUs", style="bold"), classes="heading")
            yield Static(id="placement")
            yield Static(
                Text("Members  (o: sort by the next column, O: reverse)", style="bold"),
                classes="heading",
                id="members-heading",
            )
            yield MembersTable(id="members")
            yield Static(Text("Metrics", style="bold"), classes="heading", id="metrics-heading")
            yield Static(id="metrics")
            yield Static(Text(CURVES_HEADING, style="bold"), classes="heading", id="curves-heading")
            yield CurvesView(self.job.cluster, self.job.id, id="curves")
            yield Static(
                Text("Checkpoints  (d: download the highlighted one)", style="bold"),
                classes="heading",
                id="checkpoints-heading",
            )
            yield DataTable(id="checkpoints", cursor_type="row", zebra_stripes=True)
            yield ProgressBar(id="download", show_eta=False)
            yield Static(
                Text("Efficiency (as seff shows it)", style="bold"), classes="heading", id="efficiency-heading"
            )
            yield Static(Text("loading…"), id="efficiency")
            yield Static(Text("Live use  (GPUs, CPU, memory)", style="bold"), classes="heading", id="health-heading")
            yield Static(id="health")
            yield Static(
                Text("Port-forwards  (p: open, P: close)", style="bold"), classes="heading", id="forwards-heading"
            )
            yield Static(id="forwards")
            yield Static(
                Text("TensorBoard  (t: open, T: stop)", style="bold"), classes="heading", id="tensorboard-heading"
            )
            yield Static(id="tensorboard")
            yield Static(
                Text("Spec, as the cluster holds it  (v: open it in $EDITOR)", style="bold"),
                classes="heading",
                id="raw-spec-heading",
            )
            yield Static(Text("loading…"), id="raw-spec")
        yield Footer()  # this screen's own keys, not those of the screen under it

    def on_mount(self) -> None:
        # "Why" answers for a job that is not running yet (a running or ended job's state says it all)
        waiting = self.caps.explain and self.job.state is not JobState.RUNNING and not self.job.state.terminal
        self.query_one("#why").display = waiting
        if waiting:
            self._explain()
        failed = self.job.state is JobState.FAILED and self.caps.logs
        self.query_one("#first-failure").display = failed
        if failed:
            self.query_one("#first-failure", Static).update(Text("First failure: looking…", style="dim"))
            self._find_first_failure()
        self._describe()
        self.refresh_data()
        for widget_id in ("#raw-spec-heading", "#raw-spec"):
            self.query_one(widget_id).display = self.caps.raw_spec
        if self.caps.raw_spec:
            self._raw_spec()
        started = self.job.start_time is not None or self.job.state.terminal
        for widget_id in ("#efficiency-heading", "#efficiency"):
            self.query_one(widget_id).display = self.caps.efficiency and started
        if self.caps.efficiency and started:
            self._load_efficiency()
            if not self.job.state.terminal:
                self.set_interval(self.EFFICIENCY_SECONDS, self._load_efficiency)
        for widget_id in ("#health-heading", "#health"):
            self.query_one(widget_id).display = running(self.job)
        if self.caps.live_use and not self.caps.efficiency and running(self.job):
            self._load_live_use()
            self.set_interval(self.EFFICIENCY_SECONDS, self._load_live_use)
        snapshot = self.app.hub.snapshots[self.job.cluster]
        members = [j for j in snapshot.jobs if j.parent == self.job.id and j.key != self.job.key]
        for widget_id in ("#members-heading", "#members"):
            self.query_one(widget_id).display = bool(members)
        if members:
            self.query_one(MembersTable).load(members)
        caps = self.caps
        for widget_id in ("#metrics-heading", "#metrics"):
            self.query_one(widget_id).display = caps.metrics
        for widget_id in ("#checkpoints-heading", "#checkpoints"):
            self.query_one(widget_id).display = caps.checkpoints
        self.query_one("#download").display = False
        curves_off = caps.why_off("event_files")  # read-only turned them off: say so rather than hide them
        for widget_id in ("#curves-heading", "#curves"):
            self.query_one(widget_id).display = caps.event_files or bool(curves_off)
        if curves_off:
            self.query_one(CurvesView).update(Text(f"Curves are {curves_off}.", style="dim"))
        if caps.event_files:
            self._load_curves()
            if not self.job.state.terminal:
                self.set_interval(self.METRICS_SECONDS, self._load_curves)
        for widget_id in ("#forwards-heading", "#forwards"):
            self.query_one(widget_id).display = caps.forward
        self._show_forwards()
        for widget_id in ("#tensorboard-heading", "#tensorboard"):
            self.query_one(widget_id).display = caps.event_files or caps.tensorboard
        self._show_tensorboard()
        if caps.metrics:
            self._load_metrics()
            if not self.job.state.terminal:
                self.set_interval(self.METRICS_SECONDS, self._load_metrics)
        if caps.checkpoints:
            table = self.query_one("#checkpoints", DataTable)
            for column in ("UUID", "STEPS", "STATE", "SIZE", "METRICS"):
                table.add_column(column, key=column.lower())
            self._load_checkpoints()

    @work(group="detail-text", exit_on_error=False)
    async def _describe(self) -> None:
        backend = self.app.hub.backend(self.job.cluster)
        if await self._put_text("#describe", backend.describe(self.job.id), "cannot describe"):
            for widget in self.query("#details").results(Static):
                widget.display = False  # describe lists the job's details too: each field once

    @work(group="detail-why", exit_on_error=False)
    async def _explain(self) -> None:
        """The "Why" block: the backend's explanation (a read, in this worker; never on the Queue's refresh)."""
        backend = self.app.hub.backend(self.job.cluster)
        try:
            body = why_text(await self.app.hub.call(backend.explain(self.job.id)))
        except Exception as exc:
            body = Text(f"Why: not known ({clean(error_text(exc))})", style="dim")
        for widget in self.query("#why").results(Static):
            widget.update(body)

    @work(group="first-failure", exit_on_error=False)
    async def _find_first_failure(self) -> None:
        backend = self.app.hub.backend(self.job.cluster)
        try:
            found = await find_first_failure(backend, self.job, self.app.hub.timeout * 2)
        except Exception as exc:
            body = Text(f"First failure: cannot tell ({clean(error_text(exc))})", style="dim")
        else:
            self.first_failure = found
            body = first_failure_text(found)
        for widget in self.query("#first-failure").results(Static):
            widget.update(body)
        self.refresh_bindings()

    def action_first_failure(self) -> None:
        """Open the failing rank's log at the first failure's line."""
        found = self.first_failure
        if found is None or found.first.line is None:
            return
        self.dismiss()
        self.app.open_logs(self.job, (found.first.source, found.first.line))

    @work(group="detail-text", exit_on_error=False)
    async def _raw_spec(self) -> None:
        backend = self.app.hub.backend(self.job.cluster)
        try:
            self.raw_text = await self.app.hub.call(backend.raw_spec(self.job.id))
        except Exception as exc:
            body = f"cannot read the spec: {error_text(exc)}"
        else:
            body = self.raw_text
        for widget in self.query("#raw-spec").results(Static):
            widget.update(Text(clean(body.rstrip("\n"), keep_newlines=True)))
        self.refresh_bindings()

    @work(exclusive=True, group="efficiency", exit_on_error=False)
    async def _load_efficiency(self) -> None:
        backend = self.app.hub.backend(self.job.cluster)
        try:
            found = await self.app.hub.call(backend.efficiency([self.job.id]))
        except Exception as exc:
            body = Text(f"no figures: {clean(error_text(exc))}", style="dim")
        else:
            eff = self.usage = found.get(self.job.id)
            self._show_health(self.job)
            body = efficiency_text(eff.lines()) if eff is not None else Text("no figures yet", style="dim")
        for widget in self.query("#efficiency").results(Static):
            widget.update(body)

    @work(exclusive=True, group="live-use", exit_on_error=False)
    async def _load_live_use(self) -> None:
        """The job's CPU and memory from the cluster's live source (``yanflow_tui.liveuse``; a read)."""
        backend = self.app.hub.backend(self.job.cluster)
        found, self.live_source = await liveuse.read(backend, [self.job.id], self.app.hub.timeout)
        self.live = found.get(self.job.id)
        self._show_health(self.job)

    def action_edit_spec(self) -> None:
        """The raw spec in $VISUAL / $EDITOR (vi if neither is set), the console suspended meanwhile. A
        copy in a private temporary file: editing it changes nothing on the cluster."""
        if not self.raw_text:
            return
        editor = shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")
        fd, name = tempfile.mkstemp(prefix=f"yanflow-{safe_filename(self.job.id)}-", suffix=".txt")
        try:
            with os.fdopen(fd, "w") as out:
                out.write(self.raw_text)
            with self.app.suspend():  # the terminal is the editor's until it exits
                subprocess.run([*editor, name], check=False)
        except (OSError, ValueError, SuspendNotSupported) as exc:
            self.app.report_error("Cannot open the editor", f"{shlex.join(editor)}: {exc}")
        finally:
            Path(name).unlink(missing_ok=True)

    @work(group="detail-text", exit_on_error=False)
    async def _show_text(self, widget_id: str, call, failed: str) -> None:
        await self._put_text(widget_id, call, failed)

    async def _put_text(self, widget_id: str, call, failed: str) -> bool:
        """Await a backend call that returns text and show it in ``widget_id``; a failure is
        shown in its place as one line. True when the call answered."""
        try:
            body, ok = await self.app.hub.call(call), True
        except Exception as exc:
            body, ok = f"{failed}: {error_text(exc)}", False
        for widget in self.query(widget_id).results(Static):  # none while torn down at exit
            widget.update(Text(clean(body.rstrip("\n"), keep_newlines=True)))
        return ok

    def refresh_data(self) -> None:
        """New cluster data (every refresh, while on show): redraw where the job runs."""
        snapshot = self.app.hub.snapshots[self.job.cluster]
        job = next((j for j in snapshot.jobs if j.id == self.job.id), self.job)  # placed since opened?
        for widget in self.query("#placement").results(Static):  # none while torn down at exit
            widget.update(placement_text(job, snapshot.nodes, self.app.idle.idle_gpus(job.cluster)))
        self._show_health(job)

    def _show_health(self, job: Job) -> None:
        """The live-use block (``yanflow_tui.jobhealth``), from this refresh's nodes, the idle tracker and
        the efficiency figures last read (sstat while the job runs)."""
        if not running(job):
            return
        backend, hub, idle = self.app.hub.backend(job.cluster), self.app.hub, self.app.idle
        since = {(e.node, e.index): e.since for e in idle.episodes(job.cluster, job.id)}
        figures = job_health(
            job,
            hub.snapshots[job.cluster].nodes,
            gpu_source_of(backend.gpu_use_source, job.cluster in hub.metrics),
            self.live_source or backend.cpu_use_source,
            self.usage if self.usage is not None and self.usage.running else None,
            since,
            idle.clock(),
            live=self.live,
        )
        for widget in self.query("#health").results(Static):
            widget.update(efficiency_text(figures.lines()))

    @work(exclusive=True, group="metrics", exit_on_error=False)
    async def _load_metrics(self) -> None:
        backend = self.app.hub.backend(self.job.cluster)
        target = self.query_one("#metrics", Static)
        try:
            self.metric_points = await self.app.hub.call(backend.metrics(self.job.id))
        except Exception as exc:
            target.update(Text(f"cannot read metrics: {clean(error_text(exc))}", style="red"))
            return
        series: dict[str, list[tuple[float, float]]] = {}
        for point in self.metric_points:
            series.setdefault(clean(f"{point.group}.{point.name}"), []).append((point.step, point.value))
        width = max(20, min(100, (target.content_region.width or 60) - 14))
        plot = Text("\n", no_wrap=True, overflow="crop").join(line_plot(dict(list(series.items())[:6]), width, 10))
        target.update(plot)

    @work(group="curves", exit_on_error=False)
    async def _load_curves(self) -> None:
        await self.query_one(CurvesView).reload()

    @work(group="curves-draw", exit_on_error=False)
    async def _redraw_curves(self) -> None:
        await self.query_one(CurvesView).redraw()

    def action_curves_tag(self) -> None:
        self.query_one(CurvesView).next_tag()
        self._redraw_curves()

    def action_curves_x_axis(self) -> None:
        self.query_one(CurvesView).toggle_x_axis()
        self._redraw_curves()

    def action_curves_smoothing(self) -> None:
        self.query_one(CurvesView).next_smoothing()
        self._redraw_curves()

    @work(exclusive=True, group="checkpoints", exit_on_error=False)
    async def _load_checkpoints(self) -> None:
        backend = self.app.hub.backend(self.job.cluster)
        table = self.query_one("#checkpoints", DataTable)
        try:
            self.checkpoint_list = await self.app.hub.call(backend.checkpoints(self.job.id))
        except Exception as exc:
            self.query_one("#checkpoints-heading", Static).update(
                Text(f"Checkpoints: cannot list: {clean(error_text(exc))}", style="red")
            )
            return
        table.clear()
        for cp in self.checkpoint_list:
            metrics = ", ".join(f"{k}={v:.4g}" for k, v in cp.metrics)
            table.add_row(
                *(
                    Text(clean(str(v)))
                    for v in (
                        cp.uuid,
                        "-" if cp.steps is None else cp.steps,
                        cp.state or "-",
                        "-" if cp.size_bytes is None else size_text(cp.size_bytes),
                        metrics or "-",
                    )
                ),
                key=cp.uuid,
            )
        self.refresh_bindings()

    def check_action(self, action: str, parameters) -> bool | None:
        if action == "resume":  # where checkpoints can be found; read-only: the refusing key instead
            return not self.app.read_only and can_find_checkpoints(self.caps)
        if action in ("sort_members", "reverse_members"):
            tables = self.query(MembersTable)  # empty until composed
            return bool(tables and tables.first().labels)
        if action == "logs":
            return self.caps.logs
        if action == "first_failure":
            return self.first_failure is not None and self.first_failure.first.line is not None
        if action.startswith("curves_"):
            return self.caps.event_files
        if action == "edit_spec":
            return (True if self.raw_text else None) if self.caps.raw_spec else False
        if action in ("files", "shell", "forward", "refuse_shell", "close_forwards"):
            return self._inside_action(action)
        if action == "tensorboard":
            return self.caps.event_files or self.caps.tensorboard
        if action == "stop_tensorboard":
            return self.app.tensorboards.of(self.job.key) is not None
        if action == "download":
            if not self.caps.checkpoints:
                return False
            return True if self.checkpoint_list and not self.progress.busy else None
        return True

    def _inside_action(self, action: str) -> bool | None:
        caps, read_only = self.caps, self.app.hub.backend(self.job.cluster).read_only
        if action == "files":
            return caps.files
        if action == "shell":
            return shell_key(caps) and not read_only
        if action == "refuse_shell":
            return shell_key(caps) and read_only
        if action == "forward":
            return caps.forward
        return bool(caps.forward and self.app.forwards.of(self.job.key))

    def action_files(self) -> None:
        from yanflow_tui.screens.files import FilesScreen

        self.app.push_screen(FilesScreen(self.job))

    @work(group="shell", exit_on_error=False)
    async def action_shell(self) -> None:
        await open_shell(self.app, self.job)

    def action_refuse_shell(self) -> None:
        self.app.action_refuse("shell")

    def action_forward(self) -> None:
        def answered(text: str | None) -> None:
            if text and text.isdigit():
                self._forward(int(text))
            elif text:
                self.app.report_error("Port-forward", f"not a port: {text}")

        self.app.push_screen(PromptScreen("Forward which port of the job (to 127.0.0.1)?", ""), answered)

    @work(group="forward", exit_on_error=False)
    async def _forward(self, port: int) -> None:
        await open_forward(self.app, self.job, port)
        self._show_forwards()

    @work(group="forward", exit_on_error=False)
    async def action_close_forwards(self) -> None:
        closed = await self.app.forwards.close(self.job.key)
        self.notify(f"{closed} port-forward(s) closed", markup=False)
        self._show_forwards()

    def _show_forwards(self) -> None:
        for widget in self.query("#forwards").results(Static):
            widget.update(Text(clean(forwards_text(self.app, self.job), keep_newlines=True)))
        self.refresh_bindings()

    @work(group="tensorboard", exit_on_error=False)
    async def action_tensorboard(self) -> None:
        self._show_tensorboard("starting…")
        await open_tensorboard(self.app, self.job)
        self._show_tensorboard()

    @work(group="tensorboard", exit_on_error=False)
    async def action_stop_tensorboard(self) -> None:
        await stop_tensorboard(self.app, self.job)
        self._show_tensorboard()

    def _show_tensorboard(self, note: str = "") -> None:
        for widget in self.query("#tensorboard").results(Static):
            widget.update(Text(note or clean(tensorboard_text(self.app, self.job))))
        self.refresh_bindings()

    def action_copy(self) -> None:
        """``y``: the job's id, or one of the paths and URLs the detail shows (a choice if several)."""
        board = self.app.tensorboards.of(self.job.key)
        shown = [("port-forward", f"http://{f.address}") for f in self.app.forwards.of(self.job.key)]
        shown += [("TensorBoard", board.url)] if board is not None else []
        found = copyables(self.job, shown)
        if len(found) == 1:
            self.app.copy_text(found[0][1], found[0][0])
            return
        choices = [f"{label}: {text}" for label, text in found]

        def chosen(choice: str | None) -> None:
            if choice is not None:
                label, text = found[choices.index(choice)]
                self.app.copy_text(text, label)

        self.app.push_screen(ChoiceScreen("Copy (OSC 52):", choices), chosen)

    @work(group="resume", exclusive=True, exit_on_error=False)
    async def action_resume(self) -> None:
        """The Submit form on this job's spec, resuming from its newest checkpoint (``resume_flow``)."""
        await resume_job(self.app, self.job)

    def action_sort_members(self) -> None:
        self.query_one(MembersTable).action_sort_next()

    def action_reverse_members(self) -> None:
        self.query_one(MembersTable).action_sort_reverse()

    def action_logs(self) -> None:
        self.dismiss()
        self.app.open_logs(self.job)

    def selected_checkpoint(self) -> Checkpoint | None:
        table = self.query_one("#checkpoints", DataTable)
        if not self.checkpoint_list or not table.row_count:
            return None
        return self.checkpoint_list[min(table.cursor_row, len(self.checkpoint_list) - 1)]

    def action_download(self) -> None:
        checkpoint = self.selected_checkpoint()
        if checkpoint is None or self.progress.busy:
            return
        default = str(Path.cwd() / "checkpoints" / safe_filename(checkpoint.uuid))

        def chosen(path: str | None) -> None:
            if path:
                self._download(checkpoint, Path(path).expanduser())

        self.app.push_screen(PromptScreen("Download the checkpoint into (a new directory):", default), chosen)

    @work(exclusive=True, group="download", exit_on_error=False)
    async def _download(self, checkpoint: Checkpoint, target: Path) -> None:
        backend = self.app.hub.backend(self.job.cluster)
        try:
            path = await self.progress.run(lambda report: backend.download_checkpoint(checkpoint, target, report))
        except Exception as exc:
            self.app.report_error("Download failed", error_text(exc))
            return
        self.notify(clean(f"checkpoint {checkpoint.uuid} downloaded to {path}"), markup=False)


def first_failure_text(found: FirstFailure | None) -> Text:
    """The first failure's lines (``FirstFailure.lines``), its headline in bold red, and the jump key."""
    if found is None:
        return Text("First failure: no rank's log or exit shows one", style="dim")
    lines = found.lines()
    out = Text(clean(lines[0]), style="bold red")
    for line in lines[1:]:
        out.append("\n" + clean(line))
    if found.first.line is not None:
        out.append("\n  (j: open that rank's log at that line)", style="dim")
    return out


def efficiency_text(rows: list[tuple[str, str]]) -> Text:
    """seff's rows as aligned ``label: value`` lines."""
    width = max((len(label) for label, _ in rows), default=0) + 1
    return Text("\n".join(f"{label + ':':<{width}} {clean(value)}" for label, value in rows))


def details_text(job: Job) -> Text:
    """The job's image and the backend's extra facts of a job as aligned ``label: value`` lines."""
    out = Text()
    rows = [("Image", job.image)] if job.image else []
    rows += [(label, value) for label, value in job.details if not (job.image and label == "Image")]
    if not rows:
        return out
    width = max(len(label) for label, _ in rows) + 1
    for label, value in rows:
        out.append(f"{clean(label) + ':':<{width}} ", "bold")
        out.append(f"{clean(str(value))}\n")
    return out
