"""The template picker: the user's saved templates and the shipped samples; ``enter`` loads one into
the Submit form, ``escape`` cancels. The caller lists the files (in a thread) and passes them in."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from yanflow_tui.keys import CANCEL_KEY
from yanflow_tui.locations import display_path
from yanflow_tui.sanitize import clean
from yanflow_tui.templates import Template


class TemplatePickerScreen(ModalScreen[Path | None]):
    CSS_PATH = "templates.tcss"
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="template-cancel"),
        Binding(CANCEL_KEY, "cancel", "Cancel", id="template-cancel-alt"),
    ]

    def __init__(self, templates: list[Template], folder: Path) -> None:
        super().__init__()
        self.templates = templates
        self.folder = folder

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text(clean(f"Load a template (yours are in {display_path(self.folder)})")))
            options = []
            for i, template in enumerate(self.templates):
                line = Text()
                line.append(clean(template.name), "bold")
                style = {"mine": "cyan", "project": "green"}.get(template.origin, "dim")
                line.append(f"  {template.origin}", style)
                if template.description:
                    line.append(f"\n  {clean(template.description)}", "dim")
                options.append(Option(line, id=str(i)))
            if not options:
                options.append(
                    Option(Text("no templates yet: save one with the Save template key", "dim"), disabled=True)
                )
            yield OptionList(*options, id="templates")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        if self.templates:
            options.highlighted = 0

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        if event.option.id is not None:
            self.dismiss(self.templates[int(event.option.id)].path)

    def action_cancel(self) -> None:
        self.dismiss(None)
