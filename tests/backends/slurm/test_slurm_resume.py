"""Resume on the real Slurm test clusters, as a user's shell would drive it: two torchrun-ddp template
jobs (the stub torchrun, the project's pure-Python loop) submitted with ``yanflow-tui submit``, each
cancelled once it wrote its second checkpoint (``checkpoints/epoch_2.json``); then ``yanflow-tui resume``
sends one again on the same cluster and the other to the second cluster (the site profile, configured
with no shared storage: the checkpoint is copied through the console, downloaded over SSH and uploaded
with no SFTP). Each new job's log says the path it resumed from and runs only the third epoch. Jobs are
named ``resume-*`` and cancelled at teardown."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from jsoncontract import validated
from launchstubs import make_launchers
from sitehelpers import SITE_CONFIG, site_slurm
from slurmhelpers import DIR, JOBS, live_state, slurm
from waiting import wait_until

from yanflow_tui import projects
from yanflow_tui.backends.slurm.script import RANK_SUFFIX
from yanflow_tui.model import Resources
from yanflow_tui.spec import load_spec, spec_to_data

ENDED = ("FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY")


@pytest.fixture
def root(slurm_dir, site_dir, tmp_path):
    """The jobs' folder (seen by both clusters' nodes), and a config naming both clusters, no storage shared."""
    folder = JOBS / f"resume-{uuid.uuid4().hex[:8]}"
    folder.mkdir(parents=True)
    folder.chmod(0o755)
    make_launchers(folder / "bin")
    clusters = [*yaml.safe_load((DIR / "yanflow.yaml").read_text())["clusters"]]
    clusters += yaml.safe_load(SITE_CONFIG.read_text())["clusters"]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"clusters": clusters}))
    yield folder
    names = [n.strip() for n in slurm("squeue", "-h", "-a", "-t", "all", "-o", "%j", check=False).splitlines()]
    if folder.name in names:
        slurm("scancel", "-n", folder.name, check=False)
    site_slurm("scancel", "-n", folder.name, check=False)
    shutil.rmtree(folder, ignore_errors=True)


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"))  # the kept specs: this test's own
    return subprocess.run(
        [sys.executable, "-m", "yanflow_tui", "--config", str(tmp_path / "config.yaml"), *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def write_spec(root: Path, project: Path) -> Path:
    """The template's own spec, made short: 3 epochs of 5 steps, 8 s after each checkpoint."""
    spec = load_spec(project / "job.yaml")
    env = {"PATH": f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}", "TMPDIR": str(root), "YANFLOW_EPOCH_SECONDS": "8"}
    spec = replace(
        spec,
        name=root.name,
        command="python3 train.py --epochs 3 --steps 5",
        image=None,
        workdir=str(project),
        env={**spec.env, **env},
        resources=Resources(nodes=1, gpus=2, cpus=1, memory_mb=512),
        sections={"slurm": {"partition": "gpu", "time": "00:03:00", "output": str(root / "resume-%j.out")}},
    )
    path = project / "resume-job.yaml"
    path.write_text(yaml.safe_dump(spec_to_data(spec), sort_keys=False))
    return path


def output(root: Path, job_id: str) -> str:
    path = root / f"resume-{job_id}.out"
    return "".join(p.read_text() for p in [path, *sorted(root.glob(f"{path.name}{RANK_SUFFIX}*"))] if p.exists())


def site_state(job_id: str) -> str | None:
    return site_slurm("squeue", "-h", "-t", "all", "-j", job_id, "-o", "%T", check=False).strip() or None


def wait_done(root: Path, job_id: str, state_of) -> str:
    def done() -> bool:
        state = state_of(job_id)
        assert state not in (*ENDED, "CANCELLED"), (state, output(root, job_id))
        return state in ("COMPLETED", None)

    wait_until(done, timeout=180, what=f"job {job_id}")
    return output(root, job_id)


