"""The plain data a ``VirtualTable`` is given, with no Textual: a ``Row`` (its key, cells, sort values,
group parent and style), a ``Cell``, ``LATER`` (the cells of a row made when it is first drawn or
measured) and ``RowChanges`` (what a new list of rows differs in). Models (``screens/models``) make
these; ``widgets/table.py`` draws them and re-exports them."""

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


class _Later(tuple):
    """No cells yet: equal to no cells, itself included (two rows that both wait for theirs may read
    differently once made)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return False

    def __ne__(self, other: object) -> bool:
        return True

    __hash__ = tuple.__hash__


# a row's cells when they are made as the row is first drawn or measured (by the table's ``make_row``),
# not when it is given: a filter keystroke at 100,000 jobs shows ~50,000 group members for the first
# time, and making and measuring all their cells took 150-250 ms of it (issue #32)
LATER: tuple = _Later()


class Row(NamedTuple):
    key: str
    cells: tuple[Cell, ...]
    sort: tuple = ()  # one sort value per column; default: the cell's text, numbers as numbers
    parent: str = ""  # key of the group row this one stays right under, whatever the sort
    style: str = ""  # a Rich style under the whole row's cells, e.g. "dim"
