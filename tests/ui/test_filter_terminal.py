"""Opening and closing the Queue's ``/`` box repaints only what changes, in a real terminal (a
pseudo-terminal, ``tests/terminal.py``): the box takes the footer's line, so the rows above neither
move nor are written again. The box at the top pushed every row down a line, and a focus change
repainted the whole screen (Textual's ``Screen.focused``) and the whole table (its focus handlers and
``:focus`` styles): the whole screen was written for one key (issue #32)."""

from __future__ import annotations

import re
from collections.abc import Callable

from terminal import Terminal

SETTLE = 1.5  # s without output that say a key's answer is written


def plain(written: bytes) -> str:
    """What was written, without its escape sequences."""
    return re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-Za-z]", b"", written).decode("utf-8", "replace")


def answer(term: Terminal, key: str, shown: Callable[[], bool]) -> bytes:
    """The bytes written in answer to ``key``, up to the frame in which ``shown()`` holds (the box's
    line: the last of the frame, written top to bottom). Not up to a quiet moment: the box's cursor
    blinks while it has focus."""
    start = len(term.output)
    term.press(key)
    term.wait(lambda _text: shown(), f"the answer to {key}")
    return bytes(term.output[start:])


def test_opening_and_closing_the_filter_box_writes_only_its_line_and_the_cursors(tmp_path):
    term = Terminal.console_shown(tmp_path, 120, 30)
    try:
        term.wait(lambda _text: term.quiet_for() >= SETTLE, "the screen settled", timeout=30)
        rows = term.text().splitlines()[:-1]  # all but the footer's line
        names = [line.split()[2] for line in rows if line.strip().startswith("hpc ")]
        assert len(names) >= 3, term.text()
        others = names[1:]  # the cursor is on the first row: its line is drawn again, blurred

        written = answer(term, "/", lambda: "filter:" in term.line(29))  # the box, in the footer's line
        assert term.text().splitlines()[:-1] == rows, "the rows moved"
        repainted = [name for name in others if name in plain(written)]
        assert not repainted, f"rows written again by /: {repainted}; {len(written)} bytes"
        assert len(written) < 1500, f"{len(written)} bytes written by /: {plain(written)[:300]!r}"

        written = answer(term, "escape", lambda: "Open" in term.line(29))  # the box was empty: no row changes
        assert "filter:" not in term.text(), term.text()
        assert term.text().splitlines()[:-1] == rows, "the rows moved"
        repainted = [name for name in others if name in plain(written)]
        assert not repainted, f"rows written again by escape: {repainted}; {len(written)} bytes"
    finally:
        term.close()


def test_a_filter_kept_with_enter_shows_above_the_keys_and_escape_clears_it(tmp_path):
    term = Terminal.console_shown(tmp_path, 120, 30)
    try:
        term.press("/", *"101", "enter")
        term.wait(lambda text: "shown 1 of" in text and "Open" in term.line(29), "filtered, the keys back")
        assert "101" in term.line(28), term.text()  # the filter kept, above the keys
        term.press("escape")
        term.wait(lambda text: "shown 1 of" not in text and "101" not in term.line(28), "the filter cleared")
        assert "Open" in term.line(29), term.text()
    finally:
        term.close()
