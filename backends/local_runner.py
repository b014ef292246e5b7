"""Shim at the old path ``yanflow_tui.backends.local_runner``: local jobs started by an older version spawned
``python -m yanflow_tui.backends.local_runner``; that still works. New code runs ``backends/local/runner.py``."""

import sys

from yanflow_tui.backends.local.runner import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
