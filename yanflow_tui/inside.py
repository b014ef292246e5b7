"""Inside a running job, for the command line and the console alike: where a download goes, how sizes
and times read, what a folder's download left out, and the console's open port-forwards (``Forwards``).
The CLI verbs ``files``, ``download``, ``shell`` and ``forward`` are in ``yanflow_tui.cli.files`` and
``yanflow_tui.cli.inside``."""

from __future__ import annotations

import posixpath
from datetime import datetime
from pathlib import Path

from yanflow_tui.backends.base import Download, Forward
from yanflow_tui.locations import safe_filename


def download_target(path: str, dest: str | None = None) -> Path:
    """Where ``download PATH [DEST]`` writes: DEST, or inside it when it is a folder; else the current
    folder, under the source's own (safe) name."""
    name = safe_filename(posixpath.basename(path.rstrip("/")) or "download")
    if not dest:
        return Path.cwd() / name
    target = Path(dest).expanduser()
    return target / name if target.is_dir() else target


def skipped_text(result: Download) -> str:
    """What a folder's download left out, as the end of its message ("" when nothing)."""
    if not result.skipped:
        return ""
    more = f" and {len(result.skipped) - 3} more" if len(result.skipped) > 3 else ""
    return f"; left out: {', '.join(result.skipped[:3])}{more}"


def size_text(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def time_text(when: datetime | None) -> str:
    return when.astimezone().strftime("%Y-%m-%d %H:%M") if when else "-"


class Forwards:
    """The console's open port-forwards, by job key; closed with a key or all at exit."""

    def __init__(self) -> None:
        self.open: dict[str, list[Forward]] = {}  # job key -> its forwards

    def add(self, key: str, forward: Forward) -> None:
        self.open.setdefault(key, []).append(forward)

    def of(self, key: str) -> list[Forward]:
        return list(self.open.get(key, ()))

    async def close(self, key: str) -> int:
        closing = self.open.pop(key, [])
        for forward in closing:
            await forward.close()
        return len(closing)

    async def close_all(self) -> None:
        for key in list(self.open):
            await self.close(key)
