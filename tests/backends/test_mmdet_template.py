"""The MMDetection template project (``yanflow-tui init mmdet``): its spec renders on Slurm and
Kubernetes; it runs under the stub torchrun (tests/launchstubs.py) from each backend's per-node
command, single-node and 2-node, and its pure-Python loop writes mmengine's work dir layout
(``<timestamp>/vis_data/scalars.json``, ``epoch_N.pth``, ``last_checkpoint``) plus TensorBoard event
files where the console reads curves; ``$YANFLOW_RESUME_FROM`` resumes it; ``mmengine_dirs`` reads
that work dir. Its config loads with mmengine's own ``Config`` where mmengine is installed."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import types
from dataclasses import replace
from pathlib import Path

import pytest
from k8shelpers import pod_env
from launchstubs import make_launchers
from tbhelpers import loader_points

from yanflow_tui import launchers, mmengine_dirs, projects
from yanflow_tui.backends.kubernetes import manifests as k8s_manifests
from yanflow_tui.model import Resources
from yanflow_tui.spec import load_spec

CONFIG = "configs/retinanet_r18_fpn_coco.py"
NO_WEIGHTS_ONLY, WEIGHTS_ONLY = "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "TORCH_FORCE_WEIGHTS_ONLY_LOAD"
WORK_DIR = "work_dirs/retinanet_r18_fpn_coco"


def _env(bin_dir: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("YANFLOW_TB_LOGDIR", "RANK", "WORLD_SIZE")}
    env.update(extra, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", TMPDIR=str(bin_dir.parent))
    return env


def run_slurm_nodes(project: Path, bin_dir: Path, nodes: int, nproc: int, extra: dict[str, str] | None = None) -> str:
    """Each node's step as the Slurm batch script runs it: torchrun's prefix with the node's variables."""
    spec = load_spec(project / "job.yaml")
    line = f"exec {launchers.prefix('torchrun')} {launchers.handed_line('torchrun', str(spec.command))}"
    out = ""
    for node in range(nodes):
        env = _env(bin_dir, {"NNODES": str(nodes), "NODE_RANK": str(node), "NPROC_PER_NODE": str(nproc)})
        env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29500", **(extra or {}))
        result = subprocess.run(
            ["/bin/sh", "-c", line], env=env, cwd=project, capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0, result.stdout + result.stderr
        out += result.stdout
    return out


def check_work_dir(project: Path, epochs: int = 3) -> None:
    work = project / WORK_DIR
    points, saved = mmengine_dirs.read_work_dir(str(work))
    loss = [p for p in points if p.name == "loss" and p.group == "training"]
    assert len(loss) == 10 * epochs and loss[-1].value < loss[0].value
    assert [p.step for p in points if p.group == "validation"] == list(range(1, epochs + 1))
    assert [c.number for c in saved] == list(range(1, epochs + 1)) and saved[-1].last
    assert mmengine_dirs.resume_from([c.path for c in saved], (work / "last_checkpoint").read_text()) == str(
        work / f"epoch_{epochs}.pth"
    )
    assert len(loader_points(project / "tb")["loss"]) == 10 * epochs  # the console's curves (rank 0's file)


@pytest.mark.parametrize(("nodes", "nproc"), [(1, 1), (1, 2), (2, 2)])
def test_mmdet_runs_under_stub_torchrun_from_the_slurm_step(tmp_path, nodes, nproc):
    project = tmp_path / "project"
    projects.write_project("mmdet", project)
    output = run_slurm_nodes(project, make_launchers(tmp_path / "bin"), nodes, nproc)
    world = nodes * nproc
    launcher = "pytorch" if world > 1 else "none"
    for rank in range(world):
        assert f"rank {rank}/{world} node {rank // nproc} launcher {launcher} work_dir {WORK_DIR}" in output
    check_work_dir(project)


def test_mmdet_runs_from_the_kubernetes_pod_script(tmp_path):
    project = tmp_path / "project"
    spec = load_spec(projects.write_project("mmdet", project))
    bin_dir = make_launchers(tmp_path / "bin")
    job, _service = k8s_manifests.manifests(spec, "0123456789ab", "ml")
    container = job["spec"]["template"]["spec"]["containers"][0]
    output = ""
    for index in range(spec.resources.nodes):
        env = _env(bin_dir, pod_env(container, index))
        result = subprocess.run(
            container["command"], env=env, cwd=project, capture_output=True, text=True, timeout=60, check=False
        )
        assert result.returncode == 0, result.stdout + result.stderr
        output += result.stdout
    world = spec.resources.nodes * spec.resources.gpus
    # (the pod's processes share its stdout: one's line may land inside another's, so each is looked for anywhere)
    assert sorted(int(rank) for rank in re.findall(rf"rank (\d+)/{world} node", output)) == list(range(world)), output
    check_work_dir(project)


def test_mmdet_resumes_from_yanflow_resume_from(tmp_path):
    project = tmp_path / "project"
    projects.write_project("mmdet", project)
    bin_dir = make_launchers(tmp_path / "bin")
    run_slurm_nodes(project, bin_dir, 1, 2)
    second = str(project / WORK_DIR / "epoch_2.pth")
    (project / WORK_DIR / "epoch_3.pth").unlink()  # as if the job was cancelled after its second epoch
    output = run_slurm_nodes(project, bin_dir, 1, 2, {"YANFLOW_RESUME_FROM": second})
    assert f"resuming from {second}" in output
    assert "Epoch(train) [3]" in output and "Epoch(train) [1]" not in output
    runs = sorted((project / WORK_DIR).glob("*/vis_data/scalars.json"))
    steps = [json.loads(line)["step"] for line in runs[-1].read_text().splitlines()]
    assert steps[0] == 21  # the new run starts after epoch 2's 20 steps


def test_mmdet_spec_and_files(tmp_path):
    spec = load_spec(projects.write_project("mmdet", tmp_path / "p"))
    assert spec.launcher == "torchrun" and spec.kind.value == "multi-node"
    assert (tmp_path / "p" / CONFIG).is_file() and (tmp_path / "p" / "yanflow_events.py").is_file()
    assert replace(spec.resources, nodes=1) == Resources(nodes=1, gpus=2, cpus=8, memory_mb=32 * 1024)


def test_mmdet_config_loads_with_mmengines_config(tmp_path, monkeypatch):
    from mmengine import config  # (the test extra's mmengine-lite: a missing one fails, it does not skip)

    projects.write_project("mmdet", tmp_path / "p")
    monkeypatch.setenv("DATA_ROOT", "/data/coco/")
    cfg = config.Config.fromfile(str(tmp_path / "p" / CONFIG))
    assert cfg.model.type == "RetinaNet" and cfg.model.backbone.depth == 18
    assert cfg.train_dataloader.dataset.data_root == "/data/coco/"
    assert cfg.train_cfg.max_epochs == 12 and cfg.default_hooks.checkpoint.interval == 1
    assert [b["type"] for b in cfg.visualizer.vis_backends] == ["LocalVisBackend", "TensorboardVisBackend"]


class _Cfg(dict):
    """What the template uses of mmengine's ``Config``: a dict with attribute access."""

    def __getattr__(self, name):
        return self[name]

    def __setattr__(self, name, value):
        self[name] = value


def _fake_mmengine(monkeypatch, cuda: bool, config: dict) -> dict:
    """torch, mmdet and mmengine as far as train.py's real path reaches them; returns what they saw."""
    seen: dict = {}
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(is_available=lambda: cuda)
    torch.distributed = types.SimpleNamespace(init_process_group=lambda **kw: seen.setdefault("init", kw))
    engine_config = types.ModuleType("mmengine.config")
    engine_config.Config = types.SimpleNamespace(fromfile=lambda path: _Cfg(config))
    engine_runner = types.ModuleType("mmengine.runner")

    def from_cfg(cfg):
        seen["cfg"] = cfg
        seen["no_weights_only"] = os.environ.get(NO_WEIGHTS_ONLY)  # what torch.load would read
        return types.SimpleNamespace(train=lambda: None)

    engine_runner.Runner = types.SimpleNamespace(from_cfg=from_cfg)
    for name, module in [
        ("torch", torch),
        ("mmdet", types.ModuleType("mmdet")),
        ("mmengine", types.ModuleType("mmengine")),
        ("mmengine.config", engine_config),
        ("mmengine.runner", engine_runner),
    ]:
        monkeypatch.setitem(sys.modules, name, module)
    return seen


def _real_path_main(tmp_path, monkeypatch, cuda: bool, config: dict, env: dict[str, str] | None = None) -> dict:
    """train.py's main as two torchrun ranks' first would run it, with mmengine's Runner faked."""
    seen = _fake_mmengine(monkeypatch, cuda, config)
    for name in (NO_WEIGHTS_ONLY, WEIGHTS_ONLY, "YANFLOW_RESUME_FROM"):
        monkeypatch.setenv(name, "")  # so that teardown restores each as it was, whatever train.py sets
        monkeypatch.delenv(name)
    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value)
    project = tmp_path / "project"
    projects.write_project("mmdet", project)
    monkeypatch.syspath_prepend(str(project))
    monkeypatch.setattr(sys, "argv", ["train.py", CONFIG])
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    spec = importlib.util.spec_from_file_location("mmdet_template_train", project / "train.py")
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    train.main()
    return seen


