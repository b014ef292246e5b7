"""A job's files, read by exec in one of its pods (``podexec``): a folder listed with ``find`` and
``stat``; a file downloaded as a raw byte stream (``tail -c +N``: an interrupted download resumes from
its partial file), a folder as a ``tar`` stream extracted with ``filter="data"`` (an interrupted one
resumes file by file from what its partial folder holds). Both land in ``.NAME.part`` beside the
target, are checked against the sizes (and the ``sha256sum``, where the pod has one) read before, and
are renamed to the target only then. Every function runs in a thread; paths reach the
pod as arguments (``sh -c SCRIPT sh PATH``), never inside a script.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tarfile
import threading
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, cast

from yanflow_tui.backends.base import Download, FileListing, JobFile
from yanflow_tui.backends.downloads import HASH, finish, is_complete, member, parse_hashes, partial_path, sha256_file
from yanflow_tui.backends.kubernetes.podexec import ExecStream, Runner, checked, run
from yanflow_tui.errors import BackendError

Progress = Callable[[int, int | None], None]
FORMAT = "%F\t%s\t%Y\t%n"  # type, size, mtime (epoch), name
LIST = 'cd -- "$1" || exit 2; pwd; find . -mindepth 1 -maxdepth 1 -exec stat -c "$2" -- {} +'
INFO = (
    'if [ -d "$1" ]; then cd -- "$1" || exit 2; echo dir; find . -type f -exec stat -c "%s\t%n" -- {} +; '
    'elif [ -f "$1" ]; then echo file; stat -c "%s\t%n" -- "$1"; '
    'else echo "no such file or folder: $1" >&2; exit 2; fi'
)
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


def _sizes(text: str) -> dict[str, int]:
    sizes = {}
    for line in text.splitlines():
        size, _, name = line.partition("\t")
        if size.isdigit():
            sizes[name.removeprefix("./")] = int(size)
    return sizes


def _hashes(start: Runner, path: str) -> dict[str, str] | None:
    """name -> sha256 (as ``_sizes`` names them); None where the pod has no ``sha256sum``."""
    code, out, _ = run(start, ["sh", "-c", HASH, "sh", path], idle=HASH_IDLE)
    if code:
        return None
    return parse_hashes(out.decode("utf-8", "replace"))


def download(
    start: Runner, path: str, target: Path, progress: Progress | None = None, stop: threading.Event | None = None
) -> Download:
    if target.exists():
        raise BackendError(f"{target} exists; not replaced")
    target.parent.mkdir(parents=True, exist_ok=True)
    info = checked(start, ["sh", "-c", INFO, "sh", path], f"reading {path}").decode("utf-8", "replace")
    kind, _, rest = info.partition("\n")
    sizes = _sizes(rest)
    hashes = _hashes(start, path)
    if kind == "file":
        size = next(iter(sizes.values()), 0)
        digest = next(iter(hashes.values()), None) if hashes else None
        return _file(start, path, target, size, digest, progress, stop)
    return _folder(start, path, target, sizes, hashes, progress, stop)


def _file(
    start: Runner,
    path: str,
    target: Path,
    size: int,
    digest: str | None,
    progress: Progress | None,
    stop: threading.Event | None,
) -> Download:
    part = partial_path(target)
    offset = part.stat().st_size if part.exists() else 0
    if offset > size:  # the source changed since: start again
        part.unlink()
        offset = 0
    done = offset
    with part.open("ab") as handle:

        def sink(chunk: bytes) -> None:
            nonlocal done
            handle.write(chunk)
            done += len(chunk)
            if progress is not None:
                progress(done, size)

        if offset < size:
            stream = start(["tail", "-c", f"+{offset + 1}", "--", path])
            stream.stop = stop or stream.stop
            try:
                for chunk in stream:
                    sink(chunk)
            finally:
                handle.flush()
                os.fsync(handle.fileno())
            code, err = stream.finish()
            if code:
                raise BackendError(f"reading {path}: {err.strip() or f'exit code {code}'}")
    finish(part, target, path, size, digest, "the pod")
    return Download(target, size, "size and sha256" if digest else "size", offset)


def _folder(
    start: Runner,
    path: str,
    target: Path,
    sizes: dict[str, int],
    hashes: dict[str, str] | None,
    progress: Progress | None,
    stop: threading.Event | None,
) -> Download:
    """One tar stream, extracted into ``.NAME.part`` beside the target. A try cut part-way leaves that
    folder, and the next one fetches only what it lacks there (``_resume``)."""
    total = sum(sizes.values())
    parent, name = posixpath.split(path.rstrip("/") or "/")
    whole = name in ("", ".")
    part = partial_path(target)
    root = part if whole else part / name
    resumed = 0
    if part.is_dir():
        resumed = _resume(start, path, root, sizes, hashes, total, progress, stop)
    else:
        part.unlink(missing_ok=True)
        part.mkdir()
        stream = start(["tar", "cf", "-", "-C", parent or ".", "--", "." if whole else name])
        stream.stop = stop or stream.stop
        reader = _Reader(stream, total, progress)
        try:
            with tarfile.open(fileobj=cast(IO[bytes], reader), mode="r|") as tar:
                tar.extractall(part, filter="data")
        except (tarfile.TarError, EOFError, BackendError) as exc:  # cut short: what arrived stays for a resume
            raise BackendError(f"tar of {path} ended early ({exc}); run the download again to resume") from None
        reader.drain()  # tar's end blocks are read; the exec's end (and exit code) comes after
        code, err = stream.finish()
        if code:
            raise BackendError(f"tar of {path}: {err.strip() or f'exit code {code}'}")
    _check_folder(part, root, path, sizes, hashes if not resumed else None)
    os.replace(root, target)
    shutil.rmtree(part, ignore_errors=True)  # what is left of it when the folder was a member of it
    return Download(target, total, "size and sha256" if hashes is not None else "size", resumed)


def _resume(
    start: Runner,
    path: str,
    root: Path,
    sizes: dict[str, int],
    hashes: dict[str, str] | None,
    total: int,
    progress: Progress | None,
    stop: threading.Event | None,
) -> int:
    """The files a cut try left in ``root``: each complete one (the pod's size and sha256) is kept, a
    shorter one (the member tar was writing) resumes from its end as a single file does, the rest come
    whole; the bytes kept."""
    inside = root.resolve()
    done = resumed = 0
    for name, size in sorted(sizes.items()):
        local = member(root, inside, name)
        digest = (hashes or {}).get(name)
        if is_complete(local, size, digest):
            done += size
            resumed += size
            if progress is not None:
                progress(done, total)
            continue
        local.parent.mkdir(parents=True, exist_ok=True)
        if local.is_file():
            os.replace(local, partial_path(local))  # as a cut single file leaves it
        base = done

        def counted(got: int, _size: int | None, base: int = base) -> None:
            if progress is not None:
                progress(base + got, total)

        resumed += _file(start, posixpath.join(path, name), local, size, digest, counted, stop).resumed_from
        done += size
    return resumed


def _check_folder(part: Path, root: Path, path: str, sizes: dict[str, int], hashes: dict[str, str] | None) -> None:
    """The folder arrived as the pod has it (sizes, and sha256 where given), else ``part`` is removed."""
    local = {str(p.relative_to(root)): p for p in root.rglob("*") if p.is_file()}
    wrong = sorted(n for n in sizes if n not in local or local[n].stat().st_size != sizes[n])
    bad = sorted(n for n, d in (hashes or {}).items() if n in local and sha256_file(local[n]) != d)
    if wrong or len(local) != len(sizes) or bad:
        shutil.rmtree(part, ignore_errors=True)
        if bad and not wrong:
            raise BackendError(f"{path}: sha256 differs for {', '.join(bad[:3])}; the partial folder is removed")
        raise BackendError(
            f"{path}: the files arrived do not match the pod's ({', '.join(wrong[:3]) or 'count'}); "
            "the partial folder is removed"
        )


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
