"""Waiting on conditions, the one way every test waits: ``wait_until`` (plain code; ``pause=`` for a terminal
test that reads the console meanwhile), ``async_wait_until`` (coroutines; the condition may itself be async)
and ``wait_for`` (a Textual pilot: each pause lets the app handle its messages and timers). All three share
one poll: check, back off a little, fail after ``timeout`` with ``what`` (or the condition's source line),
the last value seen and the last error, if any.

A test never sleeps a fixed time to let something happen: it waits until the state it then asserts."""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any

DEADLINE = 30.0  # generous: a passing test never waits this long; a loaded machine needs the room
FIRST_INTERVAL = 0.02
MAX_INTERVAL = 0.3  # conditions that run Slurm commands are polled at most ~3 times a second
_Errors = tuple[type[BaseException], ...]


class _Poll:
    """One wait's bookkeeping: the deadline, the growing interval, what was last seen, the failure message."""

    def __init__(self, condition: Callable[[], Any], what: str, timeout: float, ignore: _Errors):
        self.condition = condition
        self.what = what or _describe(condition)
        self.timeout = timeout
        self.ignore = ignore
        self.end = time.monotonic() + timeout
        self.interval = FIRST_INTERVAL
        self.last: Any = None
        self.error: BaseException | None = None

    def call(self) -> Any:
        try:
            return self.condition()
        except self.ignore as exc:
            self.error = exc
            return None

    async def resolve(self, value: Any) -> Any:
        if inspect.isawaitable(value):
            try:
                return await value
            except self.ignore as exc:
                self.error = exc
                return None
        return value

    def seen(self, value: Any) -> bool:
        """Record ``value``; True when the wait is over (it is truthy)."""
        self.last = value
        return bool(value)

    def next_interval(self) -> float:
        """The pause before the next check; raises the timeout failure once the deadline has passed."""
        if time.monotonic() > self.end:
            raise self.failure()
        interval, self.interval = self.interval, min(self.interval * 1.5, MAX_INTERVAL)
        return interval

    def failure(self) -> AssertionError:
        message = f"timed out after {self.timeout}s waiting for {self.what} (last value: {self.last!r})"
        if self.error is not None:
            message += f" (last error: {type(self.error).__name__}: {self.error})"
        return AssertionError(message)


def _describe(condition: Callable[[], Any]) -> str:
    try:
        return inspect.getsource(condition).strip()
    except (OSError, TypeError):
        return getattr(condition, "__qualname__", repr(condition))


def wait_until(
    condition: Callable[[], Any],
    timeout: float = DEADLINE,
    what: str = "",
    *,
    ignore: _Errors = (),
    pause: Callable[[float], object] = time.sleep,
) -> Any:
    """Poll ``condition`` (from plain code) until it returns something truthy, and return that; ``pause``
    spends the time between checks (a terminal test reads the console's output meanwhile)."""
    poll = _Poll(condition, what, timeout, ignore)
    while not poll.seen(poll.call()):
        pause(poll.next_interval())
    return poll.last


async def async_wait_until(
    condition: Callable[[], Any | Awaitable[Any]],
    timeout: float = DEADLINE,
    what: str = "",
    *,
    ignore: _Errors = (),
    pilot: Any = None,
) -> Any:
    """Poll ``condition`` (plain or async) until its value is truthy, and return that; with ``pilot``, each
    pause is ``pilot.pause`` so a Textual app under test runs its timers meanwhile."""
    import asyncio

    poll = _Poll(condition, what, timeout, ignore)
    while not poll.seen(await poll.resolve(poll.call())):
        interval = poll.next_interval()
        await (pilot.pause(interval) if pilot is not None else asyncio.sleep(interval))
    return poll.last


async def wait_for(
    pilot: Any,
    condition: Callable[[], Any | Awaitable[Any]],
    timeout: float = DEADLINE,
    what: str = "",
    *,
    ignore: _Errors = (),
) -> Any:
    """``async_wait_until`` for pilot tests: ``await wait_for(pilot, lambda: ..., what="...")``."""
    return await async_wait_until(condition, timeout, what, ignore=ignore, pilot=pilot)


class ManualClock:
    """A clock the test moves (``clock.now += 600``) instead of sleeping, for code with an injectable clock."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
