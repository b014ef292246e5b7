"""An interactive shell in a pod (exec with a TTY), bridged to the real terminal: the local terminal in
raw mode, keys to the exec's stdin, its output to the screen, the terminal's size sent on the resize
channel at the start and on each SIGWINCH. Runs while the console is suspended; the terminal's
settings are restored however the shell ends.
"""

from __future__ import annotations

import json
import os
import select
import sys
from typing import Any

from yanflow_tui.backends.kubernetes.podexec import ERROR, RESIZE, STDOUT, exit_code, read_frame
from yanflow_tui.backends.rawterm import raw_terminal, window_size

# The pod's own shell: bash where the image has it, else sh.
SHELL_COMMAND = ("sh", "-c", "command -v bash >/dev/null 2>&1 && exec bash || exec sh")
POLL = 0.25


def interact(client: Any, fd_in: int | None = None, fd_out: int | None = None) -> int:
    """Bridge the started TTY exec ``client`` to the terminal until the shell ends; its exit status."""
    fd_in = sys.stdin.fileno() if fd_in is None else fd_in
    fd_out = sys.stdout.fileno() if fd_out is None else fd_out
    kept: dict[int, bytes] = {}  # the error channel, with the exit code
    with raw_terminal(fd_in) as resized:
        try:
            sock = client.sock.sock
            while True:
                if resized.is_set():
                    resized.clear()
                    columns, lines = window_size(fd_out)
                    client.write_channel(RESIZE, json.dumps({"Width": columns, "Height": lines}))
                ready, _, _ = select.select([fd_in, sock], [], [], POLL)
                if fd_in in ready:
                    data = os.read(fd_in, 4096)
                    if not data:
                        break
                    client.write_stdin(data)
                while sock in ready or getattr(sock, "pending", lambda: 0)():
                    ready = []
                    try:
                        frame = read_frame(client, 0)
                    except Exception:  # Closed, or the connection dropped: the exit code if it came
                        return _status(kept)
                    if frame is not None and frame[0] == STDOUT:
                        os.write(fd_out, frame[1])
                    elif frame is not None:
                        kept[frame[0]] = kept.get(frame[0], b"") + frame[1]
            return _status(kept)
        finally:
            client.close()  # before the terminal's settings come back


def _status(kept: dict[int, bytes]) -> int:
    try:
        return exit_code(kept.get(ERROR, b""))
    except Exception:
        return 255
