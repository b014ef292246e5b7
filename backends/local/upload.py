"""A file or folder copied into place on this machine for a local job (``Backend.upload``: a checkpoint
carried from another cluster): into a private folder beside the target (mode 0700), then renamed into
place, never replacing what is there. Blocking: the backend runs it in a thread."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from yanflow_tui.errors import BackendError


def upload(source: Path, target: str) -> str:
    final = Path(target).expanduser()
    final = final if final.is_absolute() else Path.home() / final
    if os.path.lexists(final):
        raise BackendError(f"upload: {final} exists; not replaced")
    final.parent.mkdir(parents=True, exist_ok=True)
    landing = Path(tempfile.mkdtemp(prefix=".yanflow-upload.", dir=final.parent))
    try:
        placed = landing / "data"
        if source.is_dir():
            shutil.copytree(source, placed, symlinks=False)
        else:
            shutil.copyfile(source, placed)
        if os.path.lexists(final):
            raise BackendError(f"upload: {final} exists; not replaced")
        os.rename(placed, final)
    finally:
        shutil.rmtree(landing, ignore_errors=True)
    return str(final)
