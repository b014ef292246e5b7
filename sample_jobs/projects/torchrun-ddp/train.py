"""torchrun DDP template: a small model on synthetic data, trained with DistributedDataParallel.

torchrun gives every process RANK, LOCAL_RANK, WORLD_SIZE, GROUP_RANK (its node), MASTER_ADDR and
MASTER_PORT; this script reads its place in the job from them only. Rank 0 writes TensorBoard scalars
($YANFLOW_TB_LOGDIR, else ./tb) and checkpoints/, and says whether the weights ended equal on every rank
(DDP's gradients averaged across the nodes). Without torch it runs the same loop in pure Python (for a
dry run of the wiring).
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
    if torch is None:
        step = 0
        for _epoch in range(args.epochs):
            for _ in range(args.steps):
                if writer:
                    writer.add_scalar("loss", yanflow_events.toy_loss(step, rank), step)
                step += 1
        if writer:
            writer.close()
            yanflow_events.save_checkpoint({"steps": step, "world_size": world})
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
    step = 0
    for _epoch in range(args.epochs):
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
