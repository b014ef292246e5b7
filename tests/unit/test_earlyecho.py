"""The cached paint's echo of the ``/`` box (``yanflow_tui.earlyecho``): what it draws for the keys
typed while the paint shows, and that a key it cannot draw ends it, the keys all kept for the console."""

from __future__ import annotations

import os
import pty
import re
import tty

from waiting import wait_until

from yanflow_tui import earlypaint
from yanflow_tui.earlyecho import FilterEcho
from yanflow_tui.earlykeys import KeyReader
from yanflow_tui.queuecolumns import FILTER_PLACEHOLDER

FOOTER = "\x1b[0;48;5;236m" + " " * 40


def echo(columns: int = 40) -> tuple[FilterEcho, list[str]]:
    written: list[str] = []
    made = FilterEcho(written.append, 24, columns, FOOTER, earlypaint.Style("256"))
    return made, written


def plain(line: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", line)


def test_slash_opens_the_box_in_the_last_line_and_typing_backspace_and_escape_show_there():
    made, written = echo()
    made.feed(b"/")
    assert made.state == "open" and written[-1].startswith("\x1b[24;1H")
    assert plain(written[-1]) == f" {FILTER_PLACEHOLDER[:38]} "  # the placeholder, cut to the line
    made.feed(b"r")
    made.feed(b"un")
    assert plain(written[-1]) == " run" + " " * 36 and made.text == "run"  # padding, the text, the cursor
    made.feed(b"\x7f")
    assert plain(written[-1]).startswith(" ru ") and made.text == "ru"
    made.feed(b"\x1b")  # a lone Escape: closed, the footer's line back
    assert made.state == "closed" and written[-1] == f"\x1b[24;1H{FOOTER}\x1b[0m"
    made.feed(b"/")
    assert made.state == "open" and made.text == ""


def test_each_line_drawn_is_exactly_the_screen_wide_with_wide_characters_and_long_text():
    made, written = echo(columns=20)
    made.feed(b"/")
    made.feed("名前".encode())
    assert earlypaint.cells(plain(written[-1])) == 20 and "名前" in written[-1]
    made.feed(b"x" * 50)  # longer than the line: its end shows, as the box scrolls to the cursor
    assert earlypaint.cells(plain(written[-1])) == 20 and plain(written[-1]).rstrip().endswith("xxx")


def test_a_key_it_cannot_draw_ends_it_and_nothing_more_is_drawn():
    for first in (b"2", b"j", b"\x1b[B", b"\r"):  # another key before /: the live console answers it
        made, written = echo()
        made.feed(first)
        made.feed(b"/")
        assert made.state == "done" and written == []
    for after in (b"\x1b[B", b"\r", b"\t"):  # an arrow, Enter, Tab in the box: the picture stays
        made, written = echo()
        made.feed(b"/a")
        drawn = list(written)
        made.feed(after)
        made.feed(b"b")
        assert made.state == "done" and written == drawn


def test_the_reader_draws_each_read_as_it_comes_and_keeps_every_key_even_when_drawing_fails():
    master, slave = pty.openpty()
    tty.setraw(slave)
    drawn: list[bytes] = []
    try:
        reader = KeyReader(slave, drawn.append)
        os.write(master, b"/")
        wait_until(lambda: drawn == [b"/"], 5, "the first key drawn")
        os.write(master, b"a")
        wait_until(lambda: drawn == [b"/", b"a"], 5, "the second key drawn")
        assert reader.stop() == [b"/", b"a"]
    finally:
        os.close(master)
        os.close(slave)

    def broken(_data: bytes) -> None:
        raise OSError("the terminal went away")

    master, slave = pty.openpty()
    tty.setraw(slave)
    try:
        reader = KeyReader(slave, broken)
        os.write(master, b"/")
        wait_until(lambda: reader.chunks == [b"/"], 5, "the first key read")
        os.write(master, b"x")
        wait_until(lambda: len(reader.chunks) == 2, 5, "the next key read, the drawing off")
        assert reader.stop() == [b"/", b"x"]
    finally:
        os.close(master)
        os.close(slave)
