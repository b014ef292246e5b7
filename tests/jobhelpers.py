"""Helpers shared by the local-backend and CLI tests: running the CLI as a subprocess, and cleaning up
every process a test's jobs left behind (by PID, never by name)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from yanflow_tui.backends.local import procs
from yanflow_tui.backends.local.store import LocalStore


def run_cli(*args: str, timeout: float = 60, env: dict | None = None, cwd: str | None = None):
    """``python -m yanflow_tui ARGS`` in a subprocess with the (monkeypatched) environment."""
    return subprocess.run(
        [sys.executable, "-m", "yanflow_tui", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(env or os.environ),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


def live(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie."""
    return procs.alive(pid, None)


def cleanup_state_dir(state_dir: Path) -> None:
    """Stop whatever the jobs of ``state_dir`` left running: cancel pending rows (so a background
    scheduler exits), SIGKILL the process group of every running job, and the scheduler itself."""
    db = state_dir / "local.db"
    if db.exists():
        store = LocalStore(db)
        try:
            for row in store.active():
                if row.state == "pending":
                    store.update(row.id, state="cancelled", reason="test cleanup", end_time=time.time())
                elif row.pid and procs.group_members(row.pid):
                    procs.signal_group(row.pid, signal.SIGKILL)
        finally:
            store.close()
    marker = str(state_dir)
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if ("yanflow_tui.backends.local_" in cmdline or "yanflow_tui.backends.local." in cmdline) and (
            marker + "/" in cmdline or marker + " " in cmdline
        ):
            try:
                os.kill(int(entry.name), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
