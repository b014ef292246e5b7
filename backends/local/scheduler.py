"""Background scheduler for pending local jobs:
``python -m yanflow_tui.backends.local.scheduler STATE_DIR CLUSTER [HOST]``.

``submit`` starts it (in its own session) when a job must wait for GPUs, so a job submitted from the
CLI starts even when no console is open. One runs at a time (a lock file); it exits once nothing is
pending. It starts only this host's jobs (HOST as the submitting console names it), so its lock is
per host where ``$HOME`` is shared.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from pathlib import Path

from yanflow_tui.locations import open_private

POLL_SECONDS = 1.0


def _pending(backend) -> bool:
    return any(r.state == "pending" and backend._mine(r) for r in backend.store.active())


def main(argv: list[str]) -> int:
    from yanflow_tui.backends.local.backend import LocalBackend
    from yanflow_tui.config import ClusterConfig

    state_dir, cluster = Path(argv[0]), argv[1]
    backend = LocalBackend(ClusterConfig(cluster, "local"), state_dir=state_dir, host=argv[2] if argv[2:] else None)
    host = "".join(c if c.isalnum() or c in ".-_" else "_" for c in backend.hostname)
    lock = open_private(state_dir / f"scheduler.{host}.lock", os.O_RDWR | os.O_CREAT)  # a lock stays in place
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return 0  # another scheduler is running
        while _pending(backend):
            backend._schedule()
            time.sleep(POLL_SECONDS)
        fcntl.flock(lock, fcntl.LOCK_UN)
        # A job submitted while we were deciding to stop would find the lock held: look once more.
        if not _pending(backend):
            return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
