"""The plain data a ``VirtualTable`` is given, with no Textual: a ``Row`` (its key, cells, sort values,
group parent and style), a ``Cell`` and ``RowChanges`` (what a new list of rows differs in). Models
(``screens/models``) make these; ``widgets/table.py`` draws them and re-exports them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from rich.text import Text

Cell = str | Text | Callable[[], Text]


class RowChanges(NamedTuple):
    """What the rows given to ``set_rows`` differ in from the rows it was given last, when the caller
    knows: ``put``, the rows that may be new or in a new version (every other row is the very
    ``Row`` given last under its key); ``gone``, the keys of rows given last and not now. The table
    then looks at those alone (it checks that the counts add up, else compares every row).
    ``keep``: the rows given last are worth coming back to (a filter typed over them): they are kept,
    as when a quite different set replaces them (see ``widgets/table.py``)."""

    put: Sequence[Row]
    gone: Sequence[str] = ()
    keep: bool = False


class Row(NamedTuple):
    key: str
    cells: tuple[Cell, ...]
    sort: tuple = ()  # one sort value per column; default: the cell's text, numbers as numbers
    parent: str = ""  # key of the group row this one stays right under, whatever the sort
    style: str = ""  # a Rich style under the whole row's cells, e.g. "dim"
