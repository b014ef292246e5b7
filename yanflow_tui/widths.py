"""Plain-text layout shared by the Queue's table and the early paint (which runs before Rich and
Textual are imported, so this module imports neither): compact ages, and columns fitted to a width."""

from __future__ import annotations

from collections.abc import Iterable


def duration(seconds: float | None) -> str:
    """Compact age like kubectl: 45s, 12m, 3h, 5d."""
    if seconds is None:
        return "-"
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def fit_widths(
    natural: list[int], floors: dict[int, int], give_way: Iterable[tuple[int, int]], available: int, pad: int
) -> tuple[list[int], frozenset[int]]:
    """Widths that fit ``available`` cells (``pad`` blank cells each side of a column), and the
    columns hidden: flexible columns (``floors``: index -> the narrowest it may get) shrink first, the
    widest first, down to their floor; if that is not enough, the columns of ``give_way`` ((rank,
    index) pairs) are hidden in rank order, and the others shrink only as far as they still must."""
    order = sorted(give_way)
    hidden: frozenset[int] = frozenset()
    widths = list(natural)
    for given_way in range(len(order) + 1):
        hidden = frozenset(i for _, i in order[:given_way])
        widths = [0 if i in hidden else w for i, w in enumerate(natural)]
        excess = sum(w + 2 * pad for i, w in enumerate(widths) if i not in hidden) - available
        while excess > 0:
            shrinkable = [i for i in floors if i not in hidden and widths[i] > floors[i]]
            if not shrinkable:
                break
            widths[max(shrinkable, key=lambda i: widths[i] - floors[i])] -= 1
            excess -= 1
        if excess <= 0:
            break
    return widths, hidden