def test_a_cancelled_template_job_resumes_from_its_second_checkpoint_here_and_on_the_other_cluster(root, tmp_path):
    started = {}
    for name in ("here", "there"):
        project = root / name
        projects.write_project("torchrun-ddp", project)
        sent = cli(tmp_path, "submit", str(write_spec(root, project)), "--cluster", "slurm-test", "--json")
        assert sent.returncode == 0, sent.stderr
        started[name] = (json.loads(sent.stdout)["submit"]["id"], project)
    for job_id, project in started.values():
        second = project / "checkpoints" / "epoch_2.json"
        wait_until(second.exists, timeout=120, what=f"job {job_id}'s second checkpoint")
        cancelled = cli(tmp_path, "cancel", job_id, "--cluster", "slurm-test")
        assert cancelled.returncode == 0, cancelled.stderr
        wait_until(lambda job_id=job_id: live_state(job_id) in ("CANCELLED", None), timeout=60, what="cancelled")
        assert not (project / "checkpoints" / "epoch_3.json").exists()  # cancelled in its pause after epoch 2

    here_id, here = started["here"]
    again = cli(tmp_path, "resume", here_id, "--from", "slurm-test", "--yes", "--json")
    assert again.returncode == 0, again.stderr
    answer = validated(again.stdout, "resume")["resume"]
    second = str(here / "checkpoints" / "epoch_2.json")
    assert answer["checkpoint"]["path"] == second and answer["checkpoint"]["layout"] == "template"
    assert answer["move"]["how"] == "none" and answer["submit"] == {
        "cluster": "slurm-test",
        "id": answer["submit"]["id"],
        "resume_from": second,
    }
    text = wait_done(root, answer["submit"]["id"], live_state)
    assert f"resuming from {second}" in text and "epoch 3: checkpoint saved" in text, text
    assert "epoch 1: checkpoint saved" not in text and (here / "checkpoints" / "epoch_3.json").exists()

    there_id, there = started["there"]
    moved = cli(
        tmp_path,
        "resume",
        there_id,
        "--from",
        "slurm-test",
        "--cluster",
        "slurm-site",
        "--partition",
        "batch",
        "--yes",
        "--json",
    )
    assert moved.returncode == 0, moved.stderr
    answer = validated(moved.stdout, "resume")["resume"]
    assert answer["checkpoint"]["path"] == str(there / "checkpoints" / "epoch_2.json")
    assert answer["move"]["how"] == "copy" and "share no storage" in answer["move"]["say"]
    copied = answer["submit"]["resume_from"]
    try:
        assert copied.endswith(f"/.yanflow/resume/slurm-test-{there_id}/epoch_2.json")  # under the site's home
        assert Path(copied).read_bytes() == (there / "checkpoints" / "epoch_2.json").read_bytes()
        assert answer["submit"]["cluster"] == "slurm-site"
        text = wait_done(root, answer["submit"]["id"], site_state)
        assert f"resuming from {copied}" in text and "epoch 3: checkpoint saved" in text, text
        assert "epoch 1: checkpoint saved" not in text
    finally:
        shutil.rmtree(Path(copied).parent, ignore_errors=True)


def test_resume_is_refused_read_only_and_says_when_no_checkpoint_is_found(root, tmp_path):
    refused = cli(tmp_path, "--read-only", "resume", "1", "--from", "slurm-test", "--cluster", "slurm-site", "--yes")
    assert refused.returncode == 1 and "read-only" in refused.stderr
    project = root / "empty"
    projects.write_project("torchrun-ddp", project)
    spec = write_spec(root, project)
    spec.write_text(spec.read_text().replace("--epochs 3", "--epochs 0"))
    sent = cli(tmp_path, "submit", str(spec), "--cluster", "slurm-test", "--json")
    assert sent.returncode == 0, sent.stderr
    job_id = json.loads(sent.stdout)["submit"]["id"]
    wait_done(root, job_id, live_state)
    none = cli(tmp_path, "resume", job_id, "--from", "slurm-test", "--yes")
    assert none.returncode == 1, none.stderr
    assert f"no checkpoint found for job {job_id} on slurm-test: looked in {project}" in none.stderr


