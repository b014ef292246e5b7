"""The supervisor that runs one local job: ``python -m yanflow_tui.backends.local.runner EXIT_FILE -- ARGV...``

It leads the job's process group, runs ARGV as a child in that group, survives the SIGTERM that
cancel sends to the group (so it can record the child's fate), and writes the exit status to
EXIT_FILE atomically. The console can then exit and a later console still learns how the job ended.
Imports only the standard library (and ``yanflow_tui.locations``, which does too): it starts once
per job.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: local_runner EXIT_FILE -- COMMAND...", file=sys.stderr)
        return 2
    exit_file, command = argv[0], argv[2:]
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        # A Python handler, not SIG_IGN: handlers reset to default in the child on exec.
        signal.signal(sig, lambda *_: None)
    try:
        child = subprocess.Popen(command, stdin=subprocess.DEVNULL)
        code = child.wait()
    except OSError as exc:
        print(f"yanflow: cannot start job: {exc}", file=sys.stderr, flush=True)
        code = 127
    from yanflow_tui.locations import private_file  # standard library only, like this module

    private_file(Path(exit_file), f"{code}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
