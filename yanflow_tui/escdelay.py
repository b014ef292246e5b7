"""The Escape key's delay: how long a lone Escape read from the terminal waits for the rest of an
escape sequence before it counts as the key.

Textual takes it from ``ESCDELAY`` (milliseconds, the curses convention; 100 when unset), read once
when ``textual.constants`` is imported: ``configure`` sets this console's default
(``DEFAULT_MS``) for that import only, when the user set none, so that programs started from the
console (an editor, ssh) see the environment as it was. Textual's Linux driver also polls its input
every 100 ms and only then sees that the delay has passed, so a lone Escape took 100 ms whatever the
delay: ``driver``'s ``run_input_thread`` is its input loop with the one change that, after a read
holding an Escape, it looks again once the delay has passed. ``TEXTUAL_LOOP_SHA`` pins the Textual
loop it copies: a test fails when Textual changes it (compare, and carry the change over).
While nothing is pending (no escape sequence waits for its delay) the loop does not poll: it waits for
input or for its ``exit_event`` (a ``WakingEvent``, whose ``set`` also wakes the wait), so an idle
console's input thread does not wake ten times a second.
"""

from __future__ import annotations

import os
import selectors
import sys
import threading
from codecs import getincrementaldecoder
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (imported by ``driver``, after ``configure``: Textual reads ESCDELAY at import)
    from textual.drivers.linux_driver import LinuxDriver

DEFAULT_MS = 25  # a terminal writes a key's whole sequence at once: 25 ms leaves room for a slow SSH link
IDLE_POLL = 0.1  # s between looks when nothing is pending (Textual's)
TEXTUAL_LOOP_SHA = "d796af6d69db337d6fa6bd463984f7d17188d991dbb22f60efb92a8a9619507c"  # Textual 8.2


def configure(environ: dict[str, str] | None = None) -> None:
    """Before Textual is imported: its Escape delay is ``ESCDELAY`` when set, else ``DEFAULT_MS``."""
    env = os.environ if environ is None else environ
    if "textual.constants" in sys.modules or env.get("ESCDELAY"):
        return
    env["ESCDELAY"] = str(DEFAULT_MS)
    try:
        import textual.constants  # noqa: F401  (reads ESCDELAY now, once)
    finally:
        env.pop("ESCDELAY", None)


def escape_delay() -> float:
    """The delay Textual's parser waits after a lone Escape, in seconds."""
    from textual import constants

    return float(constants.ESCAPE_DELAY)


def loop_is_known(driver_class: type[LinuxDriver]) -> bool:
    """Whether ``driver_class.run_input_thread`` is the Textual loop ``driver`` copies (its source's hash is
    ``TEXTUAL_LOOP_SHA``); False where its source cannot be read (an install without sources)."""
    import hashlib
    import inspect

    try:
        source = inspect.getsource(driver_class.run_input_thread)
    except (OSError, TypeError):
        return False
    return hashlib.sha256(source.encode()).hexdigest() == TEXTUAL_LOOP_SHA


@cache
def driver() -> type[LinuxDriver]:
    """``QuickEscape``: Textual's Linux driver, answering a lone Escape as soon as its delay has passed.
    Under a Textual whose input loop is not the one copied here (a newer release), Textual's own driver:
    the Escape then waits for its next poll, but every key is read as that release reads it."""
    from textual.drivers.linux_driver import LinuxDriver

    if not loop_is_known(LinuxDriver):
        return LinuxDriver

    class QuickEscape(LinuxDriver):
        """Textual's Linux driver, answering a lone Escape as soon as its delay has passed, and not polling
        its input while nothing is pending."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.exit_event = WakingEvent()

        def close(self) -> None:
            super().close()
            if isinstance(self.exit_event, WakingEvent):
                self.exit_event.close()

        def run_input_thread(self) -> None:
            """Textual's ``LinuxDriver.run_input_thread`` (see ``TEXTUAL_LOOP_SHA``), but the select after a
            read that held an Escape waits for the Escape delay, not the idle poll, and one with nothing
            pending waits for input or the exit (no poll)."""
            from textual._parser import ParseError
            from textual._xterm_parser import XTermParser

            selector = selectors.SelectSelector()
            selector.register(self.fileno, selectors.EVENT_READ)
            waking = self.exit_event if isinstance(self.exit_event, WakingEvent) else None
            if waking is not None:
                waking.open()  # (closed by a suspend: Textual's ``suspend_application_mode`` closes the driver)
                waking.drain()  # (a wake left from an earlier exit)
                selector.register(waking.fileno, selectors.EVENT_READ)
            fileno = self.fileno
            parser = XTermParser(getattr(self, "_debug", False))
            feed, tick = parser.feed, parser.tick
            decode = getincrementaldecoder("utf-8")().decode
            soon = escape_delay() + 0.002  # (just past it: the parser's deadline has passed when it looks)
            wait: float | None = IDLE_POLL

            def idle() -> float | None:
                """The next wait with nothing read: none while the parser waits for no deadline and the
                exit wakes the wait, else Textual's poll."""
                pending = getattr(parser, "_timeout_time", 0) is not None  # (unknown: as if pending)
                return IDLE_POLL if pending or waking is None else None

            def process(selected: list[tuple[selectors.SelectorKey, int]], final: bool = False) -> None:
                nonlocal wait
                selected = [(key, mask) for key, mask in selected if key.fd == fileno]  # (not the wake)
                for index, (_key, mask) in enumerate(selected):
                    if mask & selectors.EVENT_READ:
                        data = decode(os.read(fileno, 1024 * 4), final=final and index == len(selected) - 1)
                        if not data:  # (stdin piped, and at its end)
                            break
                        for event in feed(data):
                            self.process_message(event)
                        if "\x1b" in data:  # a sequence may be left open: look again once the delay has passed
                            wait = soon
                for event in tick():
                    self.process_message(event)

            try:
                while not self.exit_event.is_set():
                    timeout, wait = wait, IDLE_POLL
                    process(selector.select(timeout))
                    if wait == IDLE_POLL:
                        wait = idle()
                selector.unregister(fileno)
                if waking is not None:
                    selector.unregister(waking.fileno)
                process(selector.select(IDLE_POLL), final=True)
            finally:
                selector.close()
                try:
                    for _event in feed(""):
                        pass
                except (EOFError, ParseError):
                    pass

    return QuickEscape


class WakingEvent(threading.Event):
    """A ``threading.Event`` whose ``set`` also makes its pipe (``fileno``) readable, so that a select
    waiting on it wakes at once; ``drain`` empties the pipe, ``close`` closes it and ``open`` makes it again."""

    fileno = -1
    _write = -1

    def __init__(self) -> None:
        super().__init__()
        self.open()

    def open(self) -> None:
        """The pipe made again if it was closed (a suspended console's driver is closed, then resumed)."""
        if self.fileno >= 0:
            return
        read, write = os.pipe()
        os.set_blocking(read, False)
        os.set_blocking(write, False)
        self.fileno, self._write = read, write

    def set(self) -> None:
        super().set()
        if self._write < 0:  # closed
            return
        try:
            os.write(self._write, b"x")
        except OSError:  # full: a wake is there already
            pass

    def drain(self) -> None:
        try:
            while self.fileno >= 0 and os.read(self.fileno, 512):
                pass
        except OSError:  # empty
            pass

    def close(self) -> None:
        """The pipe closed (once the input thread has ended); ``set`` then only sets, until ``open``."""
        fds, self.fileno, self._write = (self.fileno, self._write), -1, -1
        for fd in fds:
            if fd >= 0:
                os.close(fd)
