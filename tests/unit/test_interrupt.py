"""Ctrl-C ends a headless command (``yanflow_tui.cli._interruptible``, ``keyfiles.bound_interrupt``): the
command is cancelled and its finally blocks run; and where the exit then hangs (``asyncio.run`` joins every
worker thread, one blocked on a read holds it forever, a second Ctrl-C too), the process ends with 130 after
``INTERRUPT_GRACE`` all the same. Real processes and a real SIGINT."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest
from tbhelpers import sigint_as_in_a_terminal

CHILD = textwrap.dedent(
    """
    import asyncio, sys, threading
    from yanflow_tui import keyfiles
    from yanflow_tui.cli import _interruptible
    keyfiles.INTERRUPT_GRACE = 2.0

    async def command() -> int:
        if sys.argv[1] == "blocked":  # a worker thread that never returns (a read with no end)
            asyncio.get_running_loop().run_in_executor(None, threading.Event().wait)
        try:
            print("ready", flush=True)
            await asyncio.Event().wait()
        finally:
            print("stopped what it started", flush=True)
        return 0

    try:
        sys.exit(asyncio.run(_interruptible(command())))
    except KeyboardInterrupt:
        sys.exit(130)
    """
)


@pytest.mark.parametrize("worker", ["blocked", "none"])
def test_ctrl_c_ends_the_command_even_when_a_worker_thread_never_returns(worker):
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, worker],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_as_in_a_terminal,  # (a test run started with & has SIGINT ignored)
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        child.send_signal(signal.SIGINT)
        code = child.wait(timeout=30)  # the old exit waited on the blocked thread for ever
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert code == 130, child.stderr.read() if child.stderr else code
    assert child.stdout.read() == "stopped what it started\n"  # the command's finally ran first
