"""The Submit screen: load a spec file or fill in the form, see errors as you type and a preview of
what the backend will receive, then submit. The form survives switching screens."""

from __future__ import annotations

import asyncio
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Footer, Input, Label, Select, Static, TextArea

from yanflow_tui.capacity import fit, pools
from yanflow_tui.errors import SpecError, YanflowError
from yanflow_tui.hub import error_text
from yanflow_tui.model import JobKind, JobSpec
from yanflow_tui.sanitize import clean
from yanflow_tui.screens.widgets import ClusterBar, DataScreen
from yanflow_tui.spec import load_spec, spec_from_data, spec_to_data

NUMBER_FIELDS = (("nodes", "Nodes"), ("gpus", "GPUs/node"), ("cpus", "CPUs/node"), ("memory", "Memory/node"))


def _field(label: str, widget) -> ComposeResult:
    with Horizontal(classes="field"):
        yield Label(label)
        yield widget


def _number(value: str) -> Any:
    value = value.strip()
    return int(value) if value.isdigit() else value


class SubmitScreen(DataScreen):
    TITLE_TEXT = "Submit"
    AUTO_FOCUS = "#spec-path"  # typing must land in the form, never trigger keys
    BINDINGS = [
        Binding("ctrl+s", "submit", "Submit", id="submit-form"),
        Binding("ctrl+o", "load", "Load file", id="load-spec"),
        Binding("escape", "leave_field", "Leave field", id="leave-field"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._base: dict[str, Any] = {}  # fields from a loaded file that the form does not show
        self._spec: JobSpec | None = None
        self._submitting = False

    def _writable(self) -> list[str]:
        hub = self.app.hub
        return [n for n in hub.names if not hub.backend(n).read_only and hub.backend(n).capabilities.submit]

    def compose(self) -> ComposeResult:
        yield ClusterBar()
        clusters = self._writable()
        with Horizontal(id="submit-body"):
            with VerticalScroll(id="form"):
                with Horizontal(classes="field"):
                    yield Input(placeholder="spec file, e.g. sample_jobs/local-shell.yaml", id="spec-path", compact=True)
                    yield Button("Load", id="load", compact=True)
                yield from _field("Cluster", Select([(c, c) for c in clusters], id="cluster", allow_blank=not clusters,
                                                    value=clusters[0] if clusters else Select.BLANK, compact=True))
                yield from _field("Kind", Select([(k.value, k.value) for k in JobKind], id="kind",
                                                 value=JobKind.SINGLE.value, allow_blank=False, compact=True))
                yield from _field("Name", Input(id="name", placeholder="job name", compact=True))
                yield from _field("Command", TextArea(id="command", soft_wrap=True, show_line_numbers=False))
                yield from _field("Image", Input(id="image", placeholder="containers only", compact=True))
                yield from _field("Workdir", Input(id="workdir", compact=True))
                for key, label in NUMBER_FIELDS:
                    default = "1" if key == "nodes" else "0" if key == "gpus" else ""
                    yield from _field(label, Input(id=key, value=default, compact=True))
                yield from _field("Env", TextArea(id="env", show_line_numbers=False))
                yield Button("Submit (ctrl+s)", id="submit", variant="success", compact=True)
            with Vertical(id="side"):
                yield Label("Problems", classes="heading")
                yield Static(id="errors")
                yield Label("Capacity now", classes="heading")
                yield Static(id="capacity")
                yield Label("Preview: what the backend receives", classes="heading")
                with VerticalScroll(id="preview-box"):
                    yield Static(id="preview")
        yield Footer()

    def on_mount(self) -> None:
        if not self._writable():
            self._show_errors(["no cluster accepts submissions (read-only or unsupported)"])
        self._validate()

    # -- form <-> spec -------------------------------------------------------------------------------
    def _value(self, selector: str) -> str:
        widget = self.query_one(selector)
        if isinstance(widget, TextArea):
            return widget.text
        if isinstance(widget, Select):
            return "" if widget.value is Select.BLANK else str(widget.value)
        return widget.value  # type: ignore[attr-defined]

    def form_data(self) -> tuple[dict[str, Any], list[str]]:
        """The form as a spec mapping, plus problems the mapping cannot express (bad env lines)."""
        data = {k: v for k, v in self._base.items()}
        problems: list[str] = []
        data["name"] = self._value("#name")
        data["kind"] = self._value("#kind")
        data["cluster"] = self._value("#cluster") or None
        data["command"] = self._value("#command").strip("\n") or None
        for key in ("image", "workdir"):
            data[key] = self._value(f"#{key}").strip() or None
        resources = dict(self._base.get("resources") or {})
        for key, _ in NUMBER_FIELDS:
            raw = self._value(f"#{key}")
            if raw.strip():
                resources[key] = _number(raw)
            else:
                resources.pop(key, None)
        data["resources"] = resources
        env: dict[str, str] = {}
        for number, line in enumerate(self._value("#env").splitlines(), 1):
            if not line.strip():
                continue
            key, sep, value = line.partition("=")
            if not sep:
                problems.append(f"env: line {number}: expected NAME=value, got {line.strip()!r}")
                continue
            env[key.strip()] = value
        data["env"] = env or None
        return {k: v for k, v in data.items() if v is not None}, problems

    def fill(self, spec: JobSpec) -> None:
        """Put a loaded spec into the form; fields the form lacks are kept and sent as they were."""
        data = spec_to_data(spec)
        self._base = {k: v for k, v in data.items() if k not in ("name", "kind", "cluster", "command", "image", "workdir", "env")}
        self.query_one("#name", Input).value = spec.name
        self.query_one("#kind", Select).value = spec.kind.value
        if spec.cluster and spec.cluster in self._writable():
            self.query_one("#cluster", Select).value = spec.cluster
        self.query_one("#command", TextArea).text = spec.command_text
        self.query_one("#image", Input).value = spec.image or ""
        self.query_one("#workdir", Input).value = spec.workdir or ""
        resources = data.get("resources", {})
        for key, _ in NUMBER_FIELDS:
            self.query_one(f"#{key}", Input).value = str(resources.get(key, ""))
        self.query_one("#env", TextArea).text = "\n".join(f"{k}={v}" for k, v in spec.env.items())

    def _validate(self) -> JobSpec | None:
        data, problems = self.form_data()
        spec = None
        try:
            spec = spec_from_data(data, "<form>")
        except SpecError as exc:
            problems += [f"{field}: {message}" if field else message for _, _, field, message in exc.problems]
        preview = ""
        if spec is not None and not problems:
            cluster = data.get("cluster")
            if not cluster:
                problems.append("cluster: no cluster accepts submissions")
            else:
                try:
                    preview = self.app.hub.backend(cluster).render(spec)
                except YanflowError as exc:
                    problems.append(str(exc))
        self._spec = spec if not problems else None
        self._show_capacity(data)
        self._show_errors(problems)
        self.query_one("#preview", Static).update(Text(clean(preview, keep_newlines=True)))
        self.query_one("#submit", Button).disabled = self._spec is None or self._submitting
        return self._spec

    def refresh_data(self) -> None:
        """New Nodes data: only the capacity line changes; the form is the user's."""
        self._show_capacity(self.form_data()[0])

    def _show_capacity(self, data: dict[str, Any]) -> None:
        """Whole free nodes per partition of the chosen cluster, and whether the request fits now."""
        out = Text()
        snapshot = self.app.hub.snapshots.get(data.get("cluster") or "")
        if snapshot is None or not snapshot.nodes:
            out.append("no node data yet", "dim")
        else:
            for pool in pools(snapshot.nodes):
                if pool.gpus_total:
                    out.append(f"{clean(pool.name)}: ", "bold")
                    out.append(f"{pool.whole_free}/{pool.nodes} whole nodes free, "
                               f"{pool.gpus_free}/{pool.gpus_total} GPUs free\n")
            resources = data.get("resources") or {}
            nodes, gpus = resources.get("nodes", 1), resources.get("gpus", 0)
            if isinstance(nodes, int) and isinstance(gpus, int):
                partition = (data.get("slurm") or {}).get("partition")
                ok, why = fit(snapshot.nodes, nodes, gpus, partition if isinstance(partition, str) else None)
                out.append(clean(why), "green" if ok else "yellow")
        self.query_one("#capacity", Static).update(out)

    def _show_errors(self, problems: list[str]) -> None:
        errors = self.query_one("#errors", Static)
        errors.update(Text("\n".join(clean(p) for p in problems) or "none", style="bold red" if problems else "green"))
        errors.set_class(bool(problems), "has-errors")

    @on(Input.Changed)
    @on(TextArea.Changed)
    @on(Select.Changed)
    def _changed(self, event) -> None:
        if getattr(event, "input", None) is not None and event.input.id == "spec-path":
            return
        self._validate()

    # -- actions -------------------------------------------------------------------------------------
    def check_action(self, action: str, parameters) -> bool | None:
        if action == "submit" and self.app.read_only:
            return False
        return True

    def action_leave_field(self) -> None:
        """Leave the text field, so single keys (1-4, ?) work again."""
        self.set_focus(None)

    @on(Button.Pressed, "#load")
    @on(Input.Submitted, "#spec-path")
    def action_load(self) -> None:
        path = self.query_one("#spec-path", Input).value.strip()
        if not path:
            self.query_one("#spec-path", Input).focus()
            return
        self._load(path)

    @work(exclusive=True, group="load-spec", exit_on_error=False)
    async def _load(self, path: str) -> None:
        try:
            spec = await asyncio.to_thread(load_spec, path)
        except SpecError as exc:
            self._show_errors(str(exc).splitlines())
            return
        self.fill(spec)
        self._validate()
        self.query_one("#submit", Button).focus()  # out of the text fields: enter submits, 1-4 switch screens
        self.notify(clean(f"loaded {path}"), markup=False, timeout=2)

    @on(Button.Pressed, "#submit")
    def action_submit(self) -> None:
        spec = self._validate()
        if spec is None or self._submitting:
            return
        self._submitting = True
        self.query_one("#submit", Button).disabled = True
        self._submit(spec, self._value("#cluster"))

    @work(group="submit", exit_on_error=False)
    async def _submit(self, spec: JobSpec, cluster: str) -> None:
        hub = self.app.hub
        try:
            job_id = await hub.call(hub.backend(cluster).submit(spec))
        except Exception as exc:  # noqa: BLE001 - every failure becomes a notification
            self.app.report_error("Submit failed", error_text(exc))
        else:
            self.last_submitted = (cluster, job_id)
            self.notify(clean(f"submitted job {job_id} to {cluster}"), title="Submitted", markup=False)
            self.app.request_refresh(cluster)
        finally:
            self._submitting = False
            self._validate()
