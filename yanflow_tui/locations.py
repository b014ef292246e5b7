"""Where YanFlow reads its config and keeps its state (XDG base directories)."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import BinaryIO, Iterator, Mapping

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


@contextlib.contextmanager
def private_writer(path: Path) -> Iterator[BinaryIO]:
    """A binary file that becomes ``path`` atomically, mode 0600, when the block ends without an
    error (temp file beside it, fsync, rename); on an error the temp file is removed."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # also when a stale temp file existed with another mode
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def private_file(path: Path, data: bytes | str) -> None:
    """Write ``path`` atomically with mode 0600 (temp file beside it, then rename)."""
    with private_writer(path) as fh:
        fh.write(data.encode() if isinstance(data, str) else data)


def display_path(path: Path) -> str:
    """``path`` as the user would type it: ``~/...`` under the home directory."""
    try:
        return "~/" + str(Path(path).relative_to(Path.home()))
    except ValueError:
        return str(path)


def safe_filename(text: str) -> str:
    """``text`` (a job id, a checkpoint uuid: cluster text) as one safe file name component."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)
