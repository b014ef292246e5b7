"""Horovod template: a small model trained with ``horovod.torch`` and its DistributedOptimizer.

horovodrun starts every process and gives each HOROVOD_RANK, HOROVOD_SIZE and HOROVOD_LOCAL_RANK
(``hvd.init()`` reads them); without horovod this script reads the same variables. Rank 0 writes
TensorBoard scalars ($YANFLOW_TB_LOGDIR, else ./tb) and checkpoints/.
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    if hvd is None:
        rank, world = int(os.environ["HOROVOD_RANK"]), int(os.environ["HOROVOD_SIZE"])
        print(f"rank {rank}/{world} local_rank {os.environ['HOROVOD_LOCAL_RANK']}", flush=True)
        if rank == 0:
            writer = yanflow_events.EventWriter()
            for step in range(args.steps):
                writer.add_scalar("loss", yanflow_events.toy_loss(step, rank), step)
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
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    loss_fn = nn.BCEWithLogitsLoss()
    writer = yanflow_events.EventWriter() if rank == 0 else None
    for step in range(args.steps):
        x = torch.randn(16, 32)
        y = (x[:, :4].sum(dim=1, keepdim=True) > 0).float()
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        if writer:
            writer.add_scalar("loss", loss.item(), step)
    if writer:
        writer.close()
        os.makedirs("checkpoints", exist_ok=True)
        torch.save({"model": model.state_dict(), "steps": args.steps}, "checkpoints/checkpoint.pt")


if __name__ == "__main__":
    main()
