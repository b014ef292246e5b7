"""Submitting to the fake Determined master: the two samples produce the right LaunchCommand and
CreateExperiment bodies (asserted on what the master received), the context honours .detignore and
the size limit, launchers map to determined.launch, a lost answer never makes a second job, and the
CLI's --dry-run prints the config."""

from __future__ import annotations

import base64
import shutil
import textwrap

import pytest
import yaml
from jobhelpers import run_cli
from paths import SAMPLES

from yanflow_tui.backends.determined import submit as det_submit
from yanflow_tui.errors import BackendError
from yanflow_tui.model import JobState
from yanflow_tui.spec import load_spec, spec_from_data


def posts(master, path):
    return [r for r in master.requests if r.method == "POST" and r.path == path]


async def test_command_sample_becomes_a_launch_command(backend, master):
    job_id = await backend.submit(load_spec(SAMPLES.parent / "tests" / "data" / "det" / "command-site.yaml"))
    (sent,) = posts(master, "/api/v1/commands")
    config = sent.body["config"]
    assert config["entrypoint"][:2] == ["/bin/sh", "-c"]
    assert config["entrypoint"][2].startswith("nvidia-smi && python3 -c")
    assert config["resources"] == {"slots": 1, "resource_pool": "default"}
    assert config["environment"] == {
        "image": "determinedai/pytorch-ngc:0.38.1",
        "environment_variables": ["PYTHONUNBUFFERED=1"],
    }
    assert config["bind_mounts"] == [{"host_path": "/mnt/datasets", "container_path": "/data", "read_only": True}]
    assert config["description"].startswith("det-nvidia-smi #yf-")
    assert job_id.startswith("cmd-") and len(job_id) == 12
    jobs = {j.id: j for j in await backend.list_jobs()}
    assert jobs[job_id].name == "det-nvidia-smi" and jobs[job_id].state is JobState.PENDING


async def test_hpsearch_sample_becomes_an_experiment_with_its_context(backend, master, tmp_path):
    shutil.copy(SAMPLES / "det-hpsearch.yaml", tmp_path)
    context = tmp_path / "det-hpsearch"
    shutil.copytree(SAMPLES / "det-hpsearch", context)
    (context / "data").mkdir()
    (context / "data" / "train.bin").write_bytes(b"\0" * 1000)
    (context / "weights.pt").write_bytes(b"\1" * 100)
    (context / "lib").mkdir()
    (context / "lib" / "util.py").write_text("X = 1\n")
    spec = load_spec(tmp_path / "det-hpsearch.yaml")

    job_id = await backend.submit(spec)

    (sent,) = posts(master, "/api/v1/experiments")
    config = yaml.safe_load(sent.body["config"])
    assert config["searcher"] == {
        "name": "random",
        "metric": "validation_loss",
        "smaller_is_better": True,
        "max_trials": 8,
    }
    assert config["hyperparameters"]["lr"] == {"type": "log", "base": 10, "minval": -4, "maxval": -1}
    assert config["hyperparameters"]["epochs"] == 3
    assert config["resources"] == {"slots_per_trial": 2, "resource_pool": "default"}
    assert config["entrypoint"] == "python3 -m determined.launch.torch_distributed python3 train.py"
    assert config["max_restarts"] == 1
    assert config["labels"][0] == "yanflow-sample" and config["labels"][1].startswith("yanflow:")
    files = {f["path"]: f for f in sent.body["modelDefinition"]}
    assert {"train.py", "lib", "lib/util.py"} <= set(files)
    assert not any(p.startswith("data") or p.endswith(".pt") or p == ".detignore" for p in files), files
    assert base64.b64decode(files["train.py"]["content"]) == (context / "train.py").read_bytes()
    assert sent.body["activate"] is True
    assert job_id == "exp-101"
    jobs = {j.id: j for j in await backend.list_jobs()}
    assert jobs["exp-101"].name == "mlp-hpsearch" and jobs["trial-1010"].parent == "exp-101"


def _experiment(launcher: str, command="python3 train.py --epochs 3", **det):
    return spec_from_data(
        {
            "name": "x",
            "kind": "experiment",
            "command": command,
            "launcher": launcher,
            "resources": {"nodes": 2, "gpus": 4},
            "determined": {"searcher": {"name": "single", "metric": "loss"}, **det},
        }
    )


def test_launchers_map_to_determined_launch_modules():
    assert (
        det_submit.experiment_config(_experiment("deepspeed"))["entrypoint"]
        == "python3 -m determined.launch.deepspeed python3 train.py --epochs 3"
    )
    assert det_submit.experiment_config(_experiment("none"))["entrypoint"] == "python3 train.py --epochs 3"
    argv = _experiment("torchrun", command=["python3", "train.py", "--name", "a b; rm -rf /"])
    assert det_submit.experiment_config(argv)["entrypoint"] == [
        "python3",
        "-m",
        "determined.launch.torch_distributed",
        "python3",
        "train.py",
        "--name",
        "a b; rm -rf /",
    ]
    assert (
        det_submit.experiment_config(_experiment("none", entrypoint="model_def:Trial"))["entrypoint"]
        == "model_def:Trial"
    )
    assert det_submit.experiment_config(_experiment("none"))["resources"]["slots_per_trial"] == 8


async def test_spec_problems_are_refused_before_any_request(backend, master):
    no_searcher = spec_from_data({"name": "x", "kind": "experiment", "command": "python3 t.py"})
    with pytest.raises(BackendError, match="determined.searcher"):
        await backend.submit(no_searcher)
    with pytest.raises(BackendError, match="accelerate"):
        await backend.submit(_experiment("accelerate"))
    with pytest.raises(BackendError, match="cannot run slurm"):
        await backend.submit(spec_from_data({"name": "x", "kind": "slurm", "command": "true"}))
    assert master.requests == []


