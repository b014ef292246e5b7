"""The Submit screen's "where soonest" panel: every cluster that takes jobs, ranked for the form's job
(``placement_rank``), soonest first and "never" last with why; enter on one moves the form there
(``Chosen``), escape closes the panel. The screen asks and moves; this widget only shows and picks."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from yanflow_tui.placement_rank import Placement
from yanflow_tui.screens.render.where_rows import failed_text, placement_text

HEADING = "Where soonest (enter: move)"
WHERE_CLOSE_KEY = "ctrl+f"  # the key that opened the panel (the Submit screen's WHERE_KEY) closes it too


class WhereList(OptionList):
    """The ranked clusters, one two-line option each."""

    BINDINGS = [
        Binding("escape", "close", "Close", id="where-close"),
        Binding(WHERE_CLOSE_KEY, "close", "Close", id="where-close-alt"),
    ]

    def action_close(self) -> None:
        self.post_message(WherePanel.Closed())


class WherePanel(Vertical):
    class Chosen(Message):
        """The user picked ``cluster`` to move the form to."""

        def __init__(self, cluster: str) -> None:
            super().__init__()
            self.cluster = cluster

    class Closed(Message):
        """The user closed the panel."""

    def compose(self) -> ComposeResult:
        yield Label(HEADING, classes="heading")
        yield WhereList(id="where-list")

    @property
    def listing(self) -> WhereList:
        return self.query_one(WhereList)

    def show_asking(self, clusters: Sequence[str]) -> None:
        self.display = True
        self.listing.set_options(
            [Option(Text(f"asking {', '.join(clusters) or 'no cluster'}...", "dim"), disabled=True)]
        )

    def show_ranking(
        self, placed: Sequence[Placement], errors: Sequence[tuple[str, str]], current: str, writable: Collection[str]
    ) -> None:
        """The ranking (each option's id is its cluster), then the clusters that did not answer."""
        options = [
            Option(placement_text(i, p, current, p.cluster in writable), id=p.cluster)
            for i, p in enumerate(placed, start=1)
        ]
        options += [Option(failed_text(c, m), disabled=True) for c, m in errors]
        if not options:
            options = [Option(Text("no cluster here takes jobs", "dim"), disabled=True)]
        listing = self.listing
        listing.set_options(options)
        listing.highlighted = 0 if placed else None
        listing.focus()

    @on(OptionList.OptionSelected, "#where-list")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id:
            self.post_message(self.Chosen(event.option.id))
