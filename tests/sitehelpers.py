"""The second loopback Slurm cluster, ``YANFLOW_SLURM_PROFILE=site scripts/slurm-cluster up``: unlike
the test cluster in every name (nodes ``hx-n[1-3]`` with 4 h100 each and ``hx-c1``, partitions
``batch`` and ``serial``), with accounting (slurmdbd on a real MariaDB, job scripts stored) and jobs
purged from slurmctld 5 s after they end. Tests FAIL (never skip) when it is missing."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from yanflow_tui.config import ClusterConfig, load_config

ROOT = Path(__file__).resolve().parent.parent
SITE = Path(os.environ.get("YANFLOW_SLURM_SITE_DIR", "/tmp/yanflow-slurm-site"))
SITE_CONF = SITE / "etc" / "slurm.conf"
SITE_JOBS = SITE / "jobs"
SITE_CONFIG = SITE / "yanflow.yaml"
MISSING = (
    "the site Slurm cluster is not running: run YANFLOW_SLURM_PROFILE=site scripts/slurm-cluster up (it needs root)"
)


def require_site() -> None:
    status = subprocess.run(
        [str(ROOT / "scripts" / "slurm-cluster"), "status"],
        capture_output=True,
        text=True,
        env=dict(os.environ, YANFLOW_SLURM_PROFILE="site", YANFLOW_SLURM_DIR=str(SITE)),
    )
    if not SITE_CONFIG.is_file() or status.returncode != 0:
        pytest.fail(f"{MISSING}\n{status.stdout}{status.stderr}", pytrace=False)


def site_slurm(*argv: str, check: bool = True) -> str:
    """A Slurm command run directly against the site cluster (the ground truth), from its jobs folder (a job
    sbatch'ed without ``-o`` writes its output there, not into the checkout)."""
    result = subprocess.run(
        list(argv),
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, SLURM_CONF=str(SITE_CONF)),
        cwd=SITE_JOBS if SITE_JOBS.is_dir() else None,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"{argv[0]} failed: {result.stderr.strip()}")
    return result.stdout


def site_sbatch(jobs: list[str], *options: str) -> str:
    """``sbatch --parsable`` on the site cluster, run in SITE_JOBS; the id is kept in ``jobs`` (the
    ``site_jobs`` fixture, which cancels them after the test) and returned."""
    out = site_slurm("sbatch", "--parsable", f"--chdir={SITE_JOBS}", *options)
    job_id = out.strip().split(";")[0]
    jobs.append(job_id)
    return job_id


def site_cluster() -> ClusterConfig:
    return load_config(str(SITE_CONFIG)).clusters[0]


def known_to_slurmctld(job_id: str) -> bool:
    """Whether slurmctld still holds the job (it forgets it MinJobAge after it ends)."""
    out = site_slurm("squeue", "-h", "-t", "all", "-j", job_id, "-o", "%i", check=False)
    return bool(out.strip())


def accounted(job_id: str) -> dict | None:
    jobs = json.loads(site_slurm("sacct", "--json", "-j", job_id))["jobs"]
    return jobs[0] if jobs else None


@pytest.fixture(scope="session")
def site_dir() -> Path:
    require_site()
    SITE_JOBS.mkdir(exist_ok=True)
    return SITE


@pytest.fixture
def site_jobs(site_dir):
    ids: list[str] = []
    yield ids
    if ids:
        site_slurm("scancel", *ids, check=False)
