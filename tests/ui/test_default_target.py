"""Off the login node: where a spec without ``cluster:`` goes, and where the Submit form starts.
A scheduler (configured or discovered) comes first; the local machine found by discovery on a Slurm
login node is shown for monitoring only and takes jobs only when the config names it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from fakes.backend import FakeBackend
from jobhelpers import run_cli
from slurmhelpers import CONF
from textual.widgets import Select
from uihelpers import make_app
from waiting import wait_for

from yanflow_tui.config import ClusterConfig, Config, load_config, parse_config
from yanflow_tui.errors import BackendError
from yanflow_tui.hub import Hub
from yanflow_tui.model import JobKind
from yanflow_tui.screens.submit.screen import SubmitScreen
from yanflow_tui.spec import parse_spec

SPEC = {"name": "train", "kind": "single", "command": "python train.py"}  # no cluster:


def squeue_dir(tmp_path: Path) -> Path:
    """A PATH entry with a stand-in squeue: discovery only looks for it."""
    bin_dir = tmp_path / "slurmbin"
    bin_dir.mkdir()
    (bin_dir / "squeue").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "squeue").chmod(0o755)
    return bin_dir


def discovered(tmp_path: Path, monkeypatch) -> Config:
    monkeypatch.setenv("YANFLOW_DISCOVER", "local,slurm")
    monkeypatch.setenv("PATH", os.pathsep.join([str(squeue_dir(tmp_path)), os.environ["PATH"]]))
    return load_config()


def test_on_a_slurm_login_node_a_spec_without_cluster_goes_to_slurm_and_local_takes_no_jobs(
    home, tmp_path, monkeypatch
):
    config = discovered(tmp_path, monkeypatch)
    assert [c.kind for c in config.clusters] == ["local", "slurm"]
    hub = Hub(config)
    assert hub.cluster_for_submit(None, None, JobKind.SINGLE) == "slurm"
    local = hub.backend("local")
    assert not local.capabilities.submit and not local.capabilities.job_kinds
    assert local.capabilities.cancel  # its own jobs, started before, can still be ended
    spec = parse_spec(json.dumps(SPEC), "job.yaml")
    with pytest.raises(
        BackendError, match="shown for monitoring only; to run jobs on it, name it in the config with kind: local"
    ):
        local.check_spec(spec)


def test_an_explicit_kind_local_takes_jobs_but_the_scheduler_stays_the_default(home, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", os.pathsep.join([str(squeue_dir(tmp_path)), os.environ["PATH"]]))
    config = parse_config("clusters:\n  - {name: box, kind: local}\n  - {name: hpc, kind: slurm}\n", "c.yaml")
    hub = Hub(config)
    assert hub.backend("box").capabilities.submit and JobKind.SINGLE in hub.backend("box").capabilities.job_kinds
    assert hub.cluster_for_submit(None, None, JobKind.SINGLE) == "hpc"
    assert hub.cluster_for_submit(None, "box", JobKind.SINGLE) == "box"  # named: it goes there
    only_local = Hub(parse_config("clusters:\n  - {name: box, kind: local}\n", "c.yaml"))
    assert only_local.cluster_for_submit(None, None, JobKind.SINGLE) == "box"


def test_a_read_only_scheduler_is_passed_over_for_a_writable_one(home, fake_backend):
    config = Config(
        (ClusterConfig("box", "local"), ClusterConfig("ro", "fake", read_only=True), ClusterConfig("hpc", "fake"))
    )
    assert Hub(config).cluster_for_submit(None, None, JobKind.SINGLE) == "hpc"


def test_cli_submit_without_cluster_on_a_real_slurm_login_node_renders_sbatch(home, tmp_path, monkeypatch):
    """With the real squeue on PATH and no config, the spec goes to Slurm, not this machine."""
    assert shutil.which("squeue") and CONF.is_file(), "the Slurm test cluster's commands are needed"
    monkeypatch.setenv("YANFLOW_DISCOVER", "local,slurm")
    monkeypatch.setenv("SLURM_CONF", str(CONF))
    path = tmp_path / "job.yaml"
    path.write_text(json.dumps(SPEC))
    result = run_cli("submit", "--dry-run", str(path))
    assert result.returncode == 0, result.stderr
    assert "#SBATCH --job-name=train" in result.stdout and "local job on" not in result.stdout
    refused = run_cli("submit", "--cluster", "local", str(path))
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        "yanflow-tui: error: cluster 'local' is this login node, shown for monitoring only; to run jobs on it, "
        "name it in the config with kind: local"
    ]


async def test_the_submit_form_starts_on_the_scheduler(home, fake_nvml, fake_backend):
    app = make_app(ClusterConfig("box", "local"), ClusterConfig("hpc", "fake"))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("3")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, SubmitScreen) and app.screen, what="submit")
        assert screen.query_one("#cluster", Select).value == "hpc"


async def test_the_submit_form_on_a_login_node_does_not_offer_it(
    home, fake_nvml, tmp_path, monkeypatch, register_backend
):
    register_backend(FakeBackend, "slurm")  # no Slurm traffic: only the form is looked at
    config = discovered(tmp_path, monkeypatch)
    app = make_app(*config.clusters)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("3")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, SubmitScreen) and app.screen, what="submit")
        assert screen.query_one("#cluster", Select).value == "slurm"
        assert screen._writable() == ["slurm"]  # the login node is not among the form's clusters
