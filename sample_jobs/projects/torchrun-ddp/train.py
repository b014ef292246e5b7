"""torchrun DDP template: a small model on synthetic data, trained with DistributedDataParallel.

torchrun gives every process RANK, LOCAL_RANK, WORLD_SIZE, GROUP_RANK (its node), MASTER_ADDR and
MASTER_PORT; this script reads its place in the job from them only. Rank 0 writes TensorBoard scalars
($YANFLOW_TB_LOGDIR, else ./tb) and a checkpoint an epoch (checkpoints/epoch_N.pt); every rank resumes
from $YANFLOW_RESUME_FROM when the console sets it (printing "resuming from PATH"). Rank 0 says whether
the weights ended equal on every rank (DDP's gradients averaged across the nodes). Without torch it runs
the same loop in pure Python (for a dry run of the wiring).
"""

import argparse
import os

import yanflow_events

try:
    import torch
    import torch.distributed as dist
    from torch import nn
except ImportError:
    torch = None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank, node = int(os.environ["LOCAL_RANK"]), os.environ["GROUP_RANK"]
    master = os.environ["MASTER_ADDR"] + ":" + os.environ["MASTER_PORT"]
    print(f"rank {rank}/{world} node {node} local_rank {local_rank} master {master}", flush=True)
    writer = yanflow_events.EventWriter() if rank == 0 else None
    resume = yanflow_events.resume_from()  # $YANFLOW_RESUME_FROM: checkpoints/epoch_N.* of an earlier run
    if torch is None:
        state = yanflow_events.load_json_checkpoint(resume)
        first, step = state.get("epoch", 0), state.get("steps", 0)
        for epoch in range(first, args.epochs):
            for _ in range(args.steps):
                if writer:
                    writer.add_scalar("loss", yanflow_events.toy_loss(step, rank), step)
                step += 1
            if writer:
                writer.flush()
                state = {"epoch": epoch + 1, "steps": step, "world_size": world}
                yanflow_events.save_numbered(state, "epoch", epoch + 1)
                print(f"epoch {epoch + 1}: checkpoint saved", flush=True)
            if epoch + 1 < args.epochs:
                yanflow_events.end_epoch()
        if writer:
            writer.close()
        return
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if cuda else "gloo")  # env://: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
    torch.manual_seed(rank)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)).to(device),
        device_ids=[local_rank] if cuda else None,
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = nn.BCEWithLogitsLoss()
    first, step = 0, 0
    if resume:
        saved = torch.load(resume, map_location=device)
        model.module.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        first, step = saved["epoch"], saved["steps"]
    for epoch in range(first, args.epochs):
        for _ in range(args.steps):
            x = torch.randn(64, 32, device=device)
            y = (x[:, :4].sum(dim=1, keepdim=True) > 0).float()
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            if writer:
                writer.add_scalar("loss", loss.item(), step)
            step += 1
        if writer:
            os.makedirs("checkpoints", exist_ok=True)
            state = {"model": model.module.state_dict(), "optimizer": optimizer.state_dict()}
            path = yanflow_events.checkpoint_path("epoch", epoch + 1, ".pt")
            torch.save({**state, "epoch": epoch + 1, "steps": step}, path)
        if epoch + 1 < args.epochs:
            yanflow_events.end_epoch()
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    low, high = weights.clone(), weights.clone()
    dist.all_reduce(low, op=dist.ReduceOp.MIN)
    dist.all_reduce(high, op=dist.ReduceOp.MAX)
    if writer:
        writer.close()
        os.makedirs("checkpoints", exist_ok=True)
        torch.save({"model": model.module.state_dict(), "steps": step}, "checkpoints/checkpoint.pt")
        same = "equal" if torch.equal(low, high) else "NOT equal"
        print(f"weights {same} on all {world} ranks after {step} steps", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
