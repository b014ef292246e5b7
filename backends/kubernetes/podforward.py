"""Port-forward to a pod through the API server (the official client's ``kubernetes.stream.portforward``):
a listener on 127.0.0.1 (a free port unless one is asked), and for each connection to it one
port-forward websocket, bridged both ways by a thread until either side closes. ``close`` stops the
listener and every connection. The websocket's socket timeout is bounded as in ``podexec``.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from collections.abc import Callable
from typing import Any

from yanflow_tui.backends.kubernetes.podexec import bound_sockets, exec_error
from yanflow_tui.errors import BackendError

ACCEPT_POLL = 0.5


class PodForward:
    """127.0.0.1:``local_port`` to ``port`` of pod ``namespace/pod``."""

    def __init__(self, core: Any, namespace: str, pod: str, port: int, local_port: int = 0) -> None:
        self.core, self.namespace, self.pod, self.port = core, namespace, pod, port
        try:
            self.listener = socket.create_server(("127.0.0.1", local_port))
        except OSError as exc:
            raise BackendError(f"cannot listen on 127.0.0.1:{local_port}: {exc.strerror or exc}") from None
        self.listener.settimeout(ACCEPT_POLL)
        self.local_port = self.listener.getsockname()[1]
        self.stopped = threading.Event()
        self._open: set[Any] = set()
        self._lock = threading.Lock()
        self.errors: list[str] = []  # what the last connections could not reach, for the user
        self._thread = threading.Thread(target=self._accept, name=f"k8s-forward-{pod}-{port}", daemon=True)

    def start(self) -> PodForward:
        self._thread.start()
        return self

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:  # the socket's own (socket.timeout), not asyncio's
                continue
            except OSError:
                return
            threading.Thread(target=self._bridge, args=(conn,), daemon=True).start()

    def _connect(self) -> Any:
        from kubernetes.stream import portforward

        bound_sockets()
        try:
            return portforward(
                self.core.connect_get_namespaced_pod_portforward, self.pod, self.namespace, ports=str(self.port)
            )
        except Exception as exc:
            raise BackendError(f"port-forward to {self.namespace}/{self.pod}: {exec_error(exc)}") from None

    def _bridge(self, conn: socket.socket) -> None:
        try:
            forward = self._connect()
        except BackendError as exc:
            self.errors.append(str(exc))
            conn.close()
            return
        remote = forward.socket(self.port)
        with self._lock:
            self._open.update((conn, remote))
        try:
            _pump(conn, remote, self.stopped.is_set)
        finally:
            error = forward.error(self.port)
            if error:
                self.errors.append(error)
            for sock in (conn, remote):
                with contextlib.suppress(OSError):
                    sock.close()
            with self._lock:
                self._open.difference_update((conn, remote))

    def close(self) -> None:
        self.stopped.set()
        self.listener.close()
        with self._lock:
            for sock in list(self._open):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(2 * ACCEPT_POLL)


def _pump(a: Any, b: Any, stopped: Callable[[], bool]) -> None:
    """Copy bytes both ways until either side ends."""
    peer = {a.fileno(): b, b.fileno(): a}
    ends = {a.fileno(): a, b.fileno(): b}
    while not stopped():
        ready, _, _ = select.select(list(ends), [], [], ACCEPT_POLL)
        for fd in ready:
            try:
                data = ends[fd].recv(65536)
                if not data:
                    return
                peer[fd].sendall(data)
            except OSError:  # either side reset or closed: the bridge ends
                return
