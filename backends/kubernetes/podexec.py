"""Exec in a pod over the API server's websocket (the official client's ``kubernetes.stream.stream``,
channel protocol v4/v5): a command's stdout as a stream of byte chunks, its stderr and exit code from
the error channel. Runs in a thread. Bounds: the websocket's socket timeout (the client passes none,
so the library's default is set once here), and an idle limit on every read (no byte for that long:
the exec is given up), so a stalled pod never holds a thread forever.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from yanflow_tui.errors import BackendError

STDOUT, STDERR, ERROR, RESIZE = 1, 2, 3, 4
SOCKET_TIMEOUT = 10.0
IDLE_TIMEOUT = 60.0
POLL = 0.5


def bound_sockets() -> None:
    import websocket

    if websocket.getdefaulttimeout() is None:
        websocket.setdefaulttimeout(SOCKET_TIMEOUT)


def exec_error(exc: BaseException) -> str:
    """What a failed exec upgrade said: the Status message where the answer carries one."""
    while exc.__context__ is not None and not getattr(exc, "reason", None):
        exc = exc.__context__  # the client's ApiException(status=0) fails on its missing body: the cause is before
    text = str(getattr(exc, "reason", None) or exc)
    found = re.search(r'"message"\s*:\s*"((?:[^"\\]|\\.)*)"', text)
    return found.group(1) if found else " ".join(text.split())[:300]


def open_exec(
    core: Any, namespace: str, pod: str, container: str, argv: Sequence[str], tty: bool = False, stdin: bool = False
) -> Any:
    """The client's ``WSClient`` of a started exec (binary channels)."""
    import functools
    import importlib

    from kubernetes.stream import ws_client

    stream_module = importlib.import_module("kubernetes.stream.stream")  # the package's ``stream`` shadows it

    # ``stream`` with capture_all off: the client would otherwise keep a copy of every byte read (a
    # download's whole size in memory); the generated API method takes no such argument itself.
    stream = functools.partial(
        stream_module._websocket_request, functools.partial(ws_client.websocket_call, capture_all=False), None
    )
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


def exit_code(client: Any) -> int:
    """The exit code the error channel gave once the exec ended; a dropped connection raises."""
    raw = client.read_channel(ERROR)
    if not raw:
        raise BackendError("the exec connection dropped before the command ended")
    status = json.loads(raw)
    if status.get("status") == "Success":
        return 0
    for cause in (status.get("details") or {}).get("causes") or ():
        if cause.get("reason") == "ExitCode":
            return int(cause.get("message") or 1)
    raise BackendError(str(status.get("message") or "exec failed"))


class ExecStream:
    """One command's run: iterate for its stdout chunks, then ``finish()`` for (code, stderr)."""

    def __init__(self, client: Any, idle: float = IDLE_TIMEOUT, stop: threading.Event | None = None) -> None:
        self.client = client
        self.idle = idle
        self.stop = stop or threading.Event()

    def __iter__(self) -> Iterator[bytes]:
        client = self.client
        quiet_since = time.monotonic()
        while client.is_open():
            if self.stop.is_set():
                client.close()
                raise BackendError("stopped")
            try:
                client.update(timeout=POLL)
            except Exception as exc:  # websocket-client's closed/timeout errors, OSError
                client.close()
                raise BackendError(f"the exec connection dropped: {exc}") from None
            data = client.read_channel(STDOUT)
            if data:
                quiet_since = time.monotonic()
                yield data
            elif time.monotonic() - quiet_since > self.idle:
                client.close()
                raise BackendError(f"the pod sent nothing for {self.idle:.0f} s")
        rest = client.read_channel(STDOUT)
        if rest:
            yield rest

    def finish(self) -> tuple[int, str]:
        try:
            code = exit_code(self.client)
        finally:
            self.client.close()
        return code, self.client.read_channel(STDERR).decode("utf-8", "replace")


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
