"""The MMDetection template on the real Slurm test clusters, through our sbatch rendering, under the
stub torchrun (tests/launchstubs.py) and the project's pure-Python loop: a 2-node job writes mmengine's
work dir (read by ``mmengine_dirs``); a second job resumes from its second checkpoint through
``YANFLOW_RESUME_FROM`` on the second cluster (the site profile, same file system), and its log says
the path it resumed from. Jobs are named ``notice-*`` and cancelled at teardown."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import uuid
from dataclasses import replace

import pytest
from launchstubs import make_launchers
from sitehelpers import SITE_CONF, site_slurm
from slurmhelpers import JOBS, Jobs, live_state, slurm
from waiting import wait_until

from yanflow_tui import mmengine_dirs, projects
from yanflow_tui.backends.slurm.script import RANK_SUFFIX, render
from yanflow_tui.model import Resources
from yanflow_tui.spec import load_spec

WORK_DIR = "work_dirs/retinanet_r18_fpn_coco"


@pytest.fixture
def project(slurm_dir):
    root = JOBS / f"notice-mmdet-{uuid.uuid4().hex[:8]}"
    root.mkdir(parents=True)
    root.chmod(0o755)
    make_launchers(root / "bin")
    projects.write_project("mmdet", root / "project")
    yield root
    shutil.rmtree(root, ignore_errors=True)


def submit(root, run, env=None, partition="gpu") -> str:
    spec = load_spec(root / "project" / "job.yaml")
    spec = replace(
        spec,
        name="notice-mmdet",
        image=None,
        env={**spec.env, **(env or {}), "PATH": f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}", "TMPDIR": str(root)},
        resources=Resources(nodes=2, gpus=2, cpus=1, memory_mb=512),
        sections={"slurm": {"partition": partition, "time": "00:02:00", "output": str(root / "mmdet-%j.out")}},
    )
    r = render(spec, f"test-{uuid.uuid4().hex[:6]}")
    return run(*r.argv, input=r.script).strip().split(";")[0]


def site_submit(*argv: str, input: str) -> str:
    """``sbatch`` on the second cluster, the script on stdin."""
    env = dict(os.environ, SLURM_CONF=str(SITE_CONF))
    return subprocess.run(
        list(argv), input=input, capture_output=True, text=True, timeout=60, env=env, check=True
    ).stdout


def output(root, job_id: str) -> str:
    path = root / f"mmdet-{job_id}.out"
    return "".join(p.read_text() for p in [path, *sorted(root.glob(f"{path.name}{RANK_SUFFIX}*"))] if p.exists())


def wait_done(root, job_id, state_of) -> str:
    def done() -> bool:
        state = state_of(job_id)
        assert state not in ("FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"), (state, output(root, job_id))
        return state in ("COMPLETED", None)

    wait_until(done, timeout=240, what=f"job {job_id}")
    return output(root, job_id)


def site_state(job_id: str) -> str | None:
    out = site_slurm("squeue", "-h", "-t", "all", "-j", job_id, "-o", "%T", check=False).strip()
    return out or None


def test_mmdet_on_two_slurm_nodes_then_resumed_on_the_second_cluster(project, site_dir):
    jobs, site_jobs = Jobs(), []
    try:
        job_id = jobs.add(submit(project, slurm))
        text = wait_done(project, job_id, live_state)
        assert sorted({int(m) for m in re.findall(r"rank (\d+)/4 node \d launcher pytorch", text)}) == [0, 1, 2, 3], (
            text
        )
        work = project / "project" / WORK_DIR
        points, saved = mmengine_dirs.read_work_dir(str(work))
        assert [c.number for c in saved] == [1, 2, 3] and saved[-1].last
        assert len([p for p in points if p.name == "loss"]) == 30
        second = str(work / "epoch_2.pth")
        resumed = submit(project, site_submit, {"YANFLOW_RESUME_FROM": second}, partition="batch")
        site_jobs.append(resumed)
        text = wait_done(project, resumed, site_state)
        assert f"resuming from {second}" in text and "Epoch(train) [3]" in text and "Epoch(train) [1]" not in text
    finally:
        jobs.cancel_all()
        if site_jobs:
            site_slurm("scancel", *site_jobs, check=False)
