"""Exec in a pod over the API server's websocket (the official client's public ``kubernetes.stream.stream``,
channel protocol v4/v5): a command's stdout as a stream of byte chunks, its stderr and exit code from
the error channel. Runs in a thread. Bounds: the websocket's socket timeout (the client passes none,
so the library's default is set once here), and an idle limit on every read (no byte for that long:
the exec is given up), so a stalled pod never holds a thread forever.

Frames are read one at a time off the started exec's websocket (``client.sock``, websocket-client's own
API), never through the client's ``update``: that keeps a copy of every byte for ``read_all`` (``stream``
cannot turn it off), and from client 37 on it reads every frame already there before returning, a whole
file from a fast pod. One frame at a time, a download never sits whole in memory.
"""

from __future__ import annotations

import json
import re
import select
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from yanflow_tui.backends.kubernetes.cache import cause
from yanflow_tui.errors import BackendError

STDOUT, STDERR, ERROR, RESIZE, CLOSE = 1, 2, 3, 4, 255
SOCKET_TIMEOUT = 10.0
IDLE_TIMEOUT = 60.0
POLL = 0.5


def bound_sockets() -> None:
    import websocket

    if websocket.getdefaulttimeout() is None:
        websocket.setdefaulttimeout(SOCKET_TIMEOUT)


def exec_error(exc: BaseException) -> str:
    """What a failed exec upgrade said: the Status message where the answer carries one."""
    text = str(getattr(cause(exc), "reason", None) or exc)
    found = re.search(r'"message"\s*:\s*"((?:[^"\\]|\\.)*)"', text)
    if not found:
        return " ".join(text.split())[:300]
    try:
        return str(json.loads(f'"{found.group(1)}"'))
    except ValueError:
        return found.group(1)


def open_exec(
    core: Any, namespace: str, pod: str, container: str, argv: Sequence[str], tty: bool = False, stdin: bool = False
) -> Any:
    """The client's ``WSClient`` of a started exec (binary channels)."""
    from kubernetes.stream import stream

    bound_sockets()
    extra = {"container": container} if container else {}
    try:
        return stream(
            core.connect_get_namespaced_pod_exec,
            pod,
            namespace,
            command=list(argv),
            stdin=stdin,
            stdout=True,
            stderr=not tty,
            tty=tty,
            binary=True,
            _preload_content=False,
            **extra,
        )
    except Exception as exc:
        raise BackendError(f"exec in pod {namespace}/{pod}: {exec_error(exc)}") from None


class Closed(Exception):
    """The exec's websocket was closed."""


def read_frame(client: Any, timeout: float) -> tuple[int, bytes] | None:
    """The next frame of the exec: (channel, data); None when none came within ``timeout`` (or it carried
    no data); raises ``Closed`` once the websocket is closed."""
    from websocket import ABNF

    ws = client.sock
    if not ws.connected:
        raise Closed
    raw = ws.sock
    if not (isinstance(raw, ssl.SSLSocket) and raw.pending()):  # TLS: decrypted bytes select cannot see
        ready, _, _ = select.select([raw], [], [], timeout)
        if not ready:
            return None
    opcode, frame = ws.recv_data_frame(True)
    if opcode == ABNF.OPCODE_CLOSE:
        raise Closed
    data = frame.data if opcode in (ABNF.OPCODE_BINARY, ABNF.OPCODE_TEXT) else b""
    if isinstance(data, str):
        data = data.encode()
    if len(data) < 2 or data[0] == CLOSE:  # empty, or v5's close of one channel
        return None
    return data[0], data[1:]


def exit_code(error: bytes) -> int:
    """The exit code the error channel (``error``, its bytes) gave once the exec ended; none: a dropped connection."""
    if not error:
        raise BackendError("the exec connection dropped before the command ended")
    status = json.loads(error)
    if status.get("status") == "Success":
        return 0
    for cause_ in (status.get("details") or {}).get("causes") or ():
        if cause_.get("reason") == "ExitCode":
            return int(cause_.get("message") or 1)
    raise BackendError(str(status.get("message") or "exec failed"))


class ExecStream:
    """One command's run: iterate for its stdout chunks, then ``finish()`` for (code, stderr)."""

    def __init__(self, client: Any, idle: float = IDLE_TIMEOUT, stop: threading.Event | None = None) -> None:
        self.client = client
        self.idle = idle
        self.stop = stop or threading.Event()
        self.kept: dict[int, bytes] = {}  # stderr and the error channel

    def __iter__(self) -> Iterator[bytes]:
        quiet_since = time.monotonic()
        while True:
            if self.stop.is_set():
                self.client.close()
                raise BackendError("stopped")
            try:
                frame = read_frame(self.client, POLL)
            except Closed:
                return
            except Exception as exc:  # websocket-client's closed/timeout errors, OSError
                self.client.close()
                raise BackendError(f"the exec connection dropped: {exc}") from None
            if frame is not None and frame[0] == STDOUT:
                quiet_since = time.monotonic()
                yield frame[1]
                continue
            if frame is not None:
                self.kept[frame[0]] = self.kept.get(frame[0], b"") + frame[1]
            elif time.monotonic() - quiet_since > self.idle:
                self.client.close()
                raise BackendError(f"the pod sent nothing for {self.idle:.0f} s")

    def finish(self) -> tuple[int, str]:
        try:
            code = exit_code(self.kept.get(ERROR, b""))
        finally:
            self.client.close()
        return code, self.kept.get(STDERR, b"").decode("utf-8", "replace")


Runner = Callable[[Sequence[str]], ExecStream]


def run(
    start: Runner, argv: Sequence[str], sink: Callable[[bytes], None] | None = None, idle: float | None = None
) -> tuple[int, bytes, str]:
    """Run ``argv`` to its end: (exit code, stdout (empty when ``sink`` took it), stderr). ``idle``: a longer
    quiet time allowed (a command that prints only when done, e.g. hashing a large file)."""
    stream = start(argv)
    if idle is not None:
        stream.idle = idle
    out = bytearray()
    for chunk in stream:
        if sink is not None:
            sink(chunk)
        else:
            out += chunk
    code, err = stream.finish()
    return code, bytes(out), err


def checked(start: Runner, argv: list[str], what: str) -> bytes:
    """``run`` to its end, its stdout; a non-zero exit is a ``BackendError`` naming ``what``."""
    code, out, err = run(start, argv)
    if code:
        raise BackendError(f"{what}: {err.strip() or f'exit code {code}'}")
    return out
