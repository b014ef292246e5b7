"""The Escape key's delay (``yanflow_tui.escdelay``): the default when ``ESCDELAY`` is unset (and the
environment left as it was), the user's ``ESCDELAY`` honoured, a lone Escape read from a terminal
answered once the delay has passed (Textual's own loop looks only every 100 ms), an idle input loop
that waits without polling and ends at once on exit, and the pin on the Textual loop the driver copies."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import os
import pty
import selectors
import statistics
import subprocess
import sys
import threading
import time
import tty
from collections.abc import Callable
from queue import Empty, Queue

import pytest
from textual import constants, events
from textual.drivers.linux_driver import LinuxDriver

from yanflow_tui import escdelay

PROBE = (
    "import os; from yanflow_tui import escdelay; escdelay.configure(); from textual import constants;"
    " print(constants.ESCAPE_DELAY, os.environ.get('ESCDELAY'))"
)


@pytest.mark.parametrize(("set_by_user", "expected"), [(None, f"{escdelay.DEFAULT_MS / 1000} None"), ("40", "0.04 40")])
def test_the_escape_delay_is_the_consoles_default_unless_escdelay_is_set(set_by_user, expected):
    env = {k: v for k, v in os.environ.items() if k != "ESCDELAY"}
    if set_by_user:
        env["ESCDELAY"] = set_by_user
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == expected  # and ESCDELAY is not left set for the programs the console starts


def input_loop(
    driver_class: type[LinuxDriver], slave: int, received: Callable[[object], object]
) -> tuple[LinuxDriver, threading.Thread]:
    """``driver_class``'s input loop reading the terminal ``slave`` (made raw) in a thread, each message
    it makes given to ``received``."""
    tty.setraw(slave)

    class Recording(driver_class):  # type: ignore[misc,valid-type]
        def process_message(self, message: object) -> None:
            received(message)

    async def make() -> LinuxDriver:
        return Recording(None)  # type: ignore[arg-type]

    driver = asyncio.run(make())
    driver.fileno = slave
    thread = threading.Thread(target=driver.run_input_thread, daemon=True)
    thread.start()
    return driver, thread


def escape_latencies(driver_class: type[LinuxDriver], presses: int = 7) -> list[float]:
    """Seconds from a lone Escape written to a terminal to the Escape key the driver's input loop makes."""
    master, slave = pty.openpty()
    got: Queue = Queue()
    driver, thread = input_loop(driver_class, slave, lambda message: got.put((time.monotonic(), message)))
    latencies = []
    try:
        for _ in range(presses):
            sent = time.monotonic()
            os.write(master, b"\x1b")
            while True:
                try:
                    at, message = got.get(timeout=2)
                except Empty:
                    raise AssertionError("no key came") from None
                if isinstance(message, events.Key) and message.key == "escape":
                    latencies.append(at - sent)
                    break
    finally:
        driver.exit_event.set()
        thread.join(2)
        os.close(master)
        os.close(slave)
    return latencies


def test_a_lone_escape_is_answered_once_the_delay_has_passed_not_at_the_next_100_ms_poll(monkeypatch):
    monkeypatch.setattr(constants, "ESCAPE_DELAY", 0.025)  # (ESCDELAY=25, as ``configure`` sets it)
    quick = statistics.median(escape_latencies(escdelay.driver()))
    textuals = statistics.median(escape_latencies(LinuxDriver))
    assert 0.025 <= quick < 0.07, quick
    assert textuals >= 0.09, textuals  # Textual's own loop: the escape waits for its 100 ms poll


def test_an_idle_input_loop_waits_without_a_poll_and_the_exit_wakes_it(monkeypatch):
    """With nothing pending, the loop's select has no timeout (Textual's wakes every 100 ms); after an Escape
    it waits the delay; ``exit_event.set()`` ends the loop at once (a select with no timeout would hang),
    also after a suspend closed the driver and a resume started the loop again."""
    monkeypatch.setattr(constants, "ESCAPE_DELAY", 0.025)
    waits: Queue = Queue()

    class Recorded(selectors.SelectSelector):
        def select(self, timeout=None):
            waits.put(timeout)
            return super().select(timeout)

    monkeypatch.setattr(selectors, "SelectSelector", Recorded)
    master, slave = pty.openpty()
    driver, thread = input_loop(escdelay.driver(), slave, lambda message: None)

    def wait_for(expected) -> None:
        deadline = time.monotonic() + 5
        while (timeout := waits.get(timeout=5)) != expected:
            assert timeout in (escdelay.IDLE_POLL, 0.025 + 0.002), timeout
            assert time.monotonic() < deadline, f"no select with timeout {expected} (polling every {timeout} s)"

    try:
        wait_for(None)  # (the first look is Textual's poll; then no timeout)
        os.write(master, b"\x1b")
        wait_for(0.025 + 0.002)  # the Escape's delay
        wait_for(None)  # then idle again
        driver.exit_event.set()
        thread.join(2)
        assert not thread.is_alive()
        driver.close()  # a suspend (Textual closes the driver), then the resume's new input loop
        driver.exit_event.clear()
        thread = threading.Thread(target=driver.run_input_thread, daemon=True)
        thread.start()
        wait_for(None)
        driver.exit_event.set()
        thread.join(2)
        assert not thread.is_alive()
    finally:
        driver.exit_event.set()
        driver.close()
        os.close(master)
        os.close(slave)


def test_the_copied_input_loop_is_textuals_own():
    """``escdelay.driver`` copies ``LinuxDriver.run_input_thread`` with one change: when this fails,
    Textual changed its loop; carry the change over into ``escdelay`` and pin the new source."""
    source = inspect.getsource(LinuxDriver.run_input_thread)
    assert hashlib.sha256(source.encode()).hexdigest() == escdelay.TEXTUAL_LOOP_SHA


def test_a_textual_with_another_input_loop_keeps_its_own_driver(monkeypatch):
    """A Textual release whose loop differs from the copy (``<9`` allows newer ones) is not overridden."""

    class Newer(LinuxDriver):
        def run_input_thread(self) -> None:  # another loop than the one escdelay copies
            pass

    assert escdelay.loop_is_known(LinuxDriver) and not escdelay.loop_is_known(Newer)
    escdelay.driver.cache_clear()
    monkeypatch.setattr("textual.drivers.linux_driver.LinuxDriver", Newer)
    try:
        assert escdelay.driver() is Newer
    finally:
        escdelay.driver.cache_clear()