async def test_upload_over_ssh_without_sftp_places_a_folder_checked_and_never_replaces(site_dir, tmp_path):
    from sitehelpers import site_cluster

    from yanflow_tui.backends.slurm.backend import SlurmBackend

    local = tmp_path / "ckpt"
    (local / "sub").mkdir(parents=True)
    (local / "model.pt").write_bytes(os.urandom(3 << 20))  # several chunks
    (local / "sub" / "empty").write_bytes(b"")
    target = f".yanflow/resume/test-{uuid.uuid4().hex[:8]}/ckpt"
    backend = SlurmBackend(site_cluster())
    try:
        path = await backend.upload(local, target)
        placed = Path(path)
        assert placed.is_absolute() and str(placed).endswith(target)
        assert read(placed / "model.pt") == read(local / "model.pt") and read(placed / "sub" / "empty") == b""
        assert not any("sftp" in argv[0] for argv in backend.transport.history)  # base64 on stdin, no SFTP
        with pytest.raises(Exception, match="exists; not replaced"):
            await backend.upload(local, target)
        assert [p.name for p in placed.parent.iterdir()] == ["ckpt"]  # no landing folder left behind
    finally:
        await backend.close()
        shutil.rmtree(Path.home() / Path(target).parent, ignore_errors=True)


def read(path: Path) -> bytes:
    return path.read_bytes()


BY_HAND = """#!/bin/sh
#SBATCH --time=00:03:00
echo "resuming from ${YANFLOW_RESUME_FROM:-nothing}"
[ -n "$YANFLOW_RESUME_FROM" ] && exit 0
mkdir -p checkpoints
echo '{"epoch": 1}' > checkpoints/epoch_1.json
echo '{"epoch": 2}' > checkpoints/epoch_2.json
sleep 300
"""


def shown(job_id: str) -> dict[str, str]:
    """``scontrol show job``'s name (the rest of its first line: it may hold spaces), partition, time limit,
    CPUs per task, memory, GRES and workdir."""
    text = slurm("scontrol", "show", "job", job_id)
    out = {"JobName": text.splitlines()[0].split(" JobName=", 1)[1]}
    for key in ("Partition", "TimeLimit", "CPUs/Task", "MinMemoryNode", "TresPerNode", "WorkDir", "NumNodes"):
        out[key] = text.split(f" {key}=", 1)[1].split()[0]
    return out


def test_a_job_sbatched_by_hand_resumes_as_slurm_holds_it_with_its_own_options(root, tmp_path):
    """Not submitted through the console (no spec kept): its script as Slurm kept it, sent again with the
    options it ran with (the command line's over the script's own: --time 4 over its 00:03:00), a hostile
    name kept as it is, and YANFLOW_RESUME_FROM exported."""
    name = f'{root.name} a "b" $(c)'
    first = (
        slurm(
            "sbatch",
            "--parsable",
            "-J",
            name,
            "-p",
            "gpu",
            "--time=4",
            "-D",
            str(root),
            "-c",
            "2",
            "--mem=300M",
            "--gres=gpu:1",
            "-o",
            str(root / "resume-%j.out"),
            input=BY_HAND,
        )
        .strip()
        .split(";")[0]
    )
    try:
        wait_until((root / "checkpoints" / "epoch_2.json").exists, timeout=120, what=f"job {first}'s checkpoints")
        slurm("scancel", first)
        wait_until(lambda: live_state(first) in ("CANCELLED", None), timeout=60, what="cancelled")
        again = cli(tmp_path, "resume", first, "--from", "slurm-test", "--yes", "--json")
        assert again.returncode == 0, again.stderr
        answer = validated(again.stdout, "resume")["resume"]
        second = str(root / "checkpoints" / "epoch_2.json")
        assert answer["checkpoint"]["path"] == second and answer["submit"]["resume_from"] == second
        new = answer["submit"]["id"]
        assert new != first
        text = wait_done(root, new, live_state)
        assert f"resuming from {second}" in text, text
        assert shown(new) == shown(first) and shown(new)["JobName"] == name and shown(new)["TimeLimit"] == "00:04:00"
    finally:
        slurm("scancel", first, check=False)
