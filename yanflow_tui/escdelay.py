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
"""

from __future__ import annotations

import os
import selectors
import sys
from codecs import getincrementaldecoder
from functools import cache
from typing import TYPE_CHECKING

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
        """Textual's Linux driver, answering a lone Escape as soon as its delay has passed."""

        def run_input_thread(self) -> None:
            """Textual's ``LinuxDriver.run_input_thread`` (see ``TEXTUAL_LOOP_SHA``), but the select after a
            read that held an Escape waits for the Escape delay, not the idle poll."""
            from textual._parser import ParseError
            from textual._xterm_parser import XTermParser

            selector = selectors.SelectSelector()
            selector.register(self.fileno, selectors.EVENT_READ)
            fileno = self.fileno
            parser = XTermParser(getattr(self, "_debug", False))
            feed, tick = parser.feed, parser.tick
            decode = getincrementaldecoder("utf-8")().decode
            soon = escape_delay() + 0.002  # (just past it: the parser's deadline has passed when it looks)
            wait = IDLE_POLL

            def process(selected: list[tuple[selectors.SelectorKey, int]], final: bool = False) -> None:
                nonlocal wait
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
                selector.unregister(fileno)
                process(selector.select(IDLE_POLL), final=True)
            finally:
                selector.close()
                try:
                    for _event in feed(""):
                        pass
                except (EOFError, ParseError):
                    pass

    return QuickEscape
