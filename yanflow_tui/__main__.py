"""Entry point for ``python -m yanflow_tui``."""

from yanflow_tui.cli import main

raise SystemExit(main())