async def test_context_over_the_limit_is_refused_with_a_clear_error(backend, master, tmp_path, monkeypatch):
    (tmp_path / "ctx").mkdir()
    (tmp_path / "ctx" / "big.bin").write_bytes(b"\0" * 4000)
    spec_file = tmp_path / "exp.yaml"
    spec_file.write_text(
        textwrap.dedent("""\
        name: big
        kind: experiment
        command: python3 train.py
        determined: {context: ctx, searcher: {name: single, metric: loss}}
    """)
    )
    monkeypatch.setattr(det_submit, "CONTEXT_LIMIT", 1000)
    with pytest.raises(BackendError, match=r"more than the master accepts .*\.detignore"):
        await backend.submit(load_spec(spec_file))
    assert not master.mutations()
    assert det_submit.CONTEXT_LIMIT == 1000 and 95 * 2**20 == det_submit.constants.MAX_CONTEXT_SIZE


async def test_a_lost_answer_is_looked_up_not_resent(backend, master):
    master.lose_next_answer = "/api/v1/experiments"  # created, then the connection drops unanswered
    job_id = await backend.submit(_experiment("none"))
    assert len(posts(master, "/api/v1/experiments")) == 1
    assert len(master.experiments) == 3 and job_id == "exp-101"
    lookup = [r for r in master.requests if r.method == "GET" and r.path == "/api/v1/experiments"][-1]
    assert lookup.query["labels"][0].startswith("yanflow:")


async def test_a_lost_command_answer_is_looked_up_not_resent(backend, master):
    master.lose_next_answer = "/api/v1/commands"
    job_id = await backend.submit(spec_from_data({"name": "c", "kind": "single", "command": ["echo", "hi"]}))
    assert len(posts(master, "/api/v1/commands")) == 1 and len(master.commands) == 3
    assert job_id in {j.id for j in await backend.list_jobs()}


async def test_a_refused_submit_is_not_retried(backend, master):
    master.refuse_next = "/api/v1/commands"
    with pytest.raises(BackendError, match="submit refused"):
        await backend.submit(spec_from_data({"name": "c", "kind": "single", "command": "true"}))
    assert len(posts(master, "/api/v1/commands")) == 1 and len(master.commands) == 2


def test_cli_dry_run_prints_the_experiment_config(master, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(f"clusters:\n  - name: det\n    kind: determined\n    master: {master.url}\n")
    result = run_cli("submit", "--dry-run", str(SAMPLES / "det-hpsearch.yaml"), "--config", str(config))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("# Determined experiment config")
    data = yaml.safe_load(result.stdout)
    assert data["searcher"]["name"] == "random" and data["resources"]["slots_per_trial"] == 2
    assert data["entrypoint"].startswith("python3 -m determined.launch.torch_distributed")
    # A dry run reads the cluster only (for its capacity verdict, on stderr): it never writes.
    assert [r for r in master.requests if r.method not in ("GET", "HEAD")] == []


def test_cli_lists_jobs_with_an_env_token(master, tmp_path):
    from dethelpers import seed

    seed(master)
    config = tmp_path / "config.yaml"
    config.write_text(f"clusters:\n  - name: det\n    kind: determined\n    master: {master.url}\n")
    import os

    env = dict(os.environ, DET_USER="alice", DET_USER_TOKEN=master.token_for("alice"))
    result = run_cli("jobs", "--json", "--config", str(config), env=env)
    assert result.returncode == 0, result.stderr
    import json

    ids = {j["id"] for j in json.loads(result.stdout)["jobs"]}
    assert {"exp-12", "trial-120", "trial-121", "trial-122"} <= ids and "exp-13" not in ids


async def test_an_unreachable_master_fails_the_submit_at_once(home):
    from yanflow_tui.backends.determined.backend import DeterminedBackend
    from yanflow_tui.config import ClusterConfig

    det = DeterminedBackend(
        ClusterConfig("det", "determined", options={"master": "http://127.0.0.1:9"}),
        env={"DET_USER": "alice", "DET_USER_TOKEN": "t"},
        retries=0,
    )
    with pytest.raises(BackendError, match="submit failed: cannot reach the master at http://127.0.0.1:9"):
        await det.submit(spec_from_data({"name": "c", "kind": "single", "command": "true"}))


async def test_a_lost_answer_that_cannot_be_looked_up_is_unknown_and_a_retry_with_its_tag_sends_once(backend, master):
    from yanflow_tui.errors import SubmitUnknown

    spec = spec_from_data({"name": "c", "kind": "single", "command": "true"})
    await backend.list_jobs()  # logged in
    master.fail_503 = 1000  # the POST and every lookup: the master answers nothing useful
    with pytest.raises(SubmitUnknown) as caught:
        await backend.submit(spec)
    assert "refused" not in str(caught.value) and caught.value.tag in str(caught.value)
    master.fail_503 = 0
    before = len(master.commands)
    job_id = await backend.submit(spec, tag=caught.value.tag)  # looks first: none holds it, so it sends once
    assert len(master.commands) == before + 1
    assert await backend.submit(spec, tag=caught.value.tag) == job_id  # again: found, nothing sent
    assert len(master.commands) == before + 1
    assert any(c.description.endswith(f"#yf-{caught.value.tag}") for c in master.commands.values())
