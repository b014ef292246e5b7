"""DeepSpeed template: a small model trained with ``deepspeed.initialize`` and ds_config.json.

The deepspeed launcher passes ``--local_rank`` and sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT;
this script reads its place in the job from them only. Rank 0 writes TensorBoard scalars
($YANFLOW_TB_LOGDIR, else ./tb) and checkpoints/. Without deepspeed it runs the loop in pure Python.
"""

import argparse
import os

import yanflow_events

try:
    import deepspeed
    import torch
    from torch import nn
except ImportError:
    deepspeed = None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)  # given by the deepspeed launcher
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    master = os.environ["MASTER_ADDR"] + ":" + os.environ["MASTER_PORT"]
    print(f"rank {rank}/{world} local_rank {args.local_rank} master {master}", flush=True)
    writer = yanflow_events.EventWriter() if rank == 0 else None
    if deepspeed is None:
        for step in range(args.steps):
            if writer:
                writer.add_scalar("loss", yanflow_events.toy_loss(step, rank), step)
        if writer:
            writer.close()
            yanflow_events.save_checkpoint({"steps": args.steps, "world_size": world})
        return
    deepspeed.init_distributed()
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config="ds_config.json")
    loss_fn = nn.BCEWithLogitsLoss()
    for step in range(args.steps):
        x = torch.randn(16, 32, device=engine.device)
        y = (x[:, :4].sum(dim=1, keepdim=True) > 0).float()
        loss = loss_fn(engine(x), y)
        engine.backward(loss)
        engine.step()
        if writer:
            writer.add_scalar("loss", loss.item(), step)
    engine.save_checkpoint("checkpoints")  # every rank takes part
    if writer:
        writer.close()


if __name__ == "__main__":
    main()
