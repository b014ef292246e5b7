"""Modal dialogs: yes/no confirmation, text prompt, choice, help, and the full text of status lines."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, Static

from yanflow_tui.keys import CANCEL_KEY
from yanflow_tui.sanitize import clean


class ConfirmScreen(ModalScreen[bool]):
    """Ask before a dangerous action. ``y``/``enter`` confirms, ``n``/``escape`` declines."""

    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm-yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm-no"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text(clean(self.question)), id="question")
            with Horizontal(id="buttons"):
                yield Button("Yes (y)", variant="error", id="yes")
                yield Button("No (n)", variant="primary", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)


class PromptScreen(ModalScreen[str | None]):
    """Ask for one line of text (a file path, a password). ``escape`` cancels. With ``password``
    the input is masked and kept exactly as typed."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="prompt-cancel"),
        Binding(CANCEL_KEY, "cancel", "Cancel", id="prompt-cancel-alt"),
    ]

    def __init__(self, question: str, default: str = "", password: bool = False) -> None:
        super().__init__()
        self.question = question
        self.default = default
        self.password = password

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text(clean(self.question)))
            yield Input(value=self.default, id="answer", password=self.password)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        value = event.value if self.password else event.value.strip()
        event.input.value = ""
        self.dismiss(value or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ChoiceScreen(ModalScreen[str | None]):
    """Pick one of a few words (a job action, a context). ``enter`` picks, ``escape`` cancels. The cursor
    starts on ``initial`` (e.g. the choice in use now)."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="choice-cancel"),
        Binding(CANCEL_KEY, "cancel", "Cancel", id="choice-cancel-alt"),
    ]

    def __init__(self, question: str, choices: list[str], initial: int = 0) -> None:
        super().__init__()
        self.question = question
        self.choices = choices
        self.initial = initial if 0 <= initial < len(choices) else 0

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text(clean(self.question)))
            yield OptionList(*[Text(clean(c)) for c in self.choices], id="choices")

    def on_mount(self) -> None:
        self.query_one(OptionList).highlighted = self.initial

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.choices[event.option_index])

    def action_cancel(self) -> None:
        self.dismiss(None)


class HelpScreen(ModalScreen[None]):
    """Every key of the screen underneath, with its binding id (for ``keymap:`` in the config)."""

    BINDINGS = [
        Binding("escape", "dismiss", "Close", id="help-close"),
        Binding(CANCEL_KEY, "dismiss", "Close", id="help-close-alt"),
    ]

    def __init__(self, rows: list[tuple[str, str, str]]) -> None:
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        table = Text()
        table.append("Keys  (remap with keymap: {binding-id: key} in the config)\n\n", "bold")
        for key, description, binding_id in self.rows:
            table.append(f"{key:>12}  ", "bold cyan")
            table.append(f"{description:<28}")
            table.append(f"{binding_id}\n", "dim")
        with VerticalScroll(id="dialog"):
            yield Static(table, id="help-text")


class FullTextScreen(ModalScreen[None]):
    """The whole text of the screen's status lines (``StatusLine``), wrapped, for what the line cut."""

    BINDINGS = [Binding("escape,q,i", "dismiss", "Close", id="full-text-close")]

    def __init__(self, texts: list[Text]) -> None:
        super().__init__()
        self.texts = texts

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog"):
            for i, text in enumerate(self.texts or [Text("Nothing here is cut.", style="dim")]):
                shown = text.copy()
                shown.no_wrap, shown.overflow = False, "fold"
                yield Static(shown, classes="full-text", id=f"full-text-{i}")
