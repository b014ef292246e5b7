"""An idle console is quiet: in a real terminal (a pseudo-terminal, ``tests/terminal.py``), with
nothing changing, it writes nothing between refreshes. The fake cluster refreshes once an hour
(``tests/fakes/console.py``), longer than the window watched, so no refresh falls in it: any byte
written is a repaint of an unchanged screen (the header's ages ticking every second did that)."""

from __future__ import annotations

import time

from terminal import Terminal

QUIET_WINDOW = 30.0  # s watched, once settled
SETTLE = 3.0  # s without output that say the first screen and its follow-ups are drawn


def test_an_idle_console_writes_nothing_to_the_terminal_for_30_seconds(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    term = Terminal.console(home, 80, 24)
    try:
        term.wait_text("hpc/101|101")
        term.wait_text("Open")  # the footer
        settled = term.wait(lambda _text: term.quiet_for() >= SETTLE and term, "the screen settled", timeout=30)
        assert settled
        start = len(term.output)
        end = time.monotonic() + QUIET_WINDOW
        while time.monotonic() < end:
            assert term.pump(min(0.5, max(0.0, end - time.monotonic())))
        written = bytes(term.output[start:])
        assert written == b"", f"{len(written)} bytes written while idle: {written[:300]!r}"
    finally:
        term.close()
