"""The specs this console submitted, kept by cluster and job id so that a job can be resumed (or sent
again) on its own spec: ``$XDG_STATE_HOME/yanflow/submitted/<cluster>/<job id>.yaml``, each written
atomically with mode 0600 by ``Hub.submit`` after the cluster took it. A job file sent as written (an
sbatch script...) is not kept: its cluster gives it back itself (``Backend.job_file``). Plain file I/O:
call these from a thread."""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path

import yaml

from yanflow_tui.errors import YanflowError
from yanflow_tui.locations import private_file, safe_filename, state_dir
from yanflow_tui.model import JobSpec

FOLDER = "submitted"
KEEP = 1000  # specs kept per cluster: the oldest beyond go (a busy user submits thousands a month)
HEADER = "# YanFlow: the spec of a job this console submitted (for resume)\n"


def spec_path(cluster: str, job_id: str, env: Mapping[str, str] = os.environ) -> Path:
    return state_dir(env) / FOLDER / safe_filename(cluster) / f"{safe_filename(job_id)}.yaml"


def remember(cluster: str, job_id: str, spec: JobSpec, env: Mapping[str, str] = os.environ) -> Path | None:
    """Keep ``spec`` as the one ``job_id`` on ``cluster`` was submitted with (None: a job file as written)."""
    from yanflow_tui.spec import spec_to_data

    if spec.native is not None:
        return None
    path = spec_path(cluster, job_id, env)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    data = spec_to_data(spec)
    data.pop("cluster", None)  # where it went is the folder's; a resume may send it elsewhere
    private_file(path, HEADER + yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    _prune(path.parent)
    return path


def _prune(folder: Path) -> None:
    """Only the ``KEEP`` newest specs stay in ``folder``."""
    keep, kept = KEEP, []
    for entry in os.scandir(folder):
        if entry.name.endswith(".yaml") and entry.is_file(follow_symlinks=False):
            kept.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.path))
    if len(kept) > keep:
        for _, path in sorted(kept)[: len(kept) - keep]:
            Path(path).unlink(missing_ok=True)


def recall(cluster: str, job_id: str, env: Mapping[str, str] = os.environ) -> JobSpec | None:
    """The spec ``job_id`` on ``cluster`` was submitted with from this console; None when it was not."""
    from yanflow_tui.spec import load_spec

    path = spec_path(cluster, job_id, env)
    if not path.is_file():
        return None
    try:
        return load_spec(path)
    except YanflowError:
        return None


def command_of(cluster: str, job_id: str, env: Mapping[str, str] = os.environ) -> str:
    """The command of the spec ``job_id`` on ``cluster`` was submitted with from this console (an argv list
    joined as a shell line; "" when none was kept): what a job detail shows where the cluster keeps none
    (Slurm, for a script given on stdin)."""
    spec = recall(cluster, job_id, env)
    if spec is None:
        return ""
    return spec.command if isinstance(spec.command, str) else shlex.join(spec.command)
