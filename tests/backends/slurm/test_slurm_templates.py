"""Template projects on the real Slurm test cluster, through our sbatch rendering, under the stub
launchers (tests/launchstubs.py) and the projects' pure-Python loop: a 2-node torchrun job, one
horovodrun driver for 2 nodes, and the tensorflow launcher, whose TF_CONFIG each node builds in its
own shell (its own index; every node's host:port in the worker list, from the allocation). Each job
writes its TensorBoard event file and checkpoint in the project. The jobs run side by side."""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from dataclasses import replace

import pytest
from launchstubs import make_launchers
from slurmhelpers import JOBS, Jobs, live_state, slurm
from tbhelpers import loader_points
from waiting import wait_until

from yanflow_tui import projects
from yanflow_tui.backends.slurm.script import RANK_SUFFIX, render
from yanflow_tui.model import Resources
from yanflow_tui.spec import load_spec

CASES = ("torchrun-ddp", "horovod", "tensorflow")


@pytest.fixture(scope="module")
def template_jobs(slurm_dir):
    root = JOBS / f"templates-{uuid.uuid4().hex[:8]}"
    root.mkdir(parents=True)
    root.chmod(0o755)
    bin_dir = make_launchers(root / "bin")
    jobs = Jobs()
    submitted = {}
    try:
        for name in CASES:
            project = root / name
            spec = load_spec(projects.write_project(name, project))
            spec = replace(
                spec,
                image=None,  # the processes run on the node itself
                env={**spec.env, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "TMPDIR": str(root)},
                resources=Resources(nodes=2, gpus=2, cpus=1, memory_mb=512),
                sections={"slurm": {"partition": "gpu", "time": "00:02:00", "output": str(root / f"{name}-%j.out")}},
            )
            r = render(spec, f"test-{uuid.uuid4().hex[:6]}")
            job_id = slurm(*r.argv, input=r.script).strip().split(";")[0]
            submitted[name] = (jobs.add(job_id), project, root)
        yield submitted
    finally:
        jobs.cancel_all()
        shutil.rmtree(root, ignore_errors=True)


def output(root, name: str, job_id: str) -> str:
    """The job's output file, then each rank's own (``<StdOut>.rank<N>``)."""
    path = root / f"{name}-{job_id}.out"
    ranks = sorted(root.glob(f"{path.name}{RANK_SUFFIX}*"))
    return "".join(p.read_text() for p in [path, *ranks] if p.exists())


@pytest.mark.parametrize("name", CASES)
def test_a_template_project_runs_on_two_slurm_nodes(template_jobs, name):
    job_id, project, root = template_jobs[name]

    def done() -> bool:
        state = live_state(job_id)
        assert state not in ("FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"), (state, output(root, name, job_id))
        return state in ("COMPLETED", None)

    wait_until(done, timeout=240, what=f"job {job_id} ({name})")
    text = output(root, name, job_id)
    world = 2 if name == "tensorflow" else 4  # tensorflow: one worker per node
    ranks = sorted({int(m) for m in re.findall(r"(?:rank|worker) (\d+)/" + str(world), text)})
    assert ranks == list(range(world)), text
    assert len(loader_points(project / "tb")["loss"]) >= 10
    assert json.loads((project / "checkpoints" / "checkpoint.json").read_text())
    if name == "tensorflow":
        nodes = slurm("squeue", "-h", "-j", job_id, "-o", "%N", check=False).strip() or _nodes_of(job_id)
        hosts = slurm("scontrol", "show", "hostnames", nodes).split()
        workers = set(re.findall(r"worker \d+/2 of (\S+)", text))
        assert len(workers) == 1, text  # both nodes agree on the worker list
        listed = workers.pop().split(",")
        assert [w.rsplit(":", 1)[0] for w in listed] == hosts and len({w.rsplit(":", 1)[1] for w in listed}) == 1


def _nodes_of(job_id: str) -> str:
    line = slurm("scontrol", "-o", "show", "job", job_id, check=False)
    found = re.search(r"\bNodeList=(\S+)", line)
    if found:
        return found.group(1)
    acct = slurm("sacct", "-n", "-X", "-P", "-j", job_id, "-o", "NodeList", check=False).strip()
    return acct.splitlines()[0] if acct else ""
