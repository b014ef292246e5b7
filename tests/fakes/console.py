"""The console over the in-memory fake backend, run as a program (for the real-terminal tests):
``python tests/fakes/console.py [--read-only] [--no-mouse] [--job-ends] [--no-notices] [--refresh-seconds S]``
starts ``YanflowApp`` on one fake cluster ``hpc`` (refreshed every S seconds, default once an hour).
``--job-ends``: running job 101 fails (exit code 3) a second after the first refresh, and the cluster says
it changed; ``--no-notices``: the config's ``notify: false``."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import replace
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
sys.path[0] = str(TESTS)  # not tests/fakes: its pynvml would stand in for the real one

from fakes.backend import FakeBackend  # noqa: E402

from yanflow_tui.backends import registry  # noqa: E402
from yanflow_tui.config import ClusterConfig, Config  # noqa: E402
from yanflow_tui.model import JobState  # noqa: E402
from yanflow_tui.notices import NoticeSettings  # noqa: E402


class EndingBackend(FakeBackend):
    """Job 101 fails with exit code 3 a second after the first read."""

    async def list_jobs(self):
        if not any(c[0] == "list_jobs" for c in self.calls):
            asyncio.get_running_loop().call_later(1.0, self._end)
        return await super().list_jobs()

    def _end(self) -> None:
        self.jobs[0] = replace(self.jobs[0], state=JobState.FAILED, raw_state="FAILED", exit_code=3)
        self.notify_changed()


def _refresh_seconds() -> float:
    if "--refresh-seconds" in sys.argv:
        return float(sys.argv[sys.argv.index("--refresh-seconds") + 1])
    return 3600.0


def main() -> None:
    backend = EndingBackend if "--job-ends" in sys.argv else FakeBackend
    registry.register("fake", backend)  # this process runs only the console: nothing to restore
    config = Config(
        clusters=(ClusterConfig("hpc", "fake", refresh_seconds=_refresh_seconds()),),
        mouse="--no-mouse" not in sys.argv,
        notify=NoticeSettings(on="--no-notices" not in sys.argv),
    )
    if "--read-only" in sys.argv:
        config = config.with_read_only()
    from yanflow_tui.app import YanflowApp

    YanflowApp(config).run(mouse=config.mouse)


if __name__ == "__main__":
    main()
