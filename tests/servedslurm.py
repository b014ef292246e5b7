"""A transport that serves a Slurm backend canned ``squeue -o`` texts, ``id -un`` and ``sacct`` (no
accounting): the backend's real argv and parse over them, no cluster."""

from __future__ import annotations

import asyncio

from yanflow_tui.backends.slurm.transport import Result, Transport


class Served(Transport):
    """Answers ``squeue -o`` with the next of ``texts`` (the last one again once they run out), ``id -un``
    and ``sacct`` (no accounting); counts the ``ticks`` seen when each squeue text was served."""

    def __init__(self, texts: list[bytes], ticks: list[int] | None = None):
        super().__init__()
        self.texts = texts
        self.served: list[bytes] = []
        self.ticks = ticks  # the test's tick counter (one item), read when a text is served
        self.served_at: list[int] = []
        self.squeued = asyncio.Event()

    async def run(self, argv, stdin_data=None, timeout=None) -> Result:
        argv = tuple(str(a) for a in argv)
        if argv[:2] == ("id", "-un"):
            return Result(argv, 0, "alice\n", "")
        if argv[0] == "squeue" and "-o" in argv:
            text = self.texts[min(len(self.served), len(self.texts) - 1)]
            self.served.append(text)
            self.served_at.append(self.ticks[0] if self.ticks else 0)
            self.squeued.set()
            return Result(argv, 0, text, "")
        if argv[0] == "sacct":
            return Result(argv, 1, "", "sacct: error: Slurm accounting storage is disabled")
        return Result(argv, 1, "", f"{argv[0]}: not served here")

    async def _exec(self, script: str):  # pragma: no cover - run() answers every command
        raise AssertionError(script)

    async def _stream(self, script: str):  # pragma: no cover
        raise AssertionError(script)
