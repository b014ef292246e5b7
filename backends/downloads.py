"""What every backend's download shares: where a file collects until it is complete and checked (kept
beside the target, so an interrupted download resumes from it), and the sha256 it is checked by."""

from __future__ import annotations

import hashlib
import os
import posixpath
from pathlib import Path

from yanflow_tui.errors import BackendError

CHUNK = 1 << 20  # bytes hashed at a time
# The sha256 of a file, or of every file under a folder (``./name`` lines), as the cluster computes it:
# ``sh -c HASH sh PATH``.
HASH = 'if [ -d "$1" ]; then cd -- "$1" && find . -type f -exec sha256sum -- {} +; else sha256sum -- "$1"; fi'


def output_folder(outputs: str | None, workdir: str) -> str:
    """A job's output folder, where its Files view opens and a relative download path starts: the spec's
    ``outputs:`` (absolute, or relative to the workdir), else the workdir itself."""
    if not outputs:
        return workdir
    if outputs.startswith(("/", "~")):
        return outputs
    return posixpath.join(workdir or ".", outputs)


def partial_path(target: Path) -> Path:
    """Where a download of ``target`` collects until it is complete and checked (kept for a resume)."""
    return target.with_name(f".{target.name}.part")


def sha256_file(path: Path) -> str:
    """The hex sha256 of the file at ``path``, read a block at a time."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def parse_hashes(text: str, single: str | None = None) -> dict[str, str]:
    """name -> sha256 from HASH's output (``./`` dropped); the line of ``single`` (the path of a single
    file hashed, where the caller names it) is keyed ".", as its size is."""
    found = {}
    for line in text.splitlines():
        digest, _, name = line.partition("  ")
        if len(digest) == 64:
            found["." if single is not None and name == single else name.removeprefix("./")] = digest
    return found


def member(folder: Path, inside: Path, name: str) -> Path:
    """``folder / name`` for a name the source listed; ``inside`` is ``folder`` resolved. A name that
    would leave the folder (``..``, a link) is refused."""
    local = folder / name
    if not local.resolve().is_relative_to(inside):
        raise BackendError(f"a file name leaves the folder: {name!r}")
    return local


def is_complete(local: Path, size: int, digest: str | None) -> bool:
    """``local`` is a whole copy already: the source's size, and its sha256 where the source gave one."""
    return local.is_file() and local.stat().st_size == size and (digest is None or sha256_file(local) == digest)


def finish(part: Path, target: Path, what: str, size: int, digest: str | None, source: str) -> None:
    """Check ``part`` against the ``source``'s size (``source``: "the cluster", "the pod") and sha256 where
    it gave one, then rename it to ``target``; a partial file that fails is removed."""
    got = part.stat().st_size if part.exists() else 0
    if got != size:
        part.unlink(missing_ok=True)
        raise BackendError(f"{what}: {got} bytes arrived, {source} has {size}; the partial file is removed")
    if digest is not None and sha256_file(part) != digest:
        part.unlink()
        raise BackendError(f"{what}: the sha256 does not match {source}'s; the partial file is removed")
    os.replace(part, target)
