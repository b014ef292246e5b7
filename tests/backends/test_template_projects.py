"""Template projects (``yanflow-tui init``): each one's spec renders on every backend that runs its kind
(the backends' own ``render``, as ``submit --dry-run`` and the form's preview use it); each runs under
the stub launchers (tests/launchstubs.py) with the ranks its launcher gives, from the command the
backend renders (the Kubernetes pod script per completion index; horovodrun's single driver), and
writes its TensorBoard event file and a checkpoint; ``init`` refuses a folder that is not empty."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from k8shelpers import pod_env
from launchstubs import make_launchers
from tbhelpers import loader_points

from yanflow_tui import cli, launchers, projects
from yanflow_tui.backends import registry
from yanflow_tui.backends.determined import submit as det_submit
from yanflow_tui.backends.kubernetes import manifests as k8s_manifests
from yanflow_tui.errors import BackendError
from yanflow_tui.model import ClusterConfig
from yanflow_tui.spec import load_spec

# Template -> the backends that run it (every other one that takes its kind must refuse it).
RUNS_ON = {
    "torchrun-ddp": {"slurm", "kubernetes"},
    "deepspeed": {"slurm", "kubernetes"},
    "accelerate": {"slurm", "kubernetes"},
    "horovod": {"slurm"},  # Kubernetes: needs the MPI Operator
    "tensorflow": {"slurm", "kubernetes"},
    "det-trial": {"determined"},
    "mmdet": {"slurm", "kubernetes"},  # its runs: test_mmdet_template.py
}
CLUSTERS = {
    "local": {},
    "slurm": {"container": {"runtime": "apptainer"}},  # a site that runs images (one without refuses image:)
    "kubernetes": {"namespace": "ml"},
    "determined": {"master": "http://127.0.0.1:1"},
}
LAUNCHER_WORDS = {"torchrun": "torchrun", "deepspeed": "deepspeed", "accelerate": "accelerate launch"}


def test_every_template_project_is_shipped():
    assert set(projects.project_names()) == set(RUNS_ON)


@pytest.mark.parametrize("name", sorted(RUNS_ON))
def test_each_template_spec_renders_on_every_backend_that_runs_its_kind(tmp_path, name):
    spec = load_spec(projects.write_project(name, tmp_path / name))
    rendered, refused = {}, {}
    for kind in registry.kinds():
        backend = registry.create(ClusterConfig(kind, kind, options=CLUSTERS.get(kind, {})))
        if spec.kind not in backend.capabilities.job_kinds:
            continue
        try:
            rendered[kind] = backend.render(spec)
        except BackendError as exc:
            refused[kind] = str(exc)
    assert set(rendered) == RUNS_ON[name], refused
    if spec.launcher in LAUNCHER_WORDS and spec.kind.value == "multi-node":
        assert all(LAUNCHER_WORDS[spec.launcher] in text for text in rendered.values())
    if "slurm" in rendered:
        assert f"--chdir={tmp_path / name}" in rendered["slurm"] or str(tmp_path / name) in rendered["slurm"]
    if name == "horovod":
        assert "MPI Operator" in refused["kubernetes"]
        assert "horovodrun" in rendered["slurm"] and "HOSTS=" in rendered["slurm"]
    if name == "tensorflow":
        assert "TF_WORKERS=" in rendered["slurm"] and "TF_CONFIG" in rendered["slurm"]
        assert "TF_WORKERS" in rendered["kubernetes"]
    if name == "det-trial":
        assert "determined.launch.torch_distributed" in rendered["determined"]
        assert "train.py" in rendered["determined"]


def _check_run(project: Path, logdir: Path, output: str, world: int) -> None:
    ranks = sorted(int(m) for m in re.findall(r"(?:rank|worker) (\d+)/" + str(world), output))
    assert ranks == list(range(world)), output
    events = list(logdir.glob("events.out.tfevents.*"))
    assert len(events) == 1, events  # rank 0 only
    points = loader_points(logdir)["loss"]
    assert len(points) >= 10 and points[-1][1] < points[0][1]
    checkpoint = json.loads((project / "checkpoints" / "checkpoint.json").read_text())
    assert checkpoint


def _env(bin_dir: Path, logdir: Path | None, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("YANFLOW_TB_LOGDIR", "RANK", "WORLD_SIZE")}
    env.update(extra, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", TMPDIR=str(bin_dir.parent))  # hostfiles
    if logdir is not None:
        env["YANFLOW_TB_LOGDIR"] = str(logdir)
    return env


@pytest.mark.parametrize("name", ["torchrun-ddp", "deepspeed", "accelerate", "tensorflow"])
@pytest.mark.parametrize("logdir_env", [True, False], ids=["tb-logdir-env", "workdir-tb"])
def test_per_node_templates_run_from_the_kubernetes_pod_script_under_stub_launchers(tmp_path, name, logdir_env):
    project = tmp_path / "project"
    spec = load_spec(projects.write_project(name, project))
    bin_dir = make_launchers(tmp_path / "bin")
    logdir = tmp_path / "tb-logdir" if logdir_env else None
    job, _service = k8s_manifests.manifests(spec, "0123456789ab", "ml")
    container = job["spec"]["template"]["spec"]["containers"][0]
    output = ""
    for index in range(spec.resources.nodes):
        env = _env(bin_dir, logdir, pod_env(container, index))
        result = subprocess.run(
            container["command"], env=env, cwd=project, capture_output=True, text=True, timeout=60, check=False
        )
        assert result.returncode == 0, result.stdout + result.stderr
        output += result.stdout
    world = spec.resources.nodes * (1 if spec.launcher == "tensorflow" else spec.resources.gpus)
    _check_run(project, logdir or project / "tb", output, world)
    if name == "tensorflow":
        assert f"worker 1/2 of {k8s_manifests.dns_name(spec.name, '0123456789ab')}-0." in output


def test_horovod_template_runs_under_one_stub_horovodrun(tmp_path):
    project = tmp_path / "project"
    spec = load_spec(projects.write_project("horovod", project))
    bin_dir = make_launchers(tmp_path / "bin")
    nproc, nodes = spec.resources.gpus, spec.resources.nodes
    hosts = ",".join(f"node{i}:{nproc}" for i in range(nodes))  # as the Slurm batch shell builds $HOSTS
    line = f"exec {launchers.prefix('horovod')} {launchers.handed_line('horovod', str(spec.command))}"
    env = _env(bin_dir, None, {"WORLD_SIZE": str(nodes * nproc), "HOSTS": hosts})
    result = subprocess.run(["/bin/sh", "-c", line], env=env, cwd=project, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    _check_run(project, project / "tb", result.stdout, nodes * nproc)


def test_determined_trial_template_runs_under_stub_torchrun_outside_determined(tmp_path):
    """What ``determined.launch.torch_distributed`` does underneath: torchrun, one process per slot."""
    project = tmp_path / "project"
    spec = load_spec(projects.write_project("det-trial", project))
    entrypoint = det_submit.experiment_config(spec)["entrypoint"]
    assert entrypoint.startswith("python3 -m determined.launch.torch_distributed python3 train.py")
    bin_dir = make_launchers(tmp_path / "bin")
    slots = spec.resources.gpus
    prefix = launchers.prefix("torchrun")
    env = _env(bin_dir, None, {"NNODES": "1", "NODE_RANK": "0", "NPROC_PER_NODE": str(slots)})
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29500")
    result = subprocess.run(
        ["/bin/sh", "-c", f"exec {prefix} train.py"], env=env, cwd=project, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    _check_run(project, project / "tb", result.stdout, slots)


def test_the_tensorflow_launcher_builds_tf_config_on_the_node(tmp_path):
    """Per node, from $TF_WORKERS and $NODE_RANK, in the node's own shell (the step is one quoted word)."""
    env = {"PATH": os.environ["PATH"], "TF_WORKERS": "h0:29500,h1:29500", "NODE_RANK": "1"}
    line = f"exec {launchers.prefix('tensorflow')} {sys.executable} -c 'import os; print(os.environ[\"TF_CONFIG\"])'"
    out = subprocess.run(["/bin/sh", "-c", line], env=env, capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == {"cluster": {"worker": ["h0:29500", "h1:29500"]}, "task": {"type": "worker", "index": 1}}
    assert launchers.reserved_env("tensorflow")[-2:] == ("TF_WORKERS", "TF_CONFIG")


def test_init_writes_a_project_and_refuses_a_folder_that_is_not_empty(tmp_path, capsys):
    target = tmp_path / "mine"
    assert cli.main(["init", "torchrun-ddp", str(target)]) == 0
    assert {p.name for p in target.iterdir()} == {"job.yaml", "train.py", "yanflow_events.py"}
    assert load_spec(target / "job.yaml").workdir == str(target)
    before = (target / "train.py").read_text()
    (target / "train.py").write_text("# mine\n")
    assert cli.main(["init", "deepspeed", str(target)]) == 1
    assert "not empty" in capsys.readouterr().err
    assert (target / "train.py").read_text() == "# mine\n" and not (target / "ds_config.json").exists()
    assert before != "# mine\n"
    with pytest.raises(projects.ProjectError, match="no template project 'nope'"):
        projects.write_project("nope", tmp_path / "other")


def test_projects_import_no_framework_at_the_top_of_our_package():
    """The projects are data: nothing of yanflow_tui imports them, nor any framework."""
    code = "import sys, yanflow_tui.projects, yanflow_tui.templates, yanflow_tui.cli; print(sorted(sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    for name in (
        "torch",
        "tensorflow",
        "deepspeed",
        "accelerate",
        "horovod",
        "yanflow_events",
        "determined",
        "mmdet",
        "mmengine",
    ):
        assert f"'{name}'" not in loaded
