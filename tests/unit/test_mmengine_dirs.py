"""Reading the work dir mmengine's Runner writes (``mmengine_dirs``), from a copy of its formats as
mmengine 0.10 writes them: ``LocalVisBackend._dump`` appends ``json.dump(row)`` and a newline to
``<timestamp>/vis_data/scalars.json`` (and the same to ``<timestamp>.json`` beside it), ``LoggerHook``'s
training rows carry lr/losses/time/data_time/epoch/iter/memory and ``step``, its validation rows the
metrics, time, data_time and ``step`` (the epoch); ``CheckpointHook`` writes ``epoch_N.pth`` and
``last_checkpoint``, which holds the newest one's path and no newline. With mmengine and torch
installed, its own ``LocalVisBackend`` writes the file instead."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from paths import DATA

from yanflow_tui.curves import from_metric_points
from yanflow_tui.mmengine_dirs import checkpoints, is_work_dir_file, read_work_dir, resume_from, scalar_points

TRAIN = {"base_lr": 0.01, "lr": 0.01, "data_time": 0.02, "grad_norm": 3.5, "loss": 1.25, "loss_cls": 0.9}
VAL = {"coco/bbox_mAP": 0.1, "coco/bbox_mAP_50": 0.2, "data_time": 0.01, "time": 0.3}


def dump(path: Path, row: dict) -> None:
    """As ``LocalVisBackend._dump``: open with 'a+', ``json.dump`` (mmengine.fileio's json handler), newline."""
    with open(path, "a+") as f:
        json.dump(row, f)
        f.write("\n")


def write_run(work: Path, stamp: str, epochs: range, iters: int = 2, vis_backend=None) -> None:
    vis = work / stamp / "vis_data"
    vis.mkdir(parents=True)
    for epoch in epochs:
        for i in range(1, iters + 1):
            step = (epoch - 1) * iters + i
            row = {**TRAIN, "loss": 1.0 / step, "time": 0.5, "epoch": epoch, "iter": step, "memory": 1024}
            if vis_backend is not None:
                vis_backend.add_scalars(row, step=step, file_path=f"{stamp}.json")
            else:
                for name in ("scalars.json", f"{stamp}.json"):
                    dump(vis / name, {**row, "step": step})
        val = {**VAL, "coco/bbox_mAP": 0.1 * epoch, "step": epoch}
        if vis_backend is not None:
            vis_backend.add_scalars(val, step=epoch, file_path=f"{stamp}.json")
        else:
            for name in ("scalars.json", f"{stamp}.json"):
                dump(vis / name, val)
        (work / f"epoch_{epoch}.pth").write_bytes(b"PK\x03\x04")  # torch.save's zip
        (work / "last_checkpoint").write_text(str(work / f"epoch_{epoch}.pth"))


def test_a_work_dir_is_read_for_curves_checkpoints_and_resume(tmp_path):
    work = tmp_path / "work_dirs" / "retinanet"
    write_run(work, "20261206_110000", range(1, 3))
    write_run(work, "20261206_120000", range(3, 4))  # resumed: a second run
    with open(work / "20261206_120000" / "vis_data" / "scalars.json", "a") as f:
        f.write('{"loss": 0.1, "st')  # a line being written
    points, saved = read_work_dir(str(work))
    loss = [(p.step, p.value) for p in points if p.name == "loss"]
    assert loss == [(s, 1.0 / s) for s in range(1, 7)]
    assert {p.name for p in points if p.group == "training"} == {"base_lr", "lr", "grad_norm", "loss", "loss_cls"}
    assert [(p.step, p.value) for p in points if p.name == "coco/bbox_mAP"] == [(1, 0.1), (2, 0.2), (3, 0.1 * 3)]
    assert all(p.group == "validation" for p in points if p.name.startswith("coco/"))
    assert [(c.by, c.number, c.last) for c in saved] == [("epoch", 1, False), ("epoch", 2, False), ("epoch", 3, True)]
    curves = from_metric_points(points)  # the console's curves, as for a backend's reported metrics
    assert [pt.value for pt in curves.series["training.loss"]] == [1.0 / s for s in range(1, 7)]


def test_scalar_lines_that_are_not_points():
    lines = ['{"loss": NaN, "lr": 0.1, "step": 3, "iter": 3}', "[1, 2]", '{"loss": 1}', '{"flag": true, "step": 1}']
    assert [(p.name, p.step) for p in scalar_points(lines)] == [("lr", 3)]


def test_checkpoints_and_resume_from():
    names = ["/w/epoch_10.pth", "/w/epoch_9.pth", "/w/best_coco_bbox_mAP_epoch_9.pth", "/w/iter_5.pth.tmp", "/w/x.log"]
    assert [c.number for c in checkpoints(names)] == [9, 10]
    assert resume_from(names) == "/w/epoch_10.pth"
    assert resume_from(names, "/elsewhere/epoch_9.pth\n") == "/w/epoch_9.pth"  # the one last_checkpoint names
    assert resume_from([]) is None
    assert is_work_dir_file("20261206/vis_data/scalars.json") and is_work_dir_file("last_checkpoint")
    assert not is_work_dir_file("20261206/20261206.log")


def test_mmengines_own_local_vis_backend(tmp_path):
    vis_backend = pytest.importorskip("mmengine.visualization.vis_backend", reason="mmengine with torch not installed")
    work = tmp_path / "work"
    backend = vis_backend.LocalVisBackend(save_dir=str(work / "20261206_110000" / "vis_data"))
    (work / "20261206_110000" / "vis_data").mkdir(parents=True)
    write_run(work, "20261206_110000", range(1, 3), vis_backend=backend)
    points, saved = read_work_dir(str(work))
    assert [p.value for p in points if p.name == "loss"] == [1.0 / s for s in range(1, 5)]
    assert math.isclose([p.value for p in points if p.name == "coco/bbox_mAP"][-1], 0.2)


# Recorded from a real run (mmengine 0.10.7, mmdet 3.3.0, torch 2.13 CPU; 2 nodes of the Slurm test
# cluster, resumed from epoch 5 after a cancel): a resumed run's first training lines and a validation
# line whose metrics were empty (CocoMetric found no detections), which is time and data_time only.
REAL_RESUMED_RUN = DATA / "mmengine" / "resumed_run_scalars.json"


def test_a_real_resumed_runs_lines_and_a_cancelled_epochs_partial_checkpoint(tmp_path):
    points = scalar_points(REAL_RESUMED_RUN.read_text().splitlines())
    assert [(p.name, p.step) for p in points if p.name == "loss"] == [("loss", 11), ("loss", 12)]
    assert {p.name for p in points} == {"lr", "grad_norm", "loss", "loss_cls", "loss_bbox"}  # no validation point
    work = tmp_path / "retinanet_r18_cpu_tiny"
    work.mkdir()
    for n in range(1, 7):
        (work / f"epoch_{n}.pth").write_bytes(b"PK")
    # the cancel came while epoch 6 was being saved: a partial epoch_6.pth, and last_checkpoint still names 5
    (work / "last_checkpoint").write_text(str(work / "epoch_5.pth"))
    _, saved = read_work_dir(str(work))
    assert resume_from([c.path for c in saved], (work / "last_checkpoint").read_text()) == str(work / "epoch_5.pth")
