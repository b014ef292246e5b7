"""``logs`` and ``cancel`` without ``--cluster``: the job's cluster is found by its id, clusters whose
id grammar the id does not fit are never asked, and an id that is not known to be unique is refused."""

from __future__ import annotations

import json
import time
from pathlib import Path

import slurmhelpers
from jobhelpers import cleanup_state_dir, run_cli
from k8shelpers import write_kubeconfig
from waiting import wait_until

from yanflow_tui import locations


def _config(tmp_path, text: str):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return str(path)


def _submit_local(tmp_path, config: str, command: str) -> str:
    spec = tmp_path / "job.yaml"
    spec.write_text(json.dumps({"name": "find-me", "command": command}))
    result = run_cli("--config", config, "submit", str(spec), "--cluster", "here")
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_logs_skip_clusters_whose_ids_differ_without_asking_them(home, fake_nvml, tmp_path):
    """A Kubernetes cluster whose API is dead: a local id (``7``) is not of its form
    (``namespace/name``), so it is never asked, and the logs come from the local cluster."""
    state = locations.state_dir()
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:9")  # nothing listens there
    config = _config(
        tmp_path,
        f"clusters:\n  - {{name: here, kind: local}}\n  - {{name: k8s, kind: kubernetes, kubeconfig: {kubeconfig}}}\n",
    )
    try:
        job_id = _submit_local(tmp_path, config, "echo found")
        started = time.monotonic()
        wait_until(lambda: run_cli("--config", config, "logs", job_id).stdout == "found\n", what="the local log")
        assert time.monotonic() - started < 20
        result = run_cli("--config", config, "logs", "ns/missing")  # only the Kubernetes form: asked, and it is dead
        assert result.returncode != 0 and "API server unreachable" in result.stderr, result.stderr
        no_form = run_cli("--config", config, "cancel", "exp-1")
        assert no_form.stderr.strip() == (
            "yanflow-tui: error: no configured cluster has job ids like 'exp-1' (here, k8s)"
        )
    finally:
        cleanup_state_dir(state)


def test_an_id_not_checked_everywhere_is_refused(home, fake_nvml, tmp_path):
    """A Slurm cluster that cannot be reached might hold the same id: no guess, --cluster is asked for."""
    state = locations.state_dir()
    config = _config(
        tmp_path,
        "clusters:\n  - {name: here, kind: local}\n"
        "  - {name: far, kind: slurm, ssh: {host: 127.0.0.1, port: 9, user: nobody}}\n",
    )
    try:
        job_id = _submit_local(tmp_path, config, "sleep 60")
        result = run_cli("--config", config, "cancel", job_id)
        assert result.returncode != 0, result.stderr
        line = result.stderr.strip()
        assert line.startswith(
            f"yanflow-tui: error: job {job_id!r} is on 'here', but these clusters could not be checked (far: "
        ), line
        assert line.endswith("; pass --cluster NAME") and "\n" not in line
        done = run_cli("--config", config, "cancel", job_id, "--cluster", "here")
        assert done.returncode == 0, done.stderr
    finally:
        cleanup_state_dir(state)


def test_cancel_finds_a_slurm_job_beside_the_local_machine(home, fake_nvml, tmp_path):
    """The real Slurm cluster (local commands) beside this machine: both take numeric ids, the job is
    on Slurm only, so ``cancel ID`` cancels it there with no --cluster."""
    slurmhelpers.require_cluster()
    state = locations.state_dir()
    config = _config(tmp_path, "clusters:\n  - {name: here, kind: local}\n  - {name: hpc, kind: slurm}\n")
    job_id = (
        slurmhelpers.slurm(
            "sbatch", "--parsable", "-J", "yanflow-find-cluster", "-p", "cpu", "-o", "/dev/null", "--wrap", "sleep 300"
        )
        .strip()
        .split(";")[0]
    )
    try:
        env = slurmhelpers.env()
        result = run_cli("--config", config, "cancel", job_id, env=env)
        assert result.returncode == 0, result.stderr
        assert f"cancelled job {job_id} on hpc" in result.stderr
        wait_until(lambda: slurmhelpers.live_state(job_id) in (None, "CANCELLED"), what="cancelled")
    finally:
        slurmhelpers.slurm("scancel", job_id, check=False)
        cleanup_state_dir(state)


SAMPLES = Path(__file__).resolve().parents[2] / "sample_jobs"


def test_a_sample_lands_on_the_kind_of_cluster_it_was_written_for(home, fake_nvml, tmp_path, kubeconfig, emulator):
    """This machine, the real Slurm cluster and Kubernetes configured: a Kubernetes sample goes to
    Kubernetes (its ``kubernetes:`` section), not to the first scheduler (Slurm)."""
    slurmhelpers.require_cluster()
    state = locations.state_dir()
    config = _config(
        tmp_path,
        "clusters:\n  - {name: here, kind: local}\n  - {name: hpc, kind: slurm}\n"
        f"  - {{name: k8s, kind: kubernetes, kubeconfig: {kubeconfig}}}\n",
    )
    env = slurmhelpers.env()
    try:
        for sample in ("k8s-single.yaml", "k8s-torchrun.yaml"):
            result = run_cli("--config", config, "submit", str(SAMPLES / sample), "--force", env=env)
            assert result.returncode == 0, result.stderr
            job_id = result.stdout.strip()
            assert job_id.startswith("ml/"), (sample, job_id)  # a Kubernetes id (namespace/name), not Slurm's number
        slurm = run_cli("--config", config, "submit", str(SAMPLES / "slurm-batch.yaml"), "--dry-run", env=env)
        assert slurm.returncode == 0 and "#SBATCH" in slurm.stdout, slurm.stderr
    finally:
        cleanup_state_dir(state)


def test_a_sample_for_a_kind_configured_never_or_twice_is_refused_with_a_clear_line(
    home, fake_nvml, tmp_path, kubeconfig
):
    sample = str(SAMPLES / "k8s-single.yaml")
    none = _config(tmp_path, "clusters:\n  - {name: here, kind: local}\n")
    result = run_cli("--config", none, "submit", sample)
    assert result.returncode == 1
    assert result.stderr == (
        "yanflow-tui: error: the spec is written for a kubernetes cluster (its kubernetes: section) and none "
        "is configured; pass --cluster\n"
    )
    two = _config(
        tmp_path,
        f"clusters:\n  - {{name: a, kind: kubernetes, kubeconfig: {kubeconfig}}}\n"
        f"  - {{name: b, kind: kubernetes, kubeconfig: {kubeconfig}}}\n",
    )
    result = run_cli("--config", two, "submit", sample, "--dry-run")
    assert result.returncode == 1
    assert "several are configured (a, b); pass --cluster" in result.stderr and result.stderr.count("\n") == 1


def test_a_sample_with_no_section_for_its_kind_says_cluster_in_its_first_line():
    for path in sorted(SAMPLES.glob("*.yaml")):
        text = path.read_text()
        kinds = [k for k in ("slurm", "kubernetes", "determined") if f"\n{k}:" in text]
        first = [line for line in text.splitlines() if not line.startswith("# yaml-language-server:")][0]
        assert kinds or "--cluster" in first, path.name
