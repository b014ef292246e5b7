"""Shim at the old path ``yanflow_tui.backends.local_scheduler``: local jobs started by an older version spawned
``python -m yanflow_tui.backends.local_scheduler``; that still works. New code runs ``backends/local/scheduler.py``."""

import sys

from yanflow_tui.backends.local.scheduler import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
