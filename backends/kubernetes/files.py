"""A job's files, read by exec in one of its pods (``podexec``): a folder listed with ``find`` and
``stat``; a file downloaded as a raw byte stream (``tail -c +N``: an interrupted download resumes from
what it left), a folder as a ``tar`` stream (links followed) extracted with our own member check
(``tarsafe``; an interrupted one resumes file by file, as does a folder with links leading out of it,
which are left out). Both land in the one writer (``downloads.Landing``: a private folder beside the
target), are checked against the sizes (and the ``sha256sum``, where the pod has one) read before, and
are moved to the target only then. Every function runs in a thread; paths reach the
pod as arguments (``sh -c SCRIPT sh PATH``), never inside a script.
"""

from __future__ import annotations

import os
import posixpath
import tarfile
import threading
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, cast

from yanflow_tui.backends import tarsafe
from yanflow_tui.backends.base import Download, FileListing, JobFile
from yanflow_tui.backends.downloads import HASH, INFO, Landing, find_errors, local_name, parse_hashes, parse_info
from yanflow_tui.backends.kubernetes.podexec import ExecStream, Runner, checked, run
from yanflow_tui.errors import BackendError

Progress = Callable[[int, int | None], None]
FORMAT = "%F\t%s\t%Y\t%n"  # type, size, mtime (epoch), name
LIST = 'cd -- "$1" || exit 2; pwd; find . -mindepth 1 -maxdepth 1 -exec stat -c "$2" -- {} +'
HASH_IDLE = 1800.0  # s: sha256sum prints a file's line only once it has read it all (weights can be large)


def list_dir(start: Runner, path: str) -> FileListing:
    out = checked(start, ["sh", "-c", LIST, "sh", path or ".", FORMAT], f"listing {path or 'the job folder'}")
    lines = out.decode("utf-8", "replace").splitlines()
    where = lines[0] if lines else path
    files = []
    for line in lines[1:]:
        parts = line.split("\t", 3)
        if len(parts) != 4 or not parts[1].isdigit():
            continue  # a name with a line break: not listed
        kind, size, mtime, name = parts
        name = name.removeprefix("./")
        stamp = datetime.fromtimestamp(int(mtime), timezone.utc) if mtime.isdigit() else None
        files.append(JobFile(name, posixpath.join(where, name), int(size), stamp, kind == "directory"))
    files.sort(key=lambda f: (not f.is_dir, f.name))
    return FileListing(where, tuple(files))


def _hashes(start: Runner, path: str) -> dict[str, str] | None:
    """name -> sha256 (as INFO names them; "." for a single file); None where the pod has no
    ``sha256sum``."""
    code, out, err = run(start, ["sh", "-c", HASH, "sh", path], idle=HASH_IDLE)
    try:
        find_errors(code, err, path)
    except BackendError:
        return None
    return parse_hashes(out.decode("utf-8", "surrogateescape"), single=path)


def download(
    start: Runner, path: str, target: Path, progress: Progress | None = None, stop: threading.Event | None = None
) -> Download:
    if os.path.lexists(target):
        raise BackendError(f"{target} exists; not replaced")
    if local_name(path) != path:  # exec's argv is UTF-8 text
        raise BackendError(f"{local_name(path)!r}: a name that is not UTF-8 cannot be sent to the pod")
    code, out, err = run(start, ["sh", "-c", INFO, "sh", path])
    listing = parse_info(out, find_errors(code, err, f"reading {path}"))
    hashes = _hashes(start, path)
    total = sum(listing.sizes.values())
    with Landing(target, listing.folder) as landing:
        if listing.folder and not landing.kept() and not listing.skipped:
            resumed = _tar(start, path, landing, total, progress, stop)
        else:  # a file; a folder resumed, or one with links left out: file by file
            resumed = _files(start, path, landing, listing.sizes, hashes, total, progress, stop)
        landing.finish(listing.sizes, hashes, path, "the pod")
    return Download(target, total, "size and sha256" if hashes is not None else "size", resumed, listing.skipped)


def _files(
    start: Runner,
    path: str,
    landing: Landing,
    sizes: dict[str, int],
    hashes: dict[str, str] | None,
    total: int,
    progress: Progress | None,
    stop: threading.Event | None,
) -> int:
    """Each file fetched as a byte stream (``tail -c +N``) from what an earlier try left of it (one
    complete already is kept); the bytes kept."""
    done = resumed = 0
    for name, size in sorted(sizes.items()):
        offset = landing.have(name, size, (hashes or {}).get(name))
        resumed += offset
        done += offset
        if progress is not None:
            progress(done, total)
        if offset == size and size:
            continue
        part = landing.open(name, offset)
        try:
            if offset < size:
                source = path if name == "." else posixpath.join(path, name)
                stream = start(["tail", "-c", f"+{offset + 1}", "--", source])
                stream.stop = stop or stream.stop
                for chunk in stream:
                    part.write(chunk)
                    done += len(chunk)
                    if progress is not None:
                        progress(done, total)
                code, err = stream.finish()
                if code:
                    raise BackendError(f"reading {source}: {err.strip() or f'exit code {code}'}")
        finally:
            part.close()
    return resumed


def _tar(
    start: Runner, path: str, landing: Landing, total: int, progress: Progress | None, stop: threading.Event | None
) -> int:
    """One tar stream (``tar ch``: links followed, as INFO listed them), extracted with our own member
    check (``tarsafe``). A try cut part-way leaves what arrived, and the next one fetches file by file
    only what it lacks."""
    stream = start(["tar", "chf", "-", "-C", path, "."])
    stream.stop = stop or stream.stop
    reader = _Reader(stream, total, progress)
    try:
        with tarfile.open(fileobj=cast(IO[bytes], reader), mode="r|") as tar:
            tarsafe.extract(tar, landing)
    except (tarfile.TarError, EOFError) as exc:  # cut short: what arrived stays for a resume
        raise BackendError(f"tar of {path} ended early ({exc}); run the download again to resume") from None
    except BackendError as exc:
        raise BackendError(f"tar of {path}: {exc}; run the download again to resume") from None
    reader.drain()  # tar's end blocks are read; the exec's end (and exit code) comes after
    code, err = stream.finish()
    if code:
        raise BackendError(f"tar of {path}: {err.strip() or f'exit code {code}'}")
    return 0


class _Reader:
    """A file object over an exec's stdout, for ``tarfile``'s stream mode."""

    def __init__(self, stream: ExecStream, total: int, progress: Progress | None) -> None:
        self.chunks = iter(stream)
        self.buffer = b""
        self.done = 0
        self.total = total
        self.progress = progress

    def drain(self) -> None:
        for _ in self.chunks:
            pass

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self.buffer) < size:
            chunk = next(self.chunks, None)
            if chunk is None:
                break
            self.buffer += chunk
            self.done += len(chunk)
            if self.progress is not None:
                self.progress(min(self.done, self.total), self.total)
        if size < 0:
            size = len(self.buffer)
        out, self.buffer = self.buffer[:size], self.buffer[size:]
        return out
