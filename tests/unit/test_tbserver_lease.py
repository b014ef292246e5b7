"""A TensorBoard started where the connection's process cannot be seen (a Kubernetes exec: the command's
parent is outside the pod's PID namespace) never outlives its console: ``tbserver.REMOTE_START`` runs
here in a PID namespace of its own (``unshare``), as in a pod, with a stand-in ``tensorboard``; its
watchdog holds a lease that only the console's marks (``REMOTE_ALIVE``, sent by ``serve_remote``) renew."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from waiting import wait_until

from yanflow_tui.backends import tbserver

LEASE = 3  # seconds without a mark before the server is ended (the console's default is LEASE_SECONDS)


@pytest.fixture
def pod(tmp_path):
    """Start ``REMOTE_START`` as a pod's exec would run it: under a PID 1 that stays (the container's main
    process), with parent pid 0. Yields its output words (pid, folder, prefix, watchdog)."""
    assert shutil.which("unshare"), "unshare (util-linux) is needed to make a PID namespace"
    fake = tmp_path / "tensorboard"  # keeps its command line (with --flagfile) while it runs
    fake.write_text(
        '#!/bin/sh\necho "TensorBoard 2.99 at http://127.0.0.1:6006/ (Press CTRL+C to quit)"\nsleep 600 & wait\n'
    )
    fake.chmod(0o755)
    logdir = tmp_path / f"logs-{uuid.uuid4().hex[:8]}"
    logdir.mkdir()
    started = tmp_path / "started"
    main = subprocess.Popen(
        [
            "unshare", "--pid", "--fork", "--mount-proc", "sh", "-c",
            'sh -c "$0" sh "$@" >"$STARTED" 2>&1; exec sleep 600',
            tbserver.REMOTE_START, str(LEASE), str(logdir), str(fake),
        ],
        env={**os.environ, "STARTED": str(started), "TMPDIR": str(tmp_path)},
    )  # fmt: skip
    try:
        words = wait_until(lambda: started.exists() and started.read_text().split(), 20, what="the start's words")
        yield words
    finally:
        main.kill()  # PID 1 of the namespace: everything in it ends
        main.wait(timeout=20)


def server_alive(folder: str) -> bool:
    """The stand-in server runs: a process whose command line names the server's flag file."""
    found = subprocess.run(["pgrep", "-f", f"{folder}/flags"], capture_output=True, text=True)
    return found.returncode == 0


def test_a_server_whose_connection_cannot_be_seen_ends_once_no_console_renews_its_lease(pod):
    words = pod
    pid, folder, prefix, watch = words
    assert watch == "lease" and len(prefix) >= 32
    assert wait_until(lambda: server_alive(folder), 10, what="the server running")
    began = time.monotonic()
    wait_until(lambda: not server_alive(folder), LEASE + 15, what="the server ended by its watchdog")
    assert time.monotonic() - began >= LEASE - 1  # not at once: the lease ran out
    wait_until(lambda: not Path(folder).exists(), 10, what="its private folder removed")


def test_a_server_whose_lease_is_renewed_runs_until_the_marks_stop(pod):
    words = pod
    _, folder, _, watch = words
    assert watch == "lease"

    async def run(argv: list[str]) -> tuple[int, str, str]:
        done = await asyncio.create_subprocess_exec(*argv)
        return await done.wait(), "", ""

    async def renew_for(seconds: float) -> None:
        task = asyncio.create_task(tbserver._renew(run, folder, LEASE))
        await asyncio.sleep(seconds)
        task.cancel()

    asyncio.run(renew_for(LEASE * 3))  # three leases long, marked every third of one
    assert server_alive(folder), "ended while its console was still marking it alive"
    wait_until(lambda: not server_alive(folder), LEASE + 15, what="the server ended after the marks stopped")
