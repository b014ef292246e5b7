"""The port-forward bridge's pump ends quietly when either side is gone (a reset while it sends
included): a browser that closes its tab must not leave an exception in a thread."""

from __future__ import annotations

import socket
import threading

from yanflow_tui.backends.kubernetes.podforward import _pump


def test_a_peer_that_is_gone_while_data_is_sent_ends_the_pump():
    local, local_far = socket.socketpair()
    remote, remote_far = socket.socketpair()
    remote_far.close()  # the pod's side is gone: sending to it fails (EPIPE)
    local_far.sendall(b"GET / HTTP/1.1\r\n\r\n")
    errors: list[BaseException] = []
    previous = threading.excepthook
    threading.excepthook = lambda args: errors.append(args.exc_value)
    try:
        thread = threading.Thread(target=_pump, args=(local, remote, lambda: False))
        thread.start()
        thread.join(10)
    finally:
        threading.excepthook = previous
    assert not thread.is_alive() and errors == []
    for sock in (local, local_far, remote):
        sock.close()
