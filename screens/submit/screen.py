"""The Submit screen, a wizard: choose a cluster, then a job type it runs; fill in the fields that
backend uses for that type (starting from the cluster's defaults), or load a spec file or template.
Errors show under their fields as you type, the preview shows what the backend will receive, and the
capacity box says whether the request fits now. The unfinished form is kept as a draft across
restarts (``files.SubmitDraft``); a submit goes through the backend's gate once. The screen owns
the form's state: which file it was loaded from, the file's problems, the load in flight."""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.actions import SkipAction
from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.events import DescendantFocus
from textual.timer import Timer
from textual.widgets import Button, Input, Label, Select, Static
from textual.worker import Worker

from yanflow_tui import drafts, projects, templates
from yanflow_tui.capacity import Fit, Verdict, pools, verdict
from yanflow_tui.errors import SpecError, SubmitUnknown
from yanflow_tui.formfields import (
    KIND_LABELS,
    FormField,
    default_fields,
    field_for,
    leaf_paths,
    message_field,
    split_data,
)
from yanflow_tui.hub import Health, error_text
from yanflow_tui.images import with_images
from yanflow_tui.keys import EDITOR_KEYS, LEAVE_FIELD_KEY, is_typing
from yanflow_tui.locations import display_path
from yanflow_tui.model import JobKind, JobSpec, NativeFile
from yanflow_tui.nativefiles import changed_fields
from yanflow_tui.placement_rank import Placement, candidates, place_all
from yanflow_tui.sanitize import clean
from yanflow_tui.screens.base import DataScreen
from yanflow_tui.screens.dialogs import ConfirmScreen, PromptScreen
from yanflow_tui.screens.submit.files import SubmitDraft, read_spec
from yanflow_tui.screens.submit.form import SpecForm, select_options
from yanflow_tui.screens.submit.where import WherePanel
from yanflow_tui.screens.templates import TemplatePickerScreen
from yanflow_tui.screens.widgets.cluster_bar import ClusterBar
from yanflow_tui.screens.widgets.footer import Footer
from yanflow_tui.screens.widgets.unchanged import update_static
from yanflow_tui.spec import spec_from_data

WIDGET_HELP = {  # the help line for the widgets outside the fields
    "spec-path": ("Spec file", "type a path, enter loads it; escape leaves the box"),
    "cluster": ("Cluster", "where the job runs; tab goes down the form, 1-5 switch screens"),
}
PREVIEW_DELAY = 0.15  # s of quiet typing before the preview is rendered again
WHERE_KEY = "ctrl+f"  # the "where soonest" panel (a key no text field takes)
WHERE_TIMEOUT = 25.0  # s for one cluster's answer in that panel


