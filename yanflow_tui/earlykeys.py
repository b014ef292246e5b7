"""Keys typed while the cached first frame shows (``earlypaint``), for the live console.

While the paint shows, ``KeyReader`` reads what the terminal sends, one read as it arrives, and keeps
the bytes in order (the terminal is in the paint's quiet modes: no echo, no line editing, Enter as
``\\r``). When Textual takes over (``app.takeover_driver``) the reader stops and ``HeldKeys`` holds
those keys, parsed as Textual's driver parses its own reads (``parse``), then every key, paste and
mouse event the driver reads itself, until the console is ready (``YanflowApp.on_ready``: the Queue
mounted, its table focused, the first frame drawn). ``release`` then hands them to the app in the
order typed: they reach the Queue's bindings, never a widget the user could not see yet. Nothing
here imports Textual before ``parse`` runs (the paint happens before Textual is loaded).
"""

from __future__ import annotations

import os
import select
import threading
from codecs import getincrementaldecoder
from collections.abc import Callable
from typing import Any


class KeyReader:
    """A thread reading the terminal ``fd`` until ``stop``: each read's bytes, in order."""

    def __init__(self, fd: int, on_read: Callable[[bytes], None] | None = None) -> None:
        self.fd = fd
        self.chunks: list[bytes] = []
        self._on_read = on_read  # each read, as it comes (in this thread): the paint's echo (``earlyecho``)
        self._wake_r, self._wake_w = os.pipe()
        self._thread: threading.Thread | None = threading.Thread(target=self._run, name="early-keys", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                ready, _, _ = select.select([self.fd, self._wake_r], [], [])
            except InterruptedError:
                continue
            except (OSError, ValueError):
                return
            if self.fd in ready:
                try:
                    data = os.read(self.fd, 4096)
                except InterruptedError:
                    continue
                except OSError:
                    return
                if not data:
                    return
                self.chunks.append(data)
                if self._on_read is not None:
                    try:
                        self._on_read(data)
                    except Exception:  # (a drawing fault never loses a key: they are kept above)
                        self._on_read = None
                continue  # (whatever else is there is read before the stop is seen)
            if self._wake_r in ready:
                return

    def stop(self) -> list[bytes]:
        """Stop reading (what comes later stays for Textual's reader); the bytes read, one entry per read."""
        thread, self._thread = self._thread, None
        if thread is not None:
            os.write(self._wake_w, b"x")
            thread.join()
            os.close(self._wake_r)
            os.close(self._wake_w)
        return self.chunks


def parse(chunks: list[bytes]) -> list[Any]:
    """The messages (keys, pastes...) Textual's driver makes of these reads: each read parsed to its
    end, so a lone Escape at the end of one is the Escape key, not the start of the next key's sequence
    (keys typed by hand come in separate reads)."""
    from textual._xterm_parser import XTermParser  # (the parser Textual's own Linux driver reads with)

    decode = getincrementaldecoder("utf-8")(errors="replace").decode
    messages: list[Any] = []
    for chunk in chunks:
        text = decode(chunk)
        if not text:
            continue
        parser = XTermParser()
        messages.extend(parser.feed(text))
        messages.extend(parser.feed(""))  # the read's end: a sequence left open is what it is so far
    return messages


class HeldKeys:
    """The console's input until it is ready: ``hold`` keeps keys, pastes and mouse events (in order,
    after those read during the paint); ``release`` posts them and lets later ones through."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: list[Any] = []
        self._post: Callable[[Any], None] | None = None
        self.released = False

    def add(self, messages: list[Any]) -> None:
        """Hold ``messages`` (the keys typed during the paint, ``parse``d) after those held already; none
        once released (the driver starts again after a suspend: those keys were delivered)."""
        with self._lock:
            if not self.released:
                self._held.extend(messages)

    def attach(self, post: Callable[[Any], None]) -> None:
        """Where messages go once released (the driver's own ``process_message``)."""
        self._post = post

    def hold(self, message: Any) -> bool:
        """Keep ``message`` when it is input and the console is not ready; False: post it now."""
        from textual import events

        if self.released or not isinstance(message, (events.Key, events.Paste, events.MouseEvent)):
            return False
        with self._lock:
            if self.released:  # (released meanwhile, by the event loop)
                return False
            self._held.append(message)
            return True

    def release(self) -> None:
        """The console is ready: what was held goes to it, in order, and from now on nothing is held."""
        with self._lock:
            held, self._held = self._held, []
            if self._post is not None:
                for message in held:
                    self._post(message)
            self.released = True
