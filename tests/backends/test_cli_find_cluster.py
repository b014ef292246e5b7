"""``logs`` and ``cancel`` without ``--cluster``: the job's cluster is found by its id, clusters whose
id grammar the id does not fit are never asked, and an id that is not known to be unique is refused."""

from __future__ import annotations

import json
import time

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
