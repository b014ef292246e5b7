"""The console over the in-memory fake backend, run as a program (for the real-terminal tests):
``python tests/fakes/console.py [--read-only] [--no-mouse]`` starts ``YanflowApp`` on one fake cluster ``hpc``."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
sys.path[0] = str(TESTS)  # not tests/fakes: its pynvml would stand in for the real one

from fakes.backend import FakeBackend  # noqa: E402

from yanflow_tui.backends import registry  # noqa: E402
from yanflow_tui.config import ClusterConfig, Config  # noqa: E402


def main() -> None:
    registry.register("fake", FakeBackend)  # this process runs only the console: nothing to restore
    config = Config(clusters=(ClusterConfig("hpc", "fake", refresh_seconds=3600),), mouse="--no-mouse" not in sys.argv)
    if "--read-only" in sys.argv:
        config = config.with_read_only()
    from yanflow_tui.app import YanflowApp

    YanflowApp(config).run(mouse=config.mouse)


if __name__ == "__main__":
    main()