def _config(**extra) -> dict:
    return {"train_cfg": _Cfg(max_epochs=12), "visualizer": _Cfg(vis_backends=[]), **extra}


def test_mmdet_on_cpu_nodes_starts_gloo_and_keeps_ddp_on_the_cpu(tmp_path, monkeypatch):
    # mmengine's pytorch launcher calls torch.cuda.set_device (AttributeError on a CPU build of torch)
    # and gives DDP device_ids=[LOCAL_RANK] (a ValueError for a CPU model): a real 2-node CPU run failed so
    seen = _real_path_main(tmp_path, monkeypatch, cuda=False, config=_config())
    assert seen["init"] == {"backend": "gloo"}
    assert seen["cfg"].launcher == "pytorch"
    assert seen["cfg"].model_wrapper_cfg == {
        "type": "MMDistributedDataParallel",
        "device_ids": None,
        "broadcast_buffers": False,
        "find_unused_parameters": False,
    }


def test_mmdet_on_cpu_nodes_keeps_the_configs_own_wrapper_options(tmp_path, monkeypatch):
    own = {"type": "MMFullyShardedDataParallel", "broadcast_buffers": True}
    seen = _real_path_main(tmp_path, monkeypatch, cuda=False, config=_config(model_wrapper_cfg=own))
    wrapper = seen["cfg"].model_wrapper_cfg
    assert wrapper["type"] == "MMFullyShardedDataParallel" and wrapper["broadcast_buffers"] is True
    assert wrapper["device_ids"] is None


