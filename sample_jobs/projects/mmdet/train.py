"""MMDetection template: MMDetection's tools/train.py in small. Reads the config with mmengine's
Config, trains with mmengine's Runner, one process per GPU under torchrun (``--launcher pytorch``,
chosen by itself when torchrun's WORLD_SIZE is over 1), and resumes with ``--resume`` (no path: the
work dir's ``last_checkpoint``), or from ``$YANFLOW_RESUME_FROM`` when the console resumes a job.
On nodes without CUDA (a CPU partition) it starts gloo itself and keeps DDP on the CPU; a resume
loads the checkpoint whole (torch 2.6 and later load weights only by default, which mmengine's fail).

The work dir (``work_dirs/<config name>``, or ``--work-dir``) holds what mmengine writes:
``epoch_N.pth`` checkpoints, ``last_checkpoint`` (the newest one's path) and, per run,
``<timestamp>/vis_data/scalars.json`` (one JSON line of scalars per log step). The TensorBoard event
files go to ``$YANFLOW_TB_LOGDIR`` (else ./tb), where the console reads curves.

Without mmdet, mmengine and torch it runs the same wiring in pure Python (a dry run: ranks, the work
dir's layout with JSON stand-ins for the checkpoints, the scalars, resume), as under the stub launchers.
"""

import argparse
import json
import math
import os
import time

import yanflow_events

try:
    import mmdet  # noqa: F401  (registers MMDetection's models, datasets and hooks)
    import torch
    from mmengine.config import Config
    from mmengine.runner import Runner
except ImportError:
    Runner = None


def parse_args():
    parser = argparse.ArgumentParser(description="Train a detector from an MMDetection config")
    parser.add_argument("config", help="the MMDetection config file")
    parser.add_argument("--work-dir", help="where checkpoints and logs go (default: work_dirs/<config name>)")
    parser.add_argument(
        "--resume", nargs="?", const="auto", help="resume from this checkpoint; with no path, the work dir's newest"
    )
    parser.add_argument(
        "--launcher", choices=["none", "pytorch", "slurm", "mpi"], help="default: pytorch under torchrun"
    )
    parser.add_argument("--epochs", type=int, help="override the config's max_epochs")
    args = parser.parse_args()
    args.resume = args.resume or os.environ.get("YANFLOW_RESUME_FROM") or None
    if args.launcher is None:
        args.launcher = "pytorch" if int(os.environ.get("WORLD_SIZE", "1")) > 1 else "none"
    if args.work_dir is None:
        args.work_dir = os.path.join("work_dirs", os.path.splitext(os.path.basename(args.config))[0])
    return args


def main():
    args = parse_args()
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    node = os.environ.get("GROUP_RANK", "0")
    print(f"rank {rank}/{world} node {node} launcher {args.launcher} work_dir {args.work_dir}", flush=True)
    if args.resume:
        print(f"resuming from {args.resume}", flush=True)
    if Runner is None:
        dry_run(args, rank, world)
        return
    cfg = Config.fromfile(args.config)
    cfg.launcher = args.launcher
    cfg.work_dir = args.work_dir
    if args.epochs:
        cfg.train_cfg.max_epochs = args.epochs
    for backend in cfg.visualizer.get("vis_backends", []):
        if backend["type"] == "TensorboardVisBackend":
            backend["save_dir"] = yanflow_events.logdir()  # where the console reads the curves
    if args.resume:
        cfg.resume = True
        cfg.load_from = None if args.resume == "auto" else args.resume
        load_own_checkpoints_whole()
    if args.launcher == "pytorch" and not torch.cuda.is_available():
        on_cpu_nodes(cfg)
    Runner.from_cfg(cfg).train()


def on_cpu_nodes(cfg):
    """Nodes without CUDA (a CPU partition, a CPU build of torch): mmengine's pytorch launcher calls
    ``torch.cuda.set_device`` and gives DDP ``device_ids=[LOCAL_RANK]``, both of which fail there. So
    gloo is started here (mmengine then starts no process group of its own) and DDP keeps the model on
    the CPU, with the options mmengine gives it by default."""
    torch.distributed.init_process_group(backend="gloo")
    wrapper = dict(cfg.get("model_wrapper_cfg") or {"type": "MMDistributedDataParallel"})
    wrapper.setdefault("device_ids", None)
    wrapper.setdefault("broadcast_buffers", False)
    wrapper.setdefault("find_unused_parameters", cfg.get("find_unused_parameters", False))
    cfg.model_wrapper_cfg = wrapper


def load_own_checkpoints_whole():
    """torch 2.6 and later load with ``weights_only=True`` unless told otherwise, and mmengine 0.10's
    checkpoints hold more than weights (its message hub's ``HistoryBuffer``, numpy values): a resume
    fails with "Weights only load failed". The checkpoint is this project's own, so torch is told to
    load it whole, unless the environment already says either way."""
    if "TORCH_FORCE_WEIGHTS_ONLY_LOAD" not in os.environ:
        os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")


def dry_run(args, rank, world):
    """The wiring without a framework: rank 0 writes mmengine's work dir layout, as its Runner does."""
    epochs, iters = args.epochs or 3, 10
    start = 0
    resume = args.resume
    if resume == "auto":
        last = os.path.join(args.work_dir, "last_checkpoint")
        resume = open(last).read().strip() if os.path.exists(last) else None
    if resume:
        start = json.load(open(resume))["meta"]["epoch"]
    if rank != 0:
        return
    stamp = time.strftime("%Y%m%d_%H%M%S")
    run, n = stamp, 0
    while os.path.exists(os.path.join(args.work_dir, run)):  # a run started in the same second: its own folder
        n += 1
        run = f"{stamp}_{n}"
    vis = os.path.join(args.work_dir, run, "vis_data")
    os.makedirs(vis)
    writer = yanflow_events.EventWriter()
    with open(os.path.join(vis, "scalars.json"), "a") as scalars:
        for epoch in range(start + 1, epochs + 1):
            for i in range(1, iters + 1):
                step = (epoch - 1) * iters + i
                loss = yanflow_events.toy_loss(step, 0)
                row = {"lr": 0.01, "loss": loss, "loss_cls": loss * 0.7, "loss_bbox": loss * 0.3}
                row.update(time=0.1, data_time=0.01, epoch=epoch, iter=step, memory=0, step=step)
                scalars.write(json.dumps(row) + "\n")
                writer.add_scalar("loss", loss, step)
            scalars.write(json.dumps({"coco/bbox_mAP": round(1 - math.exp(-epoch / 3), 4), "step": epoch}) + "\n")
            scalars.flush()
            path = os.path.abspath(os.path.join(args.work_dir, f"epoch_{epoch}.pth"))
            with open(path, "w") as f:  # a stand-in: mmengine's is torch.save({"meta":..., "state_dict":...})
                json.dump({"meta": {"epoch": epoch, "iter": epoch * iters}, "state_dict": {}}, f)
            with open(os.path.join(args.work_dir, "last_checkpoint"), "w") as f:
                f.write(path)
            print(
                f"Epoch(train) [{epoch}][{iters}/{iters}] loss: {loss:.4f}; Saving checkpoint at {epoch} epochs",
                flush=True,
            )
    writer.close()


if __name__ == "__main__":
    main()
