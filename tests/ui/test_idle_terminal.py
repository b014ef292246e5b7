"""An idle console is quiet: in a real terminal (a pseudo-terminal, ``tests/terminal.py``), with
nothing changing, it writes nothing between refreshes. The fake cluster refreshes once an hour
(``tests/fakes/console.py``), longer than the window watched, so no refresh falls in it: any byte
written is a repaint of an unchanged screen (the header's ages ticking every second did that)."""

from __future__ import annotations

import re
import time

from terminal import Terminal

QUIET_WINDOW = 30.0  # s watched, once settled
SETTLE = 3.0  # s without output that say the first screen and its follow-ups are drawn


def test_an_idle_console_writes_nothing_to_the_terminal_for_30_seconds(tmp_path):
    term = Terminal.console_shown(tmp_path, 80, 24)
    try:
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


def test_a_refresh_that_changes_nothing_writes_nothing(tmp_path):
    """The cluster refreshed every second with the same jobs (days old): the table's rows are never written
    again (a whole repaint was ~27 KB a refresh at 200x50), nor the header, which says the same after each
    refresh ("hpc 0s"; it was written again at each one, ~300 bytes at 120 columns): nothing at all."""
    term = Terminal.console_shown(tmp_path, 120, 30, "--refresh-seconds", "1")
    try:
        names = [line.split()[2] for line in term.text().splitlines() if line.strip().startswith("hpc ")]
        assert names, term.text()
        end = time.monotonic() + 3.0  # the first screen's follow-ups (it never goes quiet: a refresh a second)
        while time.monotonic() < end:
            assert term.pump(0.2)
        start = len(term.output)
        end = time.monotonic() + 5.0  # five refreshes
        while time.monotonic() < end:
            assert term.pump(0.2)
        written = bytes(term.output[start:])
        text = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-Za-z]", b"", written).decode("utf-8", "replace")
        repainted = [name for name in names if name in text]
        assert not repainted, f"rows written again by a refresh that changed nothing: {repainted}; {text[:300]!r}"
        assert written == b"", f"{len(written)} bytes written by refreshes that changed nothing: {written[:300]!r}"
    finally:
        term.close()
