"""How a backend asks the user a question while it connects (a one-time code, a key's passphrase),
without knowing who asks: the app opens a masked dialog, the CLI reads the terminal. A ``Prompter``
is an async callable ``(question, secret) -> answer``, None when the user cancelled.

``Asker`` holds a backend's prompter and counts the seconds spent waiting on answers, so deadlines
can leave them out: ``within`` bounds a call by the time the *cluster* takes, never by how long the
user takes to type."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from yanflow_tui.errors import BackendError

T = TypeVar("T")

Prompter = Callable[[str, bool], Awaitable["str | None"]]


class CannotAsk(BackendError):
    """A login wants an answer and nothing can ask the user (no console, no terminal)."""


class Asker:
    """Asks through ``prompter`` (set by the app or the CLI) and keeps the time questions were open."""

    def __init__(self, prompter: Prompter | None = None) -> None:
        self.prompter = prompter
        self._open = 0
        self._since = 0.0
        self._waited = 0.0
        self.asked = 0  # questions asked so far

    @property
    def asking(self) -> bool:
        return self._open > 0

    def waited(self) -> float:
        """Seconds spent waiting on answers so far, the question open now included."""
        return self._waited + (time.monotonic() - self._since if self._open else 0.0)

    async def ask(self, question: str, secret: bool = True) -> str | None:
        """The user's answer, or None when they cancelled. ``CannotAsk`` when there is no prompter."""
        if self.prompter is None:
            raise CannotAsk(f"the login asks {question!r}, and there is no console or terminal to answer it in")
        if not self._open:
            self._since = time.monotonic()
        self._open += 1
        self.asked += 1
        try:
            return await self.prompter(question, secret)
        finally:
            self._open -= 1
            if not self._open:
                self._waited += time.monotonic() - self._since


async def within(aw: Awaitable[T], seconds: float, waited: Callable[[], float]) -> T:
    """Await ``aw`` for at most ``seconds``, leaving out the time ``waited()`` grows meanwhile (a
    question open to the user). On timeout ``aw`` is cancelled and ``TimeoutError`` raised, as
    ``asyncio.wait_for`` does."""
    task = asyncio.ensure_future(aw)
    loop = asyncio.get_running_loop()
    start, before = loop.time(), waited()
    try:
        while True:
            left = seconds - (loop.time() - start - (waited() - before))
            if left <= 0:
                break
            done, _ = await asyncio.wait({task}, timeout=left)
            if done:
                return task.result()
    except asyncio.CancelledError:
        task.cancel()
        raise
    task.cancel()
    await asyncio.wait({task})
    if not task.cancelled():
        task.exception()  # retrieved: the timeout is what is said
    raise TimeoutError
