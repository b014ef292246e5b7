"""A download's progress bar, shared by the Files view and the job detail: the backend's progress
callback (called from any thread) only stores its figures, and the bar shows them ten times a second
while the download runs, on the event loop."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from textual.screen import Screen
from textual.widgets import ProgressBar

T = TypeVar("T")
Progress = Callable[[int, int | None], None]


class DownloadProgress:
    """The bar ``bar_id`` of ``screen`` and the download running under it (one at a time: ``busy``)."""

    def __init__(self, screen: Screen, bar_id: str) -> None:
        self.screen, self.bar_id = screen, bar_id
        self.figures: tuple[int, int | None] | None = None  # (bytes done, total or None), while running

    @property
    def busy(self) -> bool:
        return self.figures is not None

    def report(self, done: int, total: int | None) -> None:
        """The backend's progress callback: safe from its thread (it touches no widget)."""
        self.figures = (done, total)

    @property
    def bar(self) -> ProgressBar:
        return self.screen.query_one(self.bar_id, ProgressBar)

    def show(self) -> None:
        if self.figures is not None:
            done, total = self.figures
            self.bar.update(total=total, progress=done)

    async def run(self, download: Callable[[Progress], Awaitable[T]]) -> T:
        """``download(report)`` with the bar shown (left full once it is done; hidden when it fails, the
        failure raised for the caller to report); the screen's keys refreshed as it starts and ends."""
        bar = self.bar
        bar.display = True
        bar.update(total=None, progress=0)
        self.figures = (0, None)
        self.screen.refresh_bindings()
        timer = self.screen.set_interval(0.1, self.show)
        try:
            return await download(self.report)
        except Exception:
            bar.display = False
            raise
        finally:
            timer.stop()
            self.show()
            self.figures = None
            self.screen.refresh_bindings()
