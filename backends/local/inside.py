"""Inside a local job: its folder (the spec's workdir) listed, a file or folder copied into ``.NAME.part``
beside the target (a file resumed from what an interrupted copy left there), checked against the
source's size and sha256 and only then renamed; the environment its process runs with (for a shell in
its workdir). Blocking: the backend runs these in threads."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from yanflow_tui.backends.base import Download, FileListing, JobFile
from yanflow_tui.backends.downloads import partial_path, sha256_file
from yanflow_tui.errors import BackendError

Progress = Callable[[int, int | None], None]
CHUNK = 1 << 20


def _where(path: str, workdir: str) -> Path:
    base = Path(workdir or "~").expanduser()
    return base / path if path else base


def list_dir(workdir: str, path: str = "") -> FileListing:
    where = _where(path, workdir)
    try:
        entries = list(os.scandir(where))
    except OSError as exc:
        raise BackendError(f"listing {where}: {exc.strerror or exc}") from None
    files = []
    for entry in entries:
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue  # gone since listed
        is_dir = entry.is_dir(follow_symlinks=False)
        stamp = datetime.fromtimestamp(info.st_mtime, timezone.utc)
        files.append(JobFile(entry.name, entry.path, 0 if is_dir else info.st_size, stamp, is_dir))
    files.sort(key=lambda f: (not f.is_dir, f.name))
    return FileListing(str(where), tuple(files))


def download(workdir: str, path: str, target: Path, progress: Progress | None = None) -> Download:
    source = _where(path, workdir)
    if target.exists():
        raise BackendError(f"{target} exists; not replaced")
    if source.is_file():
        size = source.stat().st_size
        done = [0]

        def count(n: int) -> None:
            done[0] += n
            if progress is not None:
                progress(done[0], size)

        target.parent.mkdir(parents=True, exist_ok=True)
        resumed = _copy(source, partial_path(target), count)
        _finish(source, partial_path(target), target)
        return Download(target, size, "size and sha256", resumed)
    if not source.is_dir():
        raise BackendError(f"no such file or folder: {source}")
    files = sorted(p for p in source.rglob("*") if p.is_file() and not p.is_symlink())
    total = sum(p.stat().st_size for p in files)
    part = partial_path(target)
    part.mkdir(parents=True, exist_ok=True)
    done = [0]

    def counted(n: int) -> None:
        done[0] += n
        if progress is not None:
            progress(done[0], total)

    resumed = 0
    for file in files:
        local = part / file.relative_to(source)
        if local.is_file() and local.stat().st_size == file.stat().st_size and sha256_file(local) == sha256_file(file):
            counted(local.stat().st_size)
            resumed += local.stat().st_size
            continue
        local.parent.mkdir(parents=True, exist_ok=True)
        resumed += _copy(file, partial_path(local), counted)
        _finish(file, partial_path(local), local)
    os.replace(part, target)
    return Download(target, total, "size and sha256", resumed)


def _copy(source: Path, part: Path, count: Callable[[int], None]) -> int:
    offset = part.stat().st_size if part.exists() else 0
    if offset > source.stat().st_size:
        part.unlink()
        offset = 0
    count(offset)
    with source.open("rb") as src, part.open("ab") as dst:
        src.seek(offset)
        while block := src.read(CHUNK):
            dst.write(block)
            count(len(block))
        dst.flush()
        os.fsync(dst.fileno())
    return offset


def _finish(source: Path, part: Path, target: Path) -> None:
    if part.stat().st_size != source.stat().st_size or sha256_file(part) != sha256_file(source):
        part.unlink()
        raise BackendError(f"{source}: the copy differs from the source (changed meanwhile?); removed")
    os.replace(part, target)


def job_environment(pid: int | None, fallback: dict[str, str]) -> dict[str, str]:
    """The environment the job's process runs with (/proc/PID/environ), else ``fallback``."""
    if pid:
        try:
            raw = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            return fallback
        pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
        return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}
    return fallback
