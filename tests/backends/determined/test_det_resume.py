"""Resume from a Determined trial's checkpoints, through the backend (``capabilities.checkpoints``) against
the fake master: the one with the most steps is found, and carried to a local cluster (the master's
checkpoint download, then the local backend's gated upload) for a job there to resume from."""

from __future__ import annotations

from pathlib import Path

from yanflow_tui import resume
from yanflow_tui.backends.local.backend import LocalBackend
from yanflow_tui.model import ClusterConfig


def read(path: Path) -> bytes:
    return path.read_bytes()


async def test_the_trials_checkpoint_with_the_most_steps_is_found_and_carried_to_another_cluster(
    backend, master, home, tmp_path
):
    for name, steps in (("ckpt-a", 100), ("ckpt-b", 300), ("ckpt-c", 200)):
        master.add_checkpoint(120, name, {"model.pth": name.encode()}, exp_id=12, steps=steps)
    search = await resume.find(backend, "trial-120")
    assert search.found is not None and search.found.path == "ckpt-b" and "steps 300" in search.found.what
    here = LocalBackend(ClusterConfig("here", "local"), state_dir=tmp_path / "state")
    move = resume.move_for(backend, here, "trial-120", search.found)
    assert move.how == "copy" and move.dest.endswith("trial-120/ckpt-b")
    path = await resume.carry(backend, "trial-120", search.found, here, move.dest)
    assert path == str(home / move.dest) and read(Path(path) / "model.pth") == b"ckpt-b"
