"""Files of this machine copied onto a Slurm cluster through its own transport (``Backend.upload``), with
no SFTP (login nodes without it exist): each file goes in base64 chunks on the stdin of ``base64 -d``
(the transport's quoted heredoc), into a private folder beside the target (``mktemp -d``, mode 0700);
the whole is checked against ``sha256sum`` there and only then moved into place, never replacing what
is there. Paths reach the cluster as argv words (``sh -c SCRIPT sh PATH``), never inside a script."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
from pathlib import Path

from yanflow_tui.backends.slurm.transport import Transport
from yanflow_tui.errors import BackendError

CHUNK = 1 << 20  # raw bytes a command (1.4 MB of base64 on its stdin)
# The target made absolute (relative: to $HOME), refused when there, its folder made, a private folder beside it.
PREPARE = (
    "case $1 in /*) t=$1 ;; *) t=$HOME/$1 ;; esac; "
    'if [ -e "$t" ] || [ -L "$t" ]; then echo "$t exists; not replaced" >&2; exit 3; fi; '
    'd=$(dirname -- "$t"); mkdir -p -- "$d" && p=$(mktemp -d "$d/.yanflow-upload.XXXXXX") && '
    'printf "%s\\n%s\\n" "$t" "$p"'
)
WRITE = 'mkdir -p -- "$(dirname -- "$1")" && if [ "$2" = 0 ]; then base64 -d > "$1"; else base64 -d >> "$1"; fi'
HASHES = 'cd -- "$1" && find . -type f -exec sha256sum -- {} +'
PLACE = 'if [ -e "$2" ] || [ -L "$2" ]; then echo "$2 exists" >&2; exit 3; fi; mv -- "$1/data" "$2" && rmdir -- "$1"'
DROP = 'rm -rf -- "$1"'


def _files(source: Path) -> list[tuple[str, Path]]:
    """(name under the landing folder's ``data``, local path) of each file; a single file is ``data`` itself."""
    if source.is_file():
        return [("", source)]
    out = []
    for folder, _dirs, names in os.walk(source):
        for name in names:
            path = Path(folder) / name
            if path.is_file() and not path.is_symlink():
                out.append((path.relative_to(source).as_posix(), path))
    return sorted(out)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _chunks(path: Path) -> list[bytes]:
    with open(path, "rb") as fh:
        data = fh.read()
    return [data[i : i + CHUNK] for i in range(0, len(data), CHUNK)] or [b""]


async def upload(transport: Transport, source: Path, target: str) -> str:
    """``source`` (a file or folder here) to ``target`` on the cluster; returns its absolute path there."""
    files = await asyncio.to_thread(_files, source)
    result = await transport.run(["sh", "-c", PREPARE, "sh", target])
    if not result.ok:
        raise BackendError(f"upload to {target}: {result.error()}")
    lines = result.stdout.splitlines()
    if len(lines) != 2:
        raise BackendError(f"upload to {target}: unexpected answer {result.stdout[:80]!r}")
    final, landing = lines
    try:
        for name, path in files:
            remote = f"{landing}/data" + (f"/{name}" if name else "")
            for i, chunk in enumerate(await asyncio.to_thread(_chunks, path)):
                text = base64.encodebytes(chunk).decode("ascii")
                await transport.check(["sh", "-c", WRITE, "sh", remote, str(i)], stdin_data=text)
        await _verify(transport, landing, files)
        placed = await transport.run(["sh", "-c", PLACE, "sh", landing, final])
        if not placed.ok:
            raise BackendError(f"upload to {final}: {placed.error()}")
    except BaseException:
        await asyncio.shield(transport.run(["sh", "-c", DROP, "sh", landing]))
        raise
    return final


async def _verify(transport: Transport, landing: str, files: list[tuple[str, Path]]) -> None:
    """The landed files' sha256 equal this machine's, every one; else ``BackendError``."""
    answer = await transport.check(["sh", "-c", HASHES, "sh", landing])
    remote = {}
    for line in answer.splitlines():
        digest, _, name = line.partition("  ")
        remote[name.removeprefix("./")] = digest
    for name, path in files:
        key = f"data/{name}" if name else "data"
        if remote.get(key) != await asyncio.to_thread(_sha256, path):
            raise BackendError(f"upload: {path.name} differs on the cluster after the copy (sha256)")
