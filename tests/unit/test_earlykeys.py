"""Keys typed while the cached first frame shows (``yanflow_tui.earlykeys``): read from the terminal
as they come, parsed as Textual's driver parses its reads, held in order until the console is ready."""

from __future__ import annotations

import os
import pty
import tty

from textual import events
from waiting import wait_until

from yanflow_tui.earlykeys import HeldKeys, KeyReader, parse


def keys(messages: list) -> list[str]:
    return [m.key for m in messages if isinstance(m, events.Key)]


def test_each_read_is_parsed_to_its_end_a_lone_escape_being_the_escape_key():
    assert keys(parse([b"2", b"\x1b", b"/", b"ab\r", b"\x1b[B", "é".encode()])) == [
        "2",
        "escape",
        "slash",
        "a",
        "b",
        "enter",
        "down",
        "é",
    ]
    assert keys(parse([b"\xc3", b"\xa9"])) == ["é"]  # a character split between two reads


def test_the_reader_keeps_each_read_until_stopped_and_leaves_the_rest_for_the_next_reader():
    master, slave = pty.openpty()
    tty.setraw(slave)
    try:
        reader = KeyReader(slave)
        os.write(master, b"2")
        wait_until(lambda: reader.chunks == [b"2"], 5, "the first key read")
        os.write(master, b"\x1b")
        wait_until(lambda: len(reader.chunks) == 2, 5, "the second key read")
        assert reader.stop() == [b"2", b"\x1b"] and reader.stop() == [b"2", b"\x1b"]
        os.write(master, b"q")
        assert os.read(slave, 10) == b"q"  # not read by the stopped reader
    finally:
        os.close(master)
        os.close(slave)


def test_held_input_is_posted_in_order_once_released_and_later_input_goes_straight_through():
    posted: list = []
    held = HeldKeys()
    held.attach(posted.append)
    held.add(parse([b"2", b"x"]))
    resize = events.Resize.from_dimensions((80, 24), None)
    assert held.hold(events.Key("down", None)) and not held.hold(resize)  # a resize is not input: it goes on
    assert held.hold(events.Paste("pasted"))
    assert posted == []
    held.release()
    assert keys(posted) == ["2", "x", "down"] and isinstance(posted[-1], events.Paste)
    assert not held.hold(events.Key("up", None))  # released: posted by the driver at once
    held.add(parse([b"2"]))  # (the driver started again after a suspend: nothing held twice)
    held.release()
    assert len(posted) == 4
