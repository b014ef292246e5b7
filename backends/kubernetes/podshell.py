"""An interactive shell in a pod (exec with a TTY), bridged to the real terminal: the local terminal in
raw mode, keys to the exec's stdin, its output to the screen, the terminal's size sent on the resize
channel at the start and on each SIGWINCH. Runs while the console is suspended; the terminal's
settings are restored however the shell ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import termios
import threading
import tty
from typing import Any

from yanflow_tui.backends.kubernetes.podexec import RESIZE, STDOUT, exit_code

# The pod's own shell: bash where the image has it, else sh.
SHELL_COMMAND = ("sh", "-c", "command -v bash >/dev/null 2>&1 && exec bash || exec sh")
POLL = 0.25


def interact(client: Any, fd_in: int | None = None, fd_out: int | None = None) -> int:
    """Bridge the started TTY exec ``client`` to the terminal until the shell ends; its exit status."""
    fd_in = sys.stdin.fileno() if fd_in is None else fd_in
    fd_out = sys.stdout.fileno() if fd_out is None else fd_out
    saved = termios.tcgetattr(fd_in) if os.isatty(fd_in) else None
    resized = threading.Event()
    resized.set()
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGWINCH, lambda *_: resized.set())
    try:
        if saved is not None:
            tty.setraw(fd_in)
        sock = client.sock.sock
        while client.is_open():
            if resized.is_set():
                resized.clear()
                with contextlib.suppress(OSError):
                    size = os.get_terminal_size(fd_out)
                    client.write_channel(RESIZE, json.dumps({"Width": size.columns, "Height": size.lines}))
            ready, _, _ = select.select([fd_in, sock], [], [], POLL)
            if fd_in in ready:
                data = os.read(fd_in, 4096)
                if not data:
                    break
                client.write_stdin(data)
            pending = getattr(sock, "pending", lambda: 0)()
            if sock in ready or pending:
                client.update(timeout=0)
            out = client.read_channel(STDOUT)
            if out:
                os.write(fd_out, out)
        out = client.read_channel(STDOUT)
        if out:
            os.write(fd_out, out)
        try:
            return exit_code(client)
        except Exception:
            return 255
    finally:
        client.close()
        if saved is not None:
            termios.tcsetattr(fd_in, termios.TCSADRAIN, saved)
        if previous is not None:
            signal.signal(signal.SIGWINCH, previous)
