"""The real terminal handed to an interactive session (a pod's TTY exec, an SSH pty): raw mode while it
runs, its settings restored however the session ends, and the window's resizes (SIGWINCH, where this is
the main thread) flagged for the session to pass on."""

from __future__ import annotations

import contextlib
import os
import signal
import termios
import threading
import tty
from collections.abc import Iterator


@contextlib.contextmanager
def raw_terminal(fd_in: int) -> Iterator[threading.Event]:
    """Raw mode on ``fd_in`` (where it is a TTY); yields an event set at the start and on each resize."""
    saved = termios.tcgetattr(fd_in) if os.isatty(fd_in) else None
    resized = threading.Event()
    resized.set()
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGWINCH, lambda *_: resized.set())
    try:
        if saved is not None:
            tty.setraw(fd_in)
        yield resized
    finally:
        if saved is not None:
            termios.tcsetattr(fd_in, termios.TCSADRAIN, saved)
        if previous is not None:
            signal.signal(signal.SIGWINCH, previous)


def window_size(fd_out: int) -> tuple[int, int]:
    """(columns, lines) of the terminal on ``fd_out``; 80x24 where it is none."""
    try:
        size = os.get_terminal_size(fd_out)
    except OSError:
        return 80, 24
    return size.columns, size.lines
