"""Where YanFlow reads its config and keeps its state (XDG base directories)."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import BinaryIO

APP_DIR = "yanflow"


def _xdg(env: Mapping[str, str], var: str, fallback: str) -> Path:
    value = env.get(var, "")
    if value and os.path.isabs(value):
        return Path(value)
    return Path(env.get("HOME") or os.path.expanduser("~")) / fallback


def default_config_path(env: Mapping[str, str] = os.environ) -> Path:
    return _xdg(env, "XDG_CONFIG_HOME", ".config") / APP_DIR / "config.yaml"


def state_dir(env: Mapping[str, str] = os.environ) -> Path:
    """The state dir (SQLite, job logs), created with mode 0700."""
    path = _xdg(env, "XDG_STATE_HOME", ".local/state") / APP_DIR
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def job_file_path(name: str, env: Mapping[str, str] = os.environ) -> Path:
    """Where a job file given back by a cluster (``Backend.job_file``) is kept for the Submit form: a
    folder of the state dir, mode 0700 (write it with ``private_file``)."""
    folder = state_dir(env) / "job-files"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder / safe_filename(name)


def app_log_path(env: Mapping[str, str] = os.environ) -> Path:
    """The console's own log (``yanflow_tui.applog``); its folder is made when logging starts."""
    return _xdg(env, "XDG_STATE_HOME", ".local/state") / APP_DIR / "yanflow.log"


NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)


@contextlib.contextmanager
def private_writer(path: Path, *, replace: bool = True) -> Iterator[BinaryIO]:
    """A binary file that becomes ``path`` atomically, mode 0600, when the block ends without an
    error; on an error the temp file is removed and ``path`` is untouched.

    The temp file is made by ``tempfile.mkstemp`` in ``path``'s directory: an unpredictable name,
    opened with ``O_CREAT|O_EXCL|O_NOFOLLOW``, so nothing planted there (a file, a symlink) is
    ever opened, truncated or chmodded. It is written, fsynced and renamed onto ``path``; a rename
    replaces a symlink at ``path`` itself, never the file it points to. With ``replace=False`` an
    existing ``path`` (a dangling symlink included) raises ``FileExistsError`` at that moment, not
    at a check made earlier (a hard link, then the temp name is removed)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), 0o600)  # our own new file: exactly 0600 whatever the umask
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            _link_new(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _sync_dir(path.parent)


def _link_new(tmp: str, path: Path) -> None:
    """Give ``tmp`` the name ``path`` only if nothing has that name yet, then drop ``tmp``."""
    try:
        os.link(tmp, path, follow_symlinks=False)  # EEXIST when anything has that name, checked at once
    except FileExistsError:
        raise
    except OSError:  # no hard links on this file system: check, then rename (a small window)
        if os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, "File exists", str(path)) from None
        os.replace(tmp, path)
        return
    os.unlink(tmp)


def _sync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (best effort: some file systems refuse it)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def private_file(path: Path, data: bytes | str, *, replace: bool = True) -> None:
    """Write ``path`` atomically with mode 0600 (see ``private_writer``)."""
    with private_writer(path, replace=replace) as fh:
        fh.write(data.encode() if isinstance(data, str) else data)


def open_private(path: Path, flags: int) -> int:
    """Open a file we keep in place (a lock, an append-only log, a database) as an fd, mode 0600
    when created, never through a symlink (``O_NOFOLLOW``: a link at ``path`` raises ``OSError``)."""
    return os.open(path, flags | NOFOLLOW | CLOEXEC, 0o600)


def display_path(path: Path) -> str:
    """``path`` as the user would type it: ``~/...`` under the home directory."""
    try:
        return "~/" + str(Path(path).relative_to(Path.home()))
    except ValueError:
        return str(path)


def safe_filename(text: str) -> str:
    """``text`` (a job id, a checkpoint uuid: cluster text) as one safe file name component."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)
