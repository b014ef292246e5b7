"""Atomic checkpoint download through the master (``GET /checkpoints/{uuid}``, a tar stream, the
SDK's ``DownloadMode.MASTER`` path): streamed to a temp dir beside the target, checked, extracted
through the one writer (``downloads.Landing``) with our own member check (``tarsafe``: no absolute
names, ``..``, links leading outside, device files or fifos; on every Python), then moved into place.
An interrupted download leaves no target and no temp dir. Synchronous: run in a thread.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import requests

from yanflow_tui.backends import tarsafe
from yanflow_tui.backends.downloads import Landing
from yanflow_tui.errors import BackendError

CHUNK = 64 * 1024
PROGRESS_EVERY = 0.1  # seconds between progress calls (and one at the end)
Progress = Callable[[int, int | None], None]


def download(
    session, uuid: str, target: Path, progress: Progress | None = None, timeout: tuple[float, float] = (10.0, 60.0)
) -> Path:
    """Download checkpoint ``uuid`` into the new directory ``target``; return it."""
    target = Path(target).expanduser()
    if os.path.lexists(target):
        raise BackendError(f"{target} already exists; choose a new directory for the checkpoint")
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    try:
        archive = work / "checkpoint.tar"
        _fetch(session, uuid, archive, progress, timeout)
        with Landing(target, folder=True) as landing:
            landing.discard_on_close = True
            try:
                with tarfile.open(archive, "r:*") as tar:
                    tarsafe.extract(tar, landing)
            except (tarfile.TarError, EOFError, OSError) as exc:
                raise BackendError(f"checkpoint {uuid}: the archive is damaged or incomplete ({exc})") from None
            except BackendError as exc:
                raise BackendError(f"checkpoint {uuid}: {exc}") from None
            landing.finish(None, None, f"checkpoint {uuid}", "the master")
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _fetch(session, uuid: str, archive: Path, progress: Progress | None, timeout) -> None:
    try:
        response = session.get(
            f"checkpoints/{quote(uuid, safe='')}", headers={"Accept": "application/gzip"}, stream=True, timeout=timeout
        )
    except Exception as exc:
        raise BackendError(f"checkpoint {uuid}: download failed: {_why(exc)}") from None
    total_header = response.headers.get("Content-Length")
    total = int(total_header) if total_header and total_header.isdigit() else None
    done = 0
    last = float("-inf")
    try:
        # A fresh name in our own 0700 mkdtemp directory: exclusive, never through a link.
        fd = os.open(archive, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "wb") as out:
            for chunk in response.iter_content(CHUNK):
                out.write(chunk)
                done += len(chunk)
                now = time.monotonic()
                if progress is not None and (now - last >= PROGRESS_EVERY or done == total):
                    last = now
                    progress(done, total)
    except (requests.exceptions.RequestException, OSError) as exc:
        raise BackendError(f"checkpoint {uuid}: download interrupted after {done} bytes ({_why(exc)})") from None
    finally:
        response.close()
    if total is not None and done != total:
        raise BackendError(f"checkpoint {uuid}: download interrupted after {done} of {total} bytes")
    if progress is not None and total is None:
        progress(done, done)


def _why(exc: BaseException) -> str:
    text = (str(exc).strip().splitlines() or [""])[0][:200]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
