"""The Slurm backend's declaration: its config options, the ``slurm:`` section of a job spec, a slower
default refresh, and discovery (``squeue`` on PATH: this machine is a login node). Light: no I/O but
a PATH lookup, and nothing of the backend is imported."""

from __future__ import annotations

import shutil
from collections.abc import Mapping

from yanflow_tui.backends.base import MONITOR_ONLY, BackendInfo
from yanflow_tui.backends.slurm import nativefile
from yanflow_tui.model import ClusterConfig

REFRESH = 10.0  # squeue and sinfo are heavier on the controller than a local read

SECTION = {
    "partition": "text",
    "account": "text",
    "qos": "text",
    "time": "text",
    "array": "text",
    "output": "text",
    "error": "text",
    "gpu_type": "text",
    "constraint": "text",
    "exclusive": "bool",
    "options": "options",  # extra sbatch options: {dependency: "afterok:12", mail-type: END} or a list
}


def discover(env: Mapping[str, str]) -> list[ClusterConfig]:
    if not shutil.which("squeue", path=env.get("PATH")):
        return []
    return [ClusterConfig("slurm", "slurm", refresh_seconds=REFRESH, description="local Slurm commands")]


def review(found: list[ClusterConfig]) -> list[ClusterConfig]:
    """A Slurm login node: training must not land on it, so the local cluster found first is shown for
    monitoring only."""
    if any(c.kind == "slurm" for c in found) and found[0].kind == "local":
        found[0] = ClusterConfig(
            "local", "local", description="this login node (monitoring only)", options={MONITOR_ONLY: True}
        )
    return found


INFO = BackendInfo(
    kind="slurm",
    backend="yanflow_tui.backends.slurm.backend:SlurmBackend",
    # container: {runtime: pyxis|apptainer|singularity|podman, conf: PATH, args: [...]} (backends/slurm/containers.py)
    # tensorboard: {command: [WORD, ...]}: the login node's TensorBoard (default ``tensorboard``)
    options=(
        "ssh",
        "partition",
        "account",
        "nodes_refresh_seconds",
        "command_timeout",
        "history",
        "container",
        "tensorboard",
    ),
    section=SECTION,
    refresh=REFRESH,
    discover=discover,
    review=review,
    native=(nativefile.FORMAT,),
)