class SubmitScreen(DataScreen):
    TITLE_TEXT = "Submit"
    CSS_PATH = "submit.tcss"
    AUTO_FOCUS = "#cluster"  # the main widget: the app-wide keys work, and tab goes on down the form
    BINDINGS = [
        Binding("ctrl+s", "submit", "Submit", id="submit-form"),
        Binding("ctrl+o", "load", "Load file", id="load-spec"),
        Binding("ctrl+l", "templates", "Templates", id="pick-template"),
        Binding("ctrl+b", "save_template", "Save template", id="save-template"),
        Binding("ctrl+r", "reset", "Reset form", id="reset-form"),
        Binding(EDITOR_KEYS["submit-open-editor"], "open_editor", "Edit", id="submit-open-editor"),
        Binding("escape", "leave_field", "Leave field", id="leave-field"),
        Binding(LEAVE_FIELD_KEY, "leave_field", "Leave field", show=False, id="leave-field-alt"),
        Binding(WHERE_KEY, "where", "Where soonest", id="submit-where", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._spec: JobSpec | None = None
        self._data: dict[str, Any] = {}
        self._submitting = False
        self._cluster = ""
        self._kind = JobKind.SINGLE
        self._source = ""  # the file the form was loaded from
        self._native: NativeFile | None = None  # that file, when it is sent as written (an sbatch script...)
        self._loaded_box = ""  # the file box's text when the form was last loaded from a file
        self._loading = ""  # the file being loaded now: Submit waits for it
        self._loads = 0  # loads started: only the latest one ends the wait
        self._file_problems: list[tuple[str, str]] = []  # a loaded file's (field, located line), until an edit
        self._listed: list[tuple[str, str]] = []  # the form's own (field, problem line), from the last check
        self._preview_timer: Timer | None = None
        self._drafts = SubmitDraft(self, self._draft)
        self.last_submitted: tuple[str, str] | None = None
        # (cluster, spec, tag) of a submit whose outcome is unknown: sending that form again reuses the tag
        self.unknown_submit: tuple[str, JobSpec, str] | None = None
        self._form: SpecForm | None = None
        self._verdict: Verdict | None = None  # the capacity verdict on the valid form, with node data
        self._pending_load: tuple[str, dict[str, str], str] | None = None  # ``load_file`` before the screen mounted
        self._scratch = ""  # the form as a spec in a temporary file for $EDITOR, kept while it does not load
        self.where_ranking: list[Placement] = []  # the last "where soonest" answer, soonest first
        self.moved_note = ""  # what the last move to another cluster said (what did not carry over)
        # a resume's words for the form's cluster (``screens/resume_flow.py``): what must move there
        self.resume_note: Callable[[str], str] | None = None
        # run on the spec before it is sent (a resume's checkpoint copied to the form's cluster): the spec to send
        self.before_submit: Callable[[JobSpec, str], Awaitable[JobSpec]] | None = None

    # -- clusters and kinds ---------------------------------------------------------------------------
    def _writable(self) -> list[str]:
        hub = self.app.hub
        return [n for n in hub.names if not hub.backend(n).read_only and hub.backend(n).capabilities.submit]

    def _takes(self, cluster: str) -> bool:
        """Whether ``cluster`` takes the loaded job file as it is written (any cluster, for a spec)."""
        native = self._native
        return native is None or (
            bool(cluster) and native.kind in self.app.hub.backend(cluster).capabilities.native_files
        )

    def _kinds(self, cluster: str) -> list[JobKind]:
        if not cluster:
            return [JobKind.SINGLE]
        runs = self.app.hub.backend(cluster).capabilities.job_kinds
        return [k for k in JobKind if k in runs] or [JobKind.SINGLE]  # none: the check says why

    def _defaults(self, cluster: str) -> dict[str, Any]:
        return dict(self.app.hub.backend(cluster).config.defaults) if cluster else {}

    def _default_kind(self, cluster: str) -> JobKind:
        kinds = self._kinds(cluster)
        wanted = self._defaults(cluster).get("kind")
        for kind in kinds:
            if kind.value == wanted:
                return kind
        return JobKind.SINGLE if JobKind.SINGLE in kinds else kinds[0]

    def _fields(self, cluster: str, kind: JobKind) -> tuple[FormField, ...]:
        if not cluster:
            return default_fields(kind)
        backend = self.app.hub.backend(cluster)
        return with_images(backend.form_fields(kind), backend.images())  # the image field offers the catalogue

    def _known_fields(self) -> list[FormField]:
        """Every field any writable cluster shows for any kind (loaded values for them go to fields)."""
        known: dict[str, FormField] = {}
        for cluster in self._writable() or [""]:
            for kind in JobKind:
                for field in (*self._fields(cluster, kind), *default_fields(kind)):
                    known.setdefault(field.key, field)
        return list(known.values())

    def _kind_options(self, cluster: str) -> list[tuple[str, str]]:
        return [(KIND_LABELS[k], k.value) for k in self._kinds(cluster)]

    # -- layout ---------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        clusters = self._writable()
        self._cluster = self.app.hub.default_cluster(clusters) or (clusters[0] if clusters else "")
        self._kind = self._default_kind(self._cluster)
        yield ClusterBar()
        yield Static(id="field-help")
        with Horizontal(id="submit-body"):
            with VerticalScroll(id="form"):
                with Horizontal(classes="field", id="file-row"):
                    yield Input(
                        placeholder="spec file, e.g. sample_jobs/local-shell.yaml", id="spec-path", compact=True
                    )
                    yield Button("Load", id="load", compact=True, action="screen.load")
                    yield Button("Templates", id="templates", compact=True, action="screen.templates")
                    yield Button("Save template", id="save-template", compact=True, action="screen.save_template")
                with Horizontal(classes="field"):
                    yield Label("Cluster")
                    yield Select(
                        select_options(clusters),
                        id="cluster",
                        allow_blank=not clusters,
                        value=self._cluster or Select.NULL,
                        compact=True,
                    )
                with Horizontal(classes="field"):
                    yield Label("Job type")
                    yield Select(
                        self._kind_options(self._cluster),
                        id="kind",
                        value=self._kind.value,
                        allow_blank=False,
                        compact=True,
                    )
                self._form = SpecForm(
                    self._fields(self._cluster, self._kind), self._defaults(self._cluster), id="spec-form"
                )
                yield self._form
                yield Static(id="form-notes")
                yield Button("Submit (ctrl+s)", id="submit", variant="success", compact=True)
            with Vertical(id="side"):
                yield Label("Problems", classes="heading")
                yield Static(id="errors")
                yield Label("Capacity now", classes="heading")
                yield Static(id="capacity")
                yield WherePanel(id="where")
                yield Label("Preview: what the backend receives", classes="heading")
                with VerticalScroll(id="preview-box"):
                    yield Static(id="preview")
        yield Footer()

    @property
    def draft_ready(self) -> bool:
        """The saved draft was read (or there was none): saving may start."""
        return self._drafts.ready

    @property
    def form(self) -> SpecForm:
        assert self._form is not None, "composed first"
        return self._form

    def on_mount(self) -> None:
        self._validate()
        self._render_preview()
        pending, self._pending_load = self._pending_load, None
        if pending is None:
            self._restore_draft()
            return
        self._drafts.start()  # a file asked for before the screen was shown replaces the draft
        self._show_file(*pending)

    def load_file(self, path: str, values: dict[str, str] | None = None, cluster: str = "") -> None:
        """Load the job file ``path`` into the form as Load does, then set ``values`` (form texts by
        field key, e.g. a larger time limit) over what it says: they are sent as changes. ``cluster``:
        the one to send it to (where it takes the file), e.g. the cluster the job came from."""
        if self.is_mounted:
            self._show_file(path, values or {}, cluster)
        else:
            self._pending_load = (path, values or {}, cluster)

    def _show_file(self, path: str, values: dict[str, str], cluster: str) -> None:
        self.query_one("#spec-path", Input).value = path
        self.focus_main()
        self._start_load(path, values, cluster)

    # -- the form -> a spec ---------------------------------------------------------------------------
    def form_data(self) -> tuple[dict[str, Any], dict[str, list[str]]]:
        """The form as a spec mapping (kind and cluster included), and problems in the fields' text."""
        data, problems = self.form.data()
        data["kind"] = self._kind.value
        if self._cluster:
            data["cluster"] = self._cluster
        return data, problems

    def _validate(self) -> JobSpec | None:
        """Check the form now (cheap: no rendering); errors go under their fields and to the list."""
        form = self.form
        data, text_problems = self.form_data()
        per_field = {key: list(found) for key, found in text_problems.items()}
        listed = [(key, f"{key}: {p}") for key, found in text_problems.items() for p in found]

        def add(path: str, message: str, key: str | None) -> None:
            listed.append((path, f"{path}: {message}" if path else message))
            if key is not None:
                per_field.setdefault(key, []).append(message)

        spec = None
        try:
            spec = spec_from_data(data, self._source or "<form>")
        except SpecError as exc:
            for _file, _line, path, message in exc.problems:
                add(path, message, field_for(path, form.fields) if path else None)
        if spec is not None and self._native is not None:
            spec = replace(spec, native=self._native)  # the file goes as written; the fields say what it asks
            for changed in changed_fields(spec):
                message = f"sent as written in {self._native.file}: change it there"
                add(changed, message, field_for(changed, form.fields))
        if not self._cluster:
            add("cluster", "no cluster accepts submissions (read-only or unsupported)", None)
        elif spec is not None and not listed:
            try:
                self.app.hub.backend(self._cluster).check_spec(spec)
            except Exception as exc:
                line = error_text(exc)
                key, message = message_field(line, form.fields)
                if key is None:
                    add("", line, None)
                else:
                    add(key, message, key)
        self._verdict = self._capacity_verdict(spec, data) if self._cluster else None
        if self._verdict is not None and self._verdict.fit is Fit.NEVER:
            add("", f"never fits: {self._verdict.reason}", None)
        self._data = data
        self._spec = spec if not listed else None
        self._listed = listed
        form.show_problems(per_field)
        self._show_notes()
        self._show_capacity()
        return self._show_state()

    def _not_shown(self) -> str | None:
        """Why the form is not the one the file box shows (a load in flight, a path typed but not
        loaded, or one that failed to load), or None when it is: the box is empty or names the file
        the form was loaded from. A submit sends only the form the user sees under that box."""
        if self._loading:
            return f"spec file: loading {self._loading}; Submit waits for it"
        box = self.query_one("#spec-path", Input).value.strip()
        if box and box != self._loaded_box:
            held = f"the form holds {self._loaded_box}" if self._loaded_box else "the form is not from a file"
            return f"spec file: {box} is not loaded ({held}); Submit is off until you load it or clear the box"
        return None

    def _show_state(self) -> JobSpec | None:
        """The problems list and the Submit button, from the last check and the file box. Returns
        the spec a submit may send now: None while the form has problems or is not the one shown."""
        blocked = self._not_shown()
        located = {path for path, _line in self._file_problems if path}
        lines = [line for _path, line in self._file_problems]
        lines += [line for path, line in self._listed if not path or path not in located]  # each problem once
        self._show_errors(lines + ([blocked] if blocked else []))
        self.query_one("#submit", Button).disabled = self._spec is None or self._submitting or blocked is not None
        return self._spec if blocked is None else None

    def _show_errors(self, problems: list[str]) -> None:
        errors = self.query_one("#errors", Static)
        shown = Text("\n".join(clean(p) for p in problems) or "none", style="bold red" if problems else "green")
        update_static(errors, shown)
        errors.set_class(bool(problems), "has-errors")

    def _show_notes(self) -> None:
        notes = Text()
        hidden = self.form.hidden_values()
        if hidden:
            notes.append(
                f"not used by {self._cluster or 'this cluster'} for {self._kind.value} jobs, not sent: ", "yellow"
            )
            notes.append(clean(", ".join(hidden)) + "\n")
        if self.resume_note is not None:
            notes.append(clean(self.resume_note(self._cluster)) + "\n", "cyan")
        extra = leaf_paths(self.form.base)
        if extra:
            notes.append("sent as the file has them (no field here): ", "dim")
            notes.append(clean(", ".join(extra)))
        widget = self.query_one("#form-notes", Static)
        update_static(widget, notes)
        widget.display = bool(notes.plain)

    def _schedule_preview(self) -> None:
        if self._preview_timer is not None:
            self._preview_timer.stop()
        self._preview_timer = self.set_timer(PREVIEW_DELAY, self._render_preview)

    def _render_preview(self) -> None:
        """Render the backend's native artifact (sbatch script, manifests, config) for a valid form."""
        self._preview_timer = None
        preview = self.query_one("#preview", Static)
        if self._spec is None:
            preview.update(Text("The preview shows once the form has no problems.", "dim"))
            return
        try:
            text = self.app.hub.backend(self._cluster).render(self._spec)
        except Exception as exc:
            preview.update(Text(clean(error_text(exc)), "bold red"))
            return
        preview.update(Text(clean(text, keep_newlines=True)))

    def refresh_data(self) -> None:
        """New Nodes data: the capacity box and its verdict change (a never-fit is a problem); the
        form is the user's."""
        if self._form is not None and self.is_mounted:
            self._validate()

    def _capacity_verdict(self, spec: JobSpec | None, data: dict[str, Any]) -> Verdict | None:
        """Fits now / waits / never fits for the request on the chosen cluster's nodes. While the name or
        command is still missing, the request is read from the rest of the form. None without node
        data, or while the request itself has problems."""
        snapshot = self.app.hub.snapshots.get(self._cluster)
        if snapshot is None or not snapshot.nodes:
            return None
        if spec is None:
            try:
                spec = spec_from_data(
                    {**data, "name": data.get("name") or "-", "command": data.get("command") or "-"}, "<form>"
                )
            except SpecError:
                return None
        return verdict(snapshot.nodes, self.app.hub.backend(self._cluster).capacity_request(spec))

    def _show_capacity(self) -> None:
        """Whole free nodes and free GPUs per partition/pool of the chosen cluster, and the verdict on
        the request (fits now, waits or never fits, and why)."""
        if self._form is None or not self.is_mounted:
            return
        out = Text()
        snapshot = self.app.hub.snapshots.get(self._cluster)
        if snapshot is None or not snapshot.nodes:
            out.append("no node data yet", "dim")
        else:
            for pool in pools(snapshot.nodes):
                if pool.gpus_total:
                    out.append(f"{clean(pool.name)}: ", "bold")
                    out.append(
                        f"{pool.whole_free}/{pool.nodes} whole nodes free, "
                        f"{pool.gpus_free}/{pool.gpus_total} GPUs free\n"
                    )
            found = self._verdict
            if found is None:
                out.append("the verdict shows once the request has no problems", "dim")
            else:
                out.append(clean(str(found)), {Fit.NOW: "green", Fit.WAITS: "yellow"}.get(found.fit, "bold red"))
        update_static(self.query_one("#capacity", Static), out)

    # -- where soonest: every cluster ranked for this job, and a move of the form to one ---------------
    def _placement_spec(self) -> JobSpec | None:
        """The form's job as a spec to rank clusters for (a missing name or command filled in, as for
        the capacity verdict); None while the request itself has problems."""
        if self._spec is not None:
            return self._spec
        data = self.form_data()[0]
        try:
            spec = spec_from_data(
                {**data, "name": data.get("name") or "-", "command": data.get("command") or "-"}, "<form>"
            )
        except SpecError:
            return None
        return replace(spec, native=self._native) if self._native is not None else spec

    def action_where(self) -> None:
        spec = self._placement_spec()
        if spec is None:
            self.notify("fix the request's problems first: then each cluster can be asked", markup=False)
            return
        hub = self.app.hub
        backends = candidates(hub.backend(n) for n in hub.names)
        self.query_one(WherePanel).show_asking([b.name for b in backends])
        self._rank_where(spec)

    @work(exclusive=True, group="where", exit_on_error=False)
    async def _rank_where(self, spec: JobSpec) -> None:
        hub = self.app.hub
        asks, down = [], []
        for backend in candidates(hub.backend(n) for n in hub.names):
            snapshot = hub.snapshots.get(backend.name)
            if snapshot is not None and snapshot.health is Health.ERROR and not snapshot.nodes:
                down.append((backend.name, snapshot.message or "no answer"))  # down: asking again only waits
            else:
                asks.append((backend, snapshot.nodes if snapshot is not None else ()))
        placed, errors = await place_all(asks, spec, WHERE_TIMEOUT)
        errors = down + errors
        self.where_ranking = placed
        self.query_one(WherePanel).show_ranking(placed, errors, self._cluster, self._writable())

    @on(WherePanel.Closed)
    def _where_closed(self) -> None:
        self.query_one(WherePanel).display = False
        self.focus_main()

    @on(WherePanel.Chosen)
    async def _where_chosen(self, event: WherePanel.Chosen) -> None:
        await self.move_to(event.cluster)

    async def move_to(self, cluster: str) -> None:
        """Move the form to ``cluster``, keeping its values, and say what does not carry over there."""
        if cluster == self._cluster:
            self.notify(clean(f"the form is for {cluster} already"), markup=False, timeout=3)
            return
        if cluster not in self._writable():
            self.notify(clean(f"{cluster} takes no jobs from here (read-only, or monitoring only)"), markup=False)
            return
        kind = self._kind
        await self._switch(cluster, kind)
        self._drafts.schedule()
        lost = [f"{key} (no such field on {cluster})" for key in self.form.hidden_values()]
        if self._kind is not kind:
            lost.insert(0, f"job type {kind.value} ({cluster} runs no {kind.value} jobs: {self._kind.value} now)")
        if self._native is not None and not self._takes(cluster):
            lost.insert(0, f"the file {self._native.file} ({cluster} does not take it as written)")
        said = "; not carried over: " + "; ".join(lost) if lost else "; every value carries over"
        self.moved_note = clean(f"moved the form to {cluster}{said}")
        self.notify(self.moved_note, title="Where", markup=False, timeout=8)
        self.query_one(WherePanel).display = False
        self.focus_main()

    # -- editing --------------------------------------------------------------------------------------
    @on(SpecForm.Edited)
    def _edited(self) -> None:
        self._file_problems = []
        self._validate()
        self._schedule_preview()
        self._drafts.schedule()

    @on(Select.Changed, "#cluster")
    async def _cluster_changed(self, event: Select.Changed) -> None:
        value = "" if event.select.value is Select.NULL else str(event.select.value)
        if value != self._cluster:
            await self._switch(value, self._kind)
            self._drafts.schedule()

    @on(Select.Changed, "#kind")
    async def _kind_changed(self, event: Select.Changed) -> None:
        value = event.select.value
        if value is not Select.NULL and value != self._kind.value:
            await self._switch(self._cluster, JobKind(value))
            self._drafts.schedule()

    async def _switch(self, cluster: str, kind: JobKind | None) -> None:
        """Show ``cluster``'s fields for ``kind`` (or its default kind where it does not run that)."""
        self._cluster = cluster
        self._kind = kind if kind in self._kinds(cluster) else self._default_kind(cluster)
        cluster_select = self.query_one("#cluster", Select)
        if cluster and cluster_select.value != cluster:
            cluster_select.value = cluster
        kind_select = self.query_one("#kind", Select)
        kind_select.set_options(self._kind_options(cluster))
        kind_select.value = self._kind.value
        await self.form.show(self._fields(cluster, self._kind), self._defaults(cluster))
        self._validate()
        self._render_preview()

    @on(Input.Submitted, "#spec-path")
    def _path_entered(self) -> None:
        self.action_load()

    @on(Input.Changed, "#spec-path")
    def _path_changed(self) -> None:
        self._show_state()  # a path typed but not loaded turns Submit off until it is loaded or cleared

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        """The line over the form says what the focused widget is (and so where keys go)."""
        field = self.form.field_of(event.widget)
        label, help_text = (field.label, field.help) if field else WIDGET_HELP.get(event.widget.id or "", ("", ""))
        self.query_one("#field-help", Static).update(
            Text.assemble((f"{label}: ", "bold"), clean(help_text)) if help_text else ""
        )

    async def on_unmount(self) -> None:
        """Closing the app within the draft delay still keeps the last edits."""
        await self._drafts.flush()

    # -- files: spec files, templates, the draft -------------------------------------------------------
    async def _fill(
        self,
        data: dict[str, Any],
        source: str,
        form: dict[str, str] | None = None,
        touched: list[str] | None = None,
        cluster: str = "",
        kind: str = "",
    ) -> None:
        """Put a spec mapping into the form: its cluster and kind are chosen, its values fill the
        fields (texts in ``form`` win), the rest is kept and sent as it is."""
        values, base = split_data(data, self._known_fields())
        base.pop("kind", None)
        base.pop("cluster", None)
        command = data.get("command")
        argv = (values.get("command", ""), command) if isinstance(command, list) else None
        values.update(form or {})
        self.form.load(values, set(values) if touched is None else touched, base, argv)
        self._source = source
        kind = kind or str(data.get("kind") or JobKind.SINGLE.value)
        wanted = JobKind(kind) if kind in {k.value for k in JobKind} else None
        cluster = cluster or str(data.get("cluster") or "")
        writable = self._writable()
        if cluster not in writable or not self._takes(cluster):
            runs = [c for c in writable if wanted in self._kinds(c) and self._takes(c)]
            cluster = self._cluster if self._cluster in runs or not runs else runs[0]
        if wanted is not None and wanted not in self._kinds(cluster):
            self._file_problems.append(("kind", f"kind: no cluster here runs {wanted.value} jobs"))
        await self._switch(cluster, wanted)

    def action_load(self) -> None:
        """Load the path in the file box, typed there and not loaded yet; else (the box empty, or
        naming the file already loaded) go into the box with its text selected, so the next path
        typed replaces it instead of running as keys."""
        box = self.query_one("#spec-path", Input)
        path = box.value.strip()
        if not path or (path == self._loaded_box and self.focused is not box):
            box.focus()
            box.select_all()
            return
        self.resume_note = self.before_submit = None  # another file: no longer the resume
        # Out of the text fields now, before the file is read: keys typed while it loads are the
        # app-wide keys, never letters added to the path or to a field the load redraws.
        self.focus_main()
        self._start_load(path)

    def _start_load(self, path: str, values: dict[str, str] | None = None, cluster: str = "") -> Worker[None]:
        self._loading = path  # Submit is off until this load ends, whichever way
        self._loads += 1
        self._show_state()
        return self._load(path, self._loads, values, cluster)

    @work(exclusive=True, group="load-spec", exit_on_error=False)
    async def _load(self, path: str, token: int, values: dict[str, str] | None = None, cluster: str = "") -> None:
        """Load ``path`` into the form. A file that cannot be read, or is not a mapping, changes
        nothing in the form: its error is listed, and Submit stays off while the box names it."""
        try:
            read = await asyncio.to_thread(read_spec, path)
            self._file_problems = read.problems
            if read.data is None:
                return
            problems = bool(read.problems)
            self._loaded_box = path
            self._native = read.native
            await self._fill(read.data, read.file, values, cluster=cluster)  # what the file says, values over it
        finally:
            if token == self._loads:  # not a load that a newer one replaced
                self._loading = ""
            if self.is_mounted:
                self._validate()
        self._drafts.schedule()
        self.notify(clean(f"loaded {path}" + (" (with problems)" if problems else "")), markup=False, timeout=2)

    def action_open_editor(self) -> None:
        self._open_editor()

    @work(exclusive=True, group="open-editor", exit_on_error=False)
    async def _open_editor(self) -> None:
        """The loaded file (or, with none, the form as a spec in a private temporary file) in $VISUAL /
        $EDITOR (vi if neither is set), the console suspended; then loaded into the form again. A file
        that no longer loads keeps the form, and its problems are listed with their lines."""
        source, scratch = self._source, self._scratch
        own = bool(source) and source != scratch and not source.startswith("<")
        own = own and await asyncio.to_thread(Path(source).is_file)
        if own:
            path = source
        elif bool(scratch) and await asyncio.to_thread(Path(scratch).is_file):
            path = scratch  # the spec edited last time, which did not load: its text as the user left it
        else:
            path = self._scratch = await asyncio.to_thread(_spec_file, templates.template_text(self.form_data()[0]))
        editor = shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")
        failed = self._run_editor(editor, path)
        if failed:
            self.app.report_error("Cannot open the editor", f"{shlex.join(editor)}: {failed}")
            return
        self.query_one("#spec-path", Input).value = path if own else ""
        try:
            await self._start_load(path).wait()
        except Exception:
            pass  # the load lists its own problems
        if not own and not self._file_problems:  # the form holds what the spec says now
            self._scratch = ""
            self._source = "" if self._source == path else self._source
            await asyncio.to_thread(Path(path).unlink, missing_ok=True)

    def _run_editor(self, editor: list[str], path: str) -> str:
        """Run the editor on ``path`` in the real terminal; why it could not run, or ""."""
        try:
            with self.app.suspend():  # the terminal is the editor's until it exits (the console waits)
                subprocess.run([*editor, path], check=False)
        except (OSError, ValueError, SuspendNotSupported) as exc:
            return str(exc) or type(exc).__name__
        return ""

    def action_templates(self) -> None:
        self._pick_template()

    @work(exclusive=True, group="pick-template", exit_on_error=False)
    async def _pick_template(self) -> None:
        found = await asyncio.to_thread(templates.list_templates)
        path = await self.app.push_screen_wait(TemplatePickerScreen(found, templates.user_dir()))
        if path is not None and projects.is_project(path):
            path = await self._write_project(path.name)
        if path is not None:
            self.query_one("#spec-path", Input).value = str(path)
            self._start_load(str(path))

    async def _write_project(self, name: str) -> Path | None:
        """Ask for a folder, write template project ``name`` there; its spec's path (None: not written)."""
        prompt = f"Write the {name} project (code and job.yaml) into a new or empty folder:"
        folder = await self.app.push_screen_wait(PromptScreen(prompt, f"~/{name}"))
        if not folder:
            return None
        try:
            spec = await asyncio.to_thread(projects.write_project, name, folder)
        except (projects.ProjectError, OSError) as exc:
            self.app.report_error("Project not written", str(exc))
            return None
        self.notify(clean(f"wrote {display_path(spec.parent)}/"), markup=False, timeout=3)
        return spec

    def action_save_template(self) -> None:
        data, text_problems = self.form_data()
        if text_problems:
            self.notify(
                "fix the marked fields first: their text cannot be saved as it is", severity="warning", markup=False
            )
            return

        def named(name: str | None) -> None:
            if name:
                self._save_template(data, name, False)

        self.app.push_screen(
            PromptScreen(
                f"Save the form as a template in {templates.user_dir()}/ named:",
                templates.template_name(str(data.get("name") or "")),
            ),
            named,
        )

    @work(group="save-template", exit_on_error=False)
    async def _save_template(self, data: dict[str, Any], name: str, overwrite: bool) -> None:
        try:
            path = await asyncio.to_thread(templates.save_template, data, name, overwrite=overwrite)
        except FileExistsError:
            if await self.app.push_screen_wait(ConfirmScreen(f"Template {name} exists. Replace it?")):
                self._save_template(data, name, True)
            return
        except (ValueError, OSError) as exc:
            self.app.report_error("Template not saved", str(exc))
            return
        self.notify(clean(f"saved template {path}"), markup=False, timeout=3)

    def action_reset(self) -> None:
        def answered(yes: bool | None) -> None:
            if yes:
                self._reset()

        self.app.push_screen(ConfirmScreen("Clear the form back to the cluster's defaults?"), answered)

    @work(group="reset-form", exit_on_error=False)
    async def _reset(self) -> None:
        self.form.load({}, (), {})
        self.resume_note = self.before_submit = None
        self._source, self._file_problems, self._loaded_box, self._native = "", [], "", None
        self.query_one("#spec-path", Input).value = ""  # the form no longer holds that file
        await self._switch(self._cluster, self._default_kind(self._cluster))
        self._drafts.clear()

    def _draft(self) -> drafts.Draft:
        form = self.form
        return drafts.Draft(
            self._cluster,
            self._kind.value,
            self.form_data()[0],
            {k: form.values[k] for k in sorted(form.touched) if k in form.values},
            tuple(sorted(form.touched)),
            self._source,
        )

    @work(group="draft-restore", exit_on_error=False)
    async def _restore_draft(self) -> None:
        draft = await self._drafts.read()
        if draft is not None and not self.form.touched:
            try:
                if draft.source and not draft.source.startswith("<"):  # a job file sent as written: read it again
                    self._native = (await asyncio.to_thread(read_spec, draft.source)).native
                await self._fill(draft.spec, draft.source, draft.form, list(draft.touched), draft.cluster, draft.kind)
            except Exception as exc:
                self._drafts.warn_ignored(f"{type(exc).__name__}: {exc}")
                self._native = None
                self.form.load({}, (), {})
                await self._switch(self._cluster, self._kind)
            else:
                self.notify("restored the unfinished form", timeout=2, markup=False)
        self._drafts.start()

    # -- actions --------------------------------------------------------------------------------------
    def check_action(self, action: str, parameters) -> bool | None:
        if action == "submit" and self.app.read_only:
            return False
        return True

    def action_leave_field(self) -> None:
        """Leave the text field for the cluster chooser, so single keys (1-5, ?) work again."""
        if not is_typing(self.focused):
            raise SkipAction()  # nothing to leave: escape goes back to the Queue
        self.focus_main()

    def focus_main(self) -> None:
        self.query_one("#cluster", Select).focus()

    @on(Button.Pressed, "#submit")
    def action_submit(self) -> None:
        spec = self._validate()
        if spec is None or self._submitting:
            return
        self._submitting = True
        self.query_one("#submit", Button).disabled = True
        unknown = self.unknown_submit
        tag = unknown[2] if unknown is not None and unknown[:2] == (self._cluster, spec) else None
        self._submit(spec, self._cluster, tag)

    @work(group="submit", exit_on_error=False)
    async def _submit(self, spec: JobSpec, cluster: str, tag: str | None = None) -> None:
        hub = self.app.hub
        form_spec = spec
        try:
            if self.before_submit is not None:
                spec = await self.before_submit(spec, cluster)
            job_id = await hub.submit(cluster, spec, tag)
        except SubmitUnknown as exc:  # the job may exist: keep the form and draft, remember the tag
            self.unknown_submit = (cluster, form_spec, exc.tag)
            self.notify(
                clean(f"{exc}: Submit on this unchanged form does that"),
                title=exc.title,
                severity="warning",
                timeout=30,
                markup=False,
            )
            self.app.request_refresh(cluster)
        except Exception as exc:
            self.app.report_error("Submit failed", error_text(exc))
        else:
            self.unknown_submit = None
            self.last_submitted = (cluster, job_id)
            self._drafts.clear()
            self.notify(clean(f"submitted job {job_id} to {cluster}"), title="Submitted", markup=False)
            self.app.request_refresh(cluster)
        finally:
            self._submitting = False
            if self.is_mounted:
                self._validate()


def _spec_file(text: str) -> str:
    """``text`` in a new private (0600) temporary ``.yaml`` file, for the editor."""
    fd, name = tempfile.mkstemp(prefix="yanflow-spec-", suffix=".yaml")
    with os.fdopen(fd, "w") as out:
        out.write(text)
    return name