def test_mmdet_on_gpu_nodes_leaves_the_process_group_to_mmengine(tmp_path, monkeypatch):
    seen = _real_path_main(tmp_path, monkeypatch, cuda=True, config=_config())
    assert "init" not in seen and "model_wrapper_cfg" not in seen["cfg"]
    assert seen["cfg"].launcher == "pytorch"


def test_mmdet_resume_loads_its_own_checkpoint_whole(tmp_path, monkeypatch):
    # torch 2.6+ loads weights only by default; mmengine 0.10's checkpoints hold its HistoryBuffer: a real
    # resume on torch 2.13 failed with "Weights only load failed" (Unsupported global HistoryBuffer)
    seen = _real_path_main(tmp_path, monkeypatch, cuda=True, config=_config(), env={"YANFLOW_RESUME_FROM": "/w/e.pth"})
    assert seen["cfg"].resume is True and seen["cfg"].load_from == "/w/e.pth"
    assert seen["no_weights_only"] == "1"


def test_mmdet_load_whole_only_on_resume_and_never_against_the_environment(tmp_path, monkeypatch):
    assert _real_path_main(tmp_path / "a", monkeypatch, cuda=True, config=_config())["no_weights_only"] is None
    env = {"YANFLOW_RESUME_FROM": "/w/e.pth", WEIGHTS_ONLY: "1"}  # both set: torch.load would refuse to load
    assert _real_path_main(tmp_path / "b", monkeypatch, cuda=True, config=_config(), env=env)["no_weights_only"] is None
