"""Inside a local job: its folder (the spec's workdir) listed, a file or folder copied through the one
writer (``downloads.Landing``: a private folder beside the target; a file resumed from what an
interrupted copy left there; links followed, a folder's links leading out of it skipped), checked
against the source's size and sha256 and only then moved into place; the environment its process runs
with (for a shell in its workdir). Blocking: the backend runs these in threads."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from yanflow_tui.backends.base import Download, FileListing, JobFile
from yanflow_tui.backends.downloads import Landing, Part, sha256_file
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
        try:  # a link as its target (its size, a folder), else as itself (a broken link)
            info = entry.stat() if os.path.exists(entry.path) else entry.stat(follow_symlinks=False)
        except OSError:
            continue  # gone since listed
        is_dir = stat.S_ISDIR(info.st_mode)
        stamp = datetime.fromtimestamp(info.st_mtime, timezone.utc)
        files.append(JobFile(entry.name, entry.path, 0 if is_dir else info.st_size, stamp, is_dir))
    files.sort(key=lambda f: (not f.is_dir, f.name))
    return FileListing(str(where), tuple(files))


def download(workdir: str, path: str, target: Path, progress: Progress | None = None) -> Download:
    """``path`` (a file, links followed; or a folder: every file under it, links followed while they stay
    inside it) into ``target`` through the one writer (``downloads.Landing``)."""
    source = _where(path, workdir)
    if os.path.lexists(target):
        raise BackendError(f"{target} exists; not replaced")
    skipped: tuple[str, ...] = ()
    if source.is_file():
        files, folder = {".": source}, False
    elif source.is_dir():
        files, skipped, folder = *_tree(source), True
    else:
        raise BackendError(f"no such file or folder: {source}")
    sizes = {name: file.stat().st_size for name, file in files.items()}
    total, done = sum(sizes.values()), [0]

    def counted(n: int) -> None:
        done[0] += n
        if progress is not None:
            progress(done[0], total)

    hashes = {name: sha256_file(file) for name, file in files.items()}
    resumed = 0
    with Landing(target, folder) as landing:
        for name, file in sorted(files.items()):
            offset = landing.have(name, sizes[name], hashes[name])
            resumed += offset
            counted(offset)
            if offset < sizes[name] or not sizes[name]:
                _copy(file, landing.open(name, offset), offset, counted)
        landing.finish(sizes, hashes, str(source), "the source")
    return Download(target, total, "size and sha256", resumed, skipped)


def _tree(source: Path) -> tuple[dict[str, Path], tuple[str, ...]]:
    """Every file under ``source`` by relative name, links followed while their target stays inside it
    (the others, and folder loops, named in the second value)."""
    root = source.resolve()
    files: dict[str, Path] = {}
    skipped: list[str] = []
    for here, dirs, names in os.walk(source, followlinks=True):
        for name in list(dirs):
            path = Path(here) / name
            real = path.resolve()
            if not real.is_relative_to(root):
                skipped.append(f"{path.relative_to(source)} (a link leading outside the folder)")
                dirs.remove(name)
            elif real == Path(here).resolve() or real in Path(here).resolve().parents:
                skipped.append(f"{path.relative_to(source)} (a folder loop)")
                dirs.remove(name)
        for name in names:
            path = Path(here) / name
            if path.is_symlink() and not path.resolve().is_relative_to(root):
                skipped.append(f"{path.relative_to(source)} (a link leading outside the folder)")
            elif path.is_file():
                files[str(path.relative_to(source))] = path
    return files, tuple(skipped)


def _copy(source: Path, part: Part, offset: int, count: Callable[[int], None]) -> None:
    try:
        with source.open("rb") as src:
            src.seek(offset)
            while block := src.read(CHUNK):
                part.write(block)
                count(len(block))
    finally:
        part.close()


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
