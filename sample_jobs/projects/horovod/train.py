"""Horovod template: a small model trained with ``horovod.torch`` and its DistributedOptimizer.

horovodrun starts every process and gives each HOROVOD_RANK, HOROVOD_SIZE and HOROVOD_LOCAL_RANK
(``hvd.init()`` reads them); without horovod this script reads the same variables. Rank 0 writes
TensorBoard scalars ($YANFLOW_TB_LOGDIR, else ./tb) and checkpoints/ (``step_N`` every 10 steps); every
rank resumes from $YANFLOW_RESUME_FROM when the console sets it (printing "resuming from PATH").
"""

import argparse
import os

import yanflow_events

try:
    import horovod.torch as hvd
    import torch
    from torch import nn
except ImportError:
    hvd = None

EVERY = 10  # steps between two checkpoints (checkpoints/step_N.pt)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    resume = yanflow_events.resume_from()  # $YANFLOW_RESUME_FROM: checkpoints/step_N.* of an earlier run
    if hvd is None:
        rank, world = int(os.environ["HOROVOD_RANK"]), int(os.environ["HOROVOD_SIZE"])
        print(f"rank {rank}/{world} local_rank {os.environ['HOROVOD_LOCAL_RANK']}", flush=True)
        if rank == 0:
            writer = yanflow_events.EventWriter()
            first = yanflow_events.load_json_checkpoint(resume).get("steps", 0)
            for step in range(first, args.steps):
                writer.add_scalar("loss", yanflow_events.toy_loss(step, rank), step)
                if (step + 1) % EVERY == 0 and step + 1 < args.steps:
                    yanflow_events.save_numbered({"steps": step + 1, "world_size": world}, "step", step + 1)
                    yanflow_events.end_epoch()
            writer.close()
            yanflow_events.save_checkpoint({"steps": args.steps, "world_size": world})
        return
    hvd.init()
    rank, world = hvd.rank(), hvd.size()
    print(f"rank {rank}/{world} local_rank {hvd.local_rank()}", flush=True)
    if torch.cuda.is_available():
        torch.cuda.set_device(hvd.local_rank())
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05 * world))
    first = 0
    if resume:  # every rank reads it; the broadcast below makes them equal anyway
        saved = torch.load(resume, map_location="cpu")
        model.load_state_dict(saved["model"])
        first = saved["steps"]
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    loss_fn = nn.BCEWithLogitsLoss()
    writer = yanflow_events.EventWriter() if rank == 0 else None
    for step in range(first, args.steps):
        x = torch.randn(16, 32)
        y = (x[:, :4].sum(dim=1, keepdim=True) > 0).float()
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        if writer:
            writer.add_scalar("loss", loss.item(), step)
        if (step + 1) % EVERY == 0 and step + 1 < args.steps:
            if writer:
                os.makedirs("checkpoints", exist_ok=True)
                path = yanflow_events.checkpoint_path("step", step + 1, ".pt")
                torch.save({"model": model.state_dict(), "steps": step + 1}, path)
            yanflow_events.end_epoch()
    if writer:
        writer.close()
        os.makedirs("checkpoints", exist_ok=True)
        torch.save({"model": model.state_dict(), "steps": args.steps}, "checkpoints/checkpoint.pt")


if __name__ == "__main__":
    main()
