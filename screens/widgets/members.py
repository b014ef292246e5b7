"""The members of a group job (trials of a search, tasks of an array, ranks of a multi-node job) as
one sortable table: id, state, reason, and every detail that differs between them, such as each
trial's hyperparameters and best metric."""

from __future__ import annotations

import re

from rich.text import Text
from textual.widgets import DataTable

from yanflow_tui.model import Job
from yanflow_tui.screens.render.rows import STATE_STYLES, natural_key, text

_NUMBER = re.compile(r"^(?:[^=]*=)?\s*(-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)\s*$")


def varying_details(jobs: list[Job]) -> list[str]:
    """Detail labels whose values differ between ``jobs`` (constants say nothing in a comparison)."""
    labels: dict[str, set[str]] = {}
    for job in jobs:
        for label, value in job.details:
            labels.setdefault(label, set()).add(value)
    return [
        label for label, values in labels.items() if len(values) > 1 or any(label not in dict(j.details) for j in jobs)
    ]


def sort_value(value: str) -> tuple:
    """Numbers (also in ``metric=0.25`` form) sort as numbers, before text; text sorts naturally."""
    match = _NUMBER.match(value)
    if match:
        return (0, float(match.group(1)), ())
    return (1, 0.0, natural_key(value))


class MembersTable(DataTable):
    """Sorted by ``sort_next`` / ``sort_reverse`` (the detail screen's ``o`` / ``O``) or a header click."""

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.labels: list[str] = []
        self.sort_column = -1
        self.reverse = False

    def load(self, jobs: list[Job]) -> None:
        self.clear(columns=True)
        self.labels = ["ID", "STATE", "REASON", *varying_details(jobs)]
        for index, label in enumerate(self.labels):
            self.add_column(text(label), key=str(index))
        for job in sorted(jobs, key=lambda j: natural_key(j.id)):
            values = dict(job.details)
            self.add_row(
                text(job.id),
                text(job.state.value, STATE_STYLES.get(job.state, "")),
                text(job.reason, "dim"),
                *(text(values.get(label, "-")) for label in self.labels[3:]),
                key=job.key,
            )

    def action_sort_next(self) -> None:
        if self.labels:
            self.sort_by((self.sort_column + 1) % len(self.labels), self.reverse)

    def action_sort_reverse(self) -> None:
        if self.labels:
            self.sort_by(max(self.sort_column, 0), not self.reverse)

    def sort_by(self, column: int, reverse: bool = False) -> None:
        self.sort_column, self.reverse = column, reverse
        self.sort(
            str(column),
            key=lambda cell: sort_value(cell.plain if isinstance(cell, Text) else str(cell)),
            reverse=reverse,
        )

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        column = event.column_index
        self.sort_by(column, not self.reverse if column == self.sort_column else False)

    def column_values(self, label: str) -> list[str]:
        """The column's cells top to bottom, as shown (for tests and export)."""
        index = self.labels.index(label)
        return [row[index].plain for row in (self.get_row(r.key) for r in self.ordered_rows)]
