"""A local job's TensorBoard event files: its log directory (the spec's ``tensorboard.logdir``, else
WORKDIR/tb), the event files under it with their sizes and inodes, and a byte range of one. Blocking:
the backend runs these in threads."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from yanflow_tui.curves import SECTION, EventFile, is_event_file, logdir_for
from yanflow_tui.errors import BackendError


def logdir_of(spec_data: dict[str, Any]) -> str:
    workdir = str(Path(spec_data.get("workdir") or "~").expanduser())
    section = spec_data.get(SECTION)
    logdir = logdir_for(section if isinstance(section, dict) else None, workdir)
    return str(Path(logdir).expanduser())


def list_event_files(logdir: str) -> list[EventFile]:
    found: list[EventFile] = []
    for top, dirs, names in os.walk(logdir):
        dirs.sort()
        for name in sorted(names):
            if not is_event_file(name):
                continue
            path = os.path.join(top, name)
            try:
                info = os.stat(path)
            except OSError:
                continue  # gone since listed
            found.append(EventFile(path, info.st_size, f"{info.st_dev}:{info.st_ino}"))
    return found


def read_range(logdir: str, path: str, offset: int, limit: int) -> tuple[int, bytes]:
    """(start, bytes): at most ``limit`` bytes of ``path`` from ``offset``, or from 0 when the file
    is now shorter than ``offset``. ``path`` must be an event file under ``logdir``."""
    real = os.path.realpath(path)
    if not is_event_file(os.path.basename(path)) or os.path.commonpath([real, os.path.realpath(logdir)]) != (
        os.path.realpath(logdir)
    ):
        raise BackendError(f"not an event file under the job's log directory {logdir}: {path}")
    try:
        with open(real, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            start = offset if size >= offset else 0
            fh.seek(start)
            return start, fh.read(max(0, limit))
    except FileNotFoundError:
        return 0, b""
