"""Determined configs submitted as they are written, on the fake master: a const.yaml in the det
examples' shape, with its context folder, makes an experiment whose config is the file's (plus the one
label a lost answer is found by); a command config becomes a LaunchCommand; ``determined.config`` is
merged into the config the spec makes."""

from __future__ import annotations

import base64
import shutil

import pytest
import yaml
from jobhelpers import run_cli
from paths import SAMPLES

from yanflow_tui.backends.determined import submit as det_submit
from yanflow_tui.errors import SpecError
from yanflow_tui.nativefiles import load_job_file
from yanflow_tui.spec import spec_from_data

CONST = SAMPLES / "native" / "det-mnist" / "const.yaml"


def posts(master, path):
    return [r for r in master.requests if r.method == "POST" and r.path == path]


def without_tag(config: dict) -> dict:
    labels = [label for label in config.get("labels") or [] if not label.startswith(det_submit.TAG_LABEL)]
    out = {k: v for k, v in config.items() if k != "labels"}
    return {**out, "labels": labels} if labels else out


async def test_const_yaml_with_its_context_makes_an_experiment_whose_config_is_the_file_s(backend, master, tmp_path):
    folder = tmp_path / "mnist"
    shutil.copytree(CONST.parent, folder)
    (folder / "data.bin").write_bytes(b"\0" * 10)
    (folder / ".detignore").write_text("data.bin\n")
    written = yaml.safe_load((folder / "const.yaml").read_text())

    job_id = await backend.submit(load_job_file(folder / "const.yaml"))

    (sent,) = posts(master, "/api/v1/experiments")
    config = yaml.safe_load(sent.body["config"])
    assert without_tag(config) == written
    (tag,) = config["labels"]
    assert tag.startswith(det_submit.TAG_LABEL)  # the one thing added: how a lost answer is found
    files = {f["path"]: f for f in sent.body["modelDefinition"]}
    assert {"train.py", "const.yaml"} <= set(files) and "data.bin" not in files  # .detignore honoured
    assert base64.b64decode(files["train.py"]["content"]) == (folder / "train.py").read_bytes()
    assert job_id == "exp-101"
    stored = yaml.safe_load(await backend.raw_spec(job_id))  # what the master holds for that experiment
    assert without_tag(stored) == written


async def test_context_names_another_folder_to_upload(backend, master, tmp_path):
    shutil.copy(CONST, tmp_path / "const.yaml")
    code = tmp_path / "code"
    code.mkdir()
    (code / "model_def.py").write_text("X = 1\n")
    await backend.submit(load_job_file(tmp_path / "const.yaml", context=str(code)))
    (sent,) = posts(master, "/api/v1/experiments")
    assert [f["path"] for f in sent.body["modelDefinition"]] == ["model_def.py"]


async def test_a_command_config_becomes_a_launch_command_as_written(backend, master, tmp_path):
    path = tmp_path / "cmd.yaml"
    path.write_text(
        "description: gpu check\nentrypoint: [nvidia-smi, -L]\nresources: {slots: 1}\n"
        "environment: {image: determinedai/pytorch-ngc:0.38.1}\n"
    )
    spec = load_job_file(path)
    assert spec.kind.value == "single" and spec.resources.gpus == 1
    await backend.submit(spec)
    (sent,) = posts(master, "/api/v1/commands")
    config = sent.body["config"]
    assert config["entrypoint"] == ["nvidia-smi", "-L"] and config["resources"] == {"slots": 1}
    assert config["environment"] == {"image": "determinedai/pytorch-ngc:0.38.1"}
    assert config["description"].startswith("gpu check #yf-")


def test_cli_dry_run_shows_the_file_and_its_folder_and_context_is_only_for_det_configs(master, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(f"clusters:\n  - name: det\n    kind: determined\n    master: {master.url}\n")
    result = run_cli("submit", "--dry-run", str(CONST), "--config", str(config))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("# Determined experiment config (CreateExperiment), as written in ")
    assert lines[1] == f"# model definition: {CONST.parent} (uploaded at submit; .detignore honoured)"
    assert yaml.safe_load(result.stdout) == yaml.safe_load(CONST.read_text())
    assert [r for r in master.requests if r.method not in ("GET", "HEAD")] == []
    other = run_cli("submit", "--dry-run", str(SAMPLES / "det-command.yaml"), "--context", ".", "--config", str(config))
    assert other.returncode == 1 and "--context is for Determined configs" in other.stderr


def test_determined_config_is_merged_into_the_experiment_config():
    spec = spec_from_data(
        {
            "name": "x",
            "kind": "experiment",
            "command": "python3 train.py",
            "resources": {"gpus": 2},
            "determined": {
                "searcher": {"name": "single", "metric": "loss"},
                "config": {"searcher": {"max_length": {"epochs": 2}}, "profiling": {"enabled": True}},
            },
        }
    )
    config = det_submit.experiment_config(spec)
    assert config["searcher"] == {"name": "single", "metric": "loss", "max_length": {"epochs": 2}}
    assert config["profiling"] == {"enabled": True} and config["resources"] == {"slots_per_trial": 2}
    assert "profiling:\n  enabled: true" in det_submit.render(spec)  # visible in the preview


def test_a_missing_context_folder_is_named(tmp_path):
    shutil.copy(CONST, tmp_path / "const.yaml")
    with pytest.raises(SpecError, match="--context: .*nowhere is not a folder"):
        load_job_file(tmp_path / "const.yaml", context=str(tmp_path / "nowhere"))
