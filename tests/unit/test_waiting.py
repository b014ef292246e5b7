"""The one wait of the test suite (tests/waiting.py): it returns the first truthy value, and a timeout
fails with what was awaited, the last value seen and the last error let through."""

from __future__ import annotations

import pytest
from waiting import async_wait_until, wait_until


def test_wait_until_returns_the_first_truthy_value():
    values = iter([0, [], "ready", "later"])
    assert wait_until(lambda: next(values), 5, "a value") == "ready"


def test_a_timeout_names_what_was_awaited_and_the_last_value():
    with pytest.raises(AssertionError, match=r"timed out after 0.1s waiting for the answer \(last value: \[\]\)"):
        wait_until(list, 0.1, "the answer")


def test_without_what_the_condition_source_is_named():
    with pytest.raises(AssertionError, match="lambda: None"):
        wait_until(lambda: None, 0.05)


async def test_async_conditions_are_awaited_and_ignored_errors_are_reported():
    calls = []

    async def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("not yet")
        return len(calls)

    assert await async_wait_until(flaky, 5, "flaky", ignore=(ConnectionError,)) == 3

    async def broken():
        raise ConnectionError("refused")

    with pytest.raises(AssertionError, match="last error: ConnectionError: refused"):
        await async_wait_until(broken, 0.1, "broken", ignore=(ConnectionError,))
    with pytest.raises(ConnectionError):  # not ignored: the error itself, at once
        await async_wait_until(broken, 5, "broken")
