"""The Submit wizard's field block: the fields one backend declares for one job kind, each with its
error line under it. It keeps every field's text (also of fields not shown now, so switching cluster
or kind and back loses nothing), which fields the user set, and what a loaded file held that no field
shows. Fields the user did not set follow the chosen cluster's defaults."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.suggester import SuggestFromList
from textual.widget import Widget
from textual.widgets import Checkbox, Input, Label, Select, Static, TextArea

from yanflow_tui.formfields import CHOICE, FLAG, FormField, form_data, initial_text
from yanflow_tui.sanitize import clean


def widget_text(widget: Widget) -> str:
    """A field widget's value as the field's text."""
    if isinstance(widget, TextArea):
        return widget.text
    if isinstance(widget, Select):
        return "" if widget.value is Select.NULL else str(widget.value)
    if isinstance(widget, Checkbox):
        return "true" if widget.value else ""
    if isinstance(widget, Input):
        return widget.value
    raise TypeError(f"not a field widget: {type(widget).__name__}")


def select_options(values: Iterable[str]) -> list[tuple[Text, str]]:
    """Options for a ``Select`` whose values came from a file or the config: shown as plain text (a
    ``str`` prompt is read as markup, and ``[/x]`` in a value would crash the app)."""
    return [(Text(clean(value)), value) for value in values]


def flag_label(ticked: bool) -> str:
    """A checkbox says its state in words: with NO_COLOR its glyph looks the same either way."""
    return "yes" if ticked else "no"


def field_widget(field: FormField, text: str) -> Widget:
    wid = field.widget_id
    if field.kind == CHOICE:
        choices = list(field.choices) + ([text] if text and text not in field.choices else [])
        widget: Widget = Select(
            select_options(choices),
            id=wid,
            allow_blank=not field.default,
            compact=True,
            value=text if text else Select.NULL,
        )
    elif field.kind == FLAG:
        widget = Checkbox(flag_label(text == "true"), text == "true", id=wid, compact=True)
    elif field.multiline:
        widget = TextArea(
            text, id=wid, soft_wrap=True, show_line_numbers=False, compact=True, classes=f"lines-{field.lines}"
        )
    else:
        # choices of a text field (the images catalogue): completions offered as you type; any text goes
        suggester = SuggestFromList(field.choices, case_sensitive=False) if field.choices else None
        widget = Input(text, placeholder=field.placeholder, id=wid, compact=True, suggester=suggester)
    if field.help:
        widget.tooltip = field.help
    return widget


class SpecForm(Vertical):
    """The shown fields; ``data()`` is what they say, as a spec mapping."""

    class Edited(Message):
        """The user changed a field."""

    def __init__(self, fields: Iterable[FormField], defaults: dict[str, Any], **kwargs) -> None:
        super().__init__(**kwargs)
        self.fields: tuple[FormField, ...] = tuple(fields)
        self.defaults = defaults
        self.values: dict[str, str] = {}  # key -> text, for every field ever shown or loaded
        self.touched: set[str] = set()  # keys the user (or a loaded file) set
        self.base: dict[str, Any] = {}  # what a loaded file held that no field shows: sent as it was
        self.argv: tuple[str, list] | None = None  # a loaded argv command and its text, kept as a list
        self._lock = asyncio.Lock()
        self._rows: dict[str, tuple[Widget, Static]] = {}  # key -> (row, its error line): no DOM queries
        self._shown: dict[str, tuple[str, ...]] = {}  # key -> the problems its error line shows now
        self._follow_defaults()

    def compose(self) -> ComposeResult:
        for field in self.fields:
            yield self._row(field)

    def _row(self, field: FormField) -> Widget:
        error = Static(id=f"err-{field.widget_id}", classes="field-error")
        row = Vertical(
            Horizontal(Label(field.label), field_widget(field, self.values.get(field.key, "")), classes="field"),
            error,
            classes="field-row",
            id=f"row-{field.widget_id}",
        )
        self._rows[field.key] = (row, error)
        return row

    def _follow_defaults(self) -> None:
        for field in self.fields:
            if field.key not in self.touched:
                self.values[field.key] = initial_text(field, self.defaults)

    async def show(self, fields: Iterable[FormField], defaults: dict[str, Any]) -> None:
        """Show ``fields`` (another cluster or kind): texts the user set stay, the rest follow ``defaults``."""
        async with self._lock:
            self.fields, self.defaults = tuple(fields), defaults
            self._follow_defaults()
            self._rows, self._shown = {}, {}
            with self.app.batch_update():
                await self.remove_children()
                await self.mount_all([self._row(f) for f in self.fields])

    def load(
        self, values: dict[str, str], touched: Iterable[str], base: dict[str, Any], argv: tuple[str, list] | None = None
    ) -> None:
        """Replace the whole form state (a loaded file, a template, a draft, a reset); ``show`` draws it."""
        self.values, self.touched, self.base, self.argv = dict(values), set(touched), base, argv

    # -- reading ------------------------------------------------------------------------------------
    def data(self) -> tuple[dict[str, Any], dict[str, list[str]]]:
        """The shown fields over ``base``, as a spec mapping; and each field's text problems."""
        data, problems = form_data(self.fields, self.values, self.base)
        if self.argv is not None and data.get("command") == self.argv[0].strip("\n"):
            data["command"] = list(self.argv[1])
        return data, problems

    def field_of(self, widget: Widget | None) -> FormField | None:
        wid = widget.id if widget is not None else None
        return next((f for f in self.fields if f.widget_id == wid), None)

    def hidden_values(self) -> list[str]:
        """Keys the user set that the shown fields do not include: they are not sent."""
        shown = {f.key for f in self.fields}
        return sorted(k for k in self.touched if k not in shown and self.values.get(k, "").strip())

    # -- editing ------------------------------------------------------------------------------------
    @on(Input.Changed)
    @on(TextArea.Changed)
    @on(Select.Changed)
    @on(Checkbox.Changed)
    def _changed(self, event: Input.Changed | TextArea.Changed | Select.Changed | Checkbox.Changed) -> None:
        control = event.control
        field = self.field_of(control)
        if field is None:
            return
        event.stop()
        text = widget_text(control)  # the value now, not when sent
        if isinstance(control, Checkbox):
            control.label = flag_label(control.value)
        if self.values.get(field.key) == text:
            return  # the echo of a value set by the form itself
        self.values[field.key] = text
        self.touched.add(field.key)
        self.post_message(self.Edited())

    def show_problems(self, problems: dict[str, list[str]]) -> None:
        """Each field's problems on the line under it (only the lines that change are redrawn)."""
        for key, (row, error) in self._rows.items():
            found = tuple(problems.get(key, ()))
            if self._shown.get(key, ()) == found:
                continue
            self._shown[key] = found
            error.update(Text("\n".join(clean(p) for p in found), style="red"))
            error.display = bool(found)
            row.set_class(bool(found), "has-error")
