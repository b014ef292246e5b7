"""The Submit screen's files: spec files and templates loaded into the form, the form saved as a
template, and the draft that keeps an unfinished form across restarts. A mixin of ``SubmitScreen``:
it uses the screen's form and its ``_switch`` / ``_writable`` / ``_kinds`` / ``_known_fields``.
All file I/O runs in threads."""

from __future__ import annotations

import asyncio
from typing import Any

from textual import work
from textual.widgets import Input

from yanflow_tui import drafts, templates
from yanflow_tui.errors import SpecError, YanflowError, format_problem
from yanflow_tui.formfields import split_data
from yanflow_tui.model import JobKind
from yanflow_tui.sanitize import clean
from yanflow_tui.screens.dialogs import ConfirmScreen, PromptScreen
from yanflow_tui.screens.templates import TemplatePickerScreen
from yanflow_tui.spec import spec_from_doc, text_problems

DRAFT_DELAY = 0.5  # s of quiet before the draft is written


def located(exc: SpecError) -> list[tuple[str, str]]:
    """A file's problems as (field, ``file:line: field: message``), for the Problems list."""
    return [(path, format_problem(file, line, path, message)) for file, line, path, message in exc.problems]


class SpecFiles:
    """Loading, templates and the draft, for ``SubmitScreen``."""

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
        if cluster not in writable:
            runs = [c for c in writable if wanted in self._kinds(c)]
            cluster = self._cluster if self._cluster in runs or not runs else runs[0]
        if wanted is not None and wanted not in self._kinds(cluster):
            self._file_problems.append(("kind", f"kind: no cluster here runs {wanted.value} jobs"))
        await self._switch(cluster, wanted)

    def action_load(self) -> None:
        path = self.query_one("#spec-path", Input).value.strip()
        if not path:
            self.query_one("#spec-path", Input).focus()
            return
        # Out of the text fields now, before the file is read: keys typed while it loads are the
        # app-wide keys, never letters added to the path or to a field the load redraws.
        self.focus_main()
        self._start_load(path)

    def _start_load(self, path: str) -> None:
        self._loading = path  # Submit is off until this load ends, whichever way
        self._loads += 1
        self._show_state()
        self._load(path, self._loads)

    @work(exclusive=True, group="load-spec", exit_on_error=False)
    async def _load(self, path: str, token: int) -> None:
        """Load ``path`` into the form. A file that cannot be read, or is not a mapping, changes
        nothing in the form: its error is listed, and Submit stays off while the box names it."""
        try:
            try:
                doc = await asyncio.to_thread(templates.read_template, path)
            except SpecError as exc:
                self._file_problems = located(exc)
                return
            if not isinstance(doc.data, dict):
                where = doc.line("")
                self._file_problems = [("", format_problem(doc.file, where, "", "expected a mapping of spec fields"))]
                return
            unfit = text_problems(doc)
            if unfit:  # control characters or bytes that are not text: the form never shows them
                self._file_problems = located(SpecError(unfit))
                return
            try:
                spec_from_doc(doc)
            except SpecError as exc:
                self._file_problems = located(exc)
            else:
                self._file_problems = []
            problems = bool(self._file_problems)
            self._loaded_box = path
            await self._fill(doc.data_as_written(), doc.file)  # the fields show what the file says
        finally:
            if token == self._loads:  # not a load that a newer one replaced
                self._loading = ""
            if self.is_mounted:
                self._validate()
        self._schedule_draft()
        self.notify(clean(f"loaded {path}" + (" (with problems)" if problems else "")), markup=False, timeout=2)

    def action_templates(self) -> None:
        self._pick_template()

    @work(exclusive=True, group="pick-template", exit_on_error=False)
    async def _pick_template(self) -> None:
        found = await asyncio.to_thread(templates.list_templates)
        path = await self.app.push_screen_wait(TemplatePickerScreen(found, templates.user_dir()))
        if path is not None:
            self.query_one("#spec-path", Input).value = str(path)
            self._start_load(str(path))

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
        self._source, self._file_problems, self._loaded_box = "", [], ""
        self.query_one("#spec-path", Input).value = ""  # the form no longer holds that file
        await self._switch(self._cluster, self._default_kind(self._cluster))
        self._clear_draft()

    # -- the draft ------------------------------------------------------------------------------------
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

    def _schedule_draft(self) -> None:
        self._dirty = True
        if not self.draft_ready:
            return
        if self._draft_timer is not None:
            self._draft_timer.stop()
        self._draft_timer = self.set_timer(DRAFT_DELAY, self._save_draft)

    def _save_draft(self) -> None:
        self._draft_timer, self._dirty = None, False
        self.run_worker(self._draft_io(drafts.save_draft, self._draft()), group="draft", exit_on_error=False)

    def _clear_draft(self) -> None:
        if self._draft_timer is not None:
            self._draft_timer.stop()
        self._draft_timer, self._dirty = None, False
        self.run_worker(self._draft_io(drafts.clear_draft), group="draft", exit_on_error=False)

    async def _draft_io(self, call, *args) -> Any:
        """Draft file I/O, in a thread, one operation at a time and in order."""
        async with self._draft_lock:
            try:
                return await asyncio.to_thread(call, *args)
            except (OSError, ValueError, YanflowError) as exc:
                self.notify(clean(f"submit draft: {exc}"), severity="warning", markup=False)

    @work(group="draft-restore", exit_on_error=False)
    async def _restore_draft(self) -> None:
        try:
            async with self._draft_lock:
                draft = await asyncio.to_thread(drafts.load_draft)
        except (drafts.DraftError, OSError) as exc:
            self.notify(
                clean(f"ignored the saved Submit draft: {exc}"),
                title="Draft",
                severity="warning",
                markup=False,
                timeout=8,
            )
            draft = None
        if draft is not None and not self.form.touched:
            try:
                await self._fill(draft.spec, draft.source, draft.form, list(draft.touched), draft.cluster, draft.kind)
            except Exception as exc:
                self.notify(
                    clean(f"ignored the saved Submit draft: {type(exc).__name__}: {exc}"),
                    title="Draft",
                    severity="warning",
                    markup=False,
                    timeout=8,
                )
                self.form.load({}, (), {})
                await self._switch(self._cluster, self._kind)
            else:
                self.notify("restored the unfinished form", timeout=2, markup=False)
        self.draft_ready = True
        if self._dirty:
            self._schedule_draft()
