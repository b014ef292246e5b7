"""A screen shown again is written once, in a real terminal (``tests/terminal.py``): the frame that
shows it, then nothing. Submit redrew its problems panel and Clusters its list with what they already
showed (``Static.update`` and ``replace_option_prompt_at_index`` repaint whatever they are given, and
the list's ages ticked every second), so each was written a second time ~30 ms after the frame, and a
switch to either took twice as long as one to the Queue in the terminal benchmark (issue #32)."""

from __future__ import annotations

import pytest
from terminal import Terminal
from test_filter_terminal import plain

SETTLE = 1.0  # s without output that say the screen's answer is written whole


@pytest.mark.parametrize(
    "key, title, mark",
    [("3", "Submit", "required field"), ("5", "Clusters", "last good refresh")],
)
def test_a_screen_shown_again_is_written_in_one_frame(tmp_path, key, title, mark):
    term = Terminal.console_shown(tmp_path, 100, 30)
    try:
        for _ in range(2):  # (the second show of a screen still applies the stylesheet: Textual's first look)
            term.press(key)
            term.wait_title(title)
            term.wait(lambda text: mark in text and term.quiet_for() >= SETTLE, f"the {title} screen settled")
            term.press("1")
            term.wait_title("Queue")
            term.wait(lambda _text: term.quiet_for() >= SETTLE, "the Queue settled")
        start = len(term.output)
        term.press(key)
        term.wait_title(title)
        term.wait(lambda _text: term.quiet_for() >= SETTLE, f"the {title} screen settled again")
        written = plain(bytes(term.output[start:]))
        shown = term.text().count(mark)
        assert shown, term.text()
        assert written.count(mark) == shown, f"{mark!r} written {written.count(mark)} times, shown {shown}: {written!r}"
    finally:
        term.close()
