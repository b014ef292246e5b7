"""DeepSpeed template: a small model trained with ``deepspeed.initialize`` and ds_config.json.

The deepspeed launcher passes ``--local_rank`` and sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT;
this script reads its place in the job from them only. Rank 0 writes TensorBoard scalars
($YANFLOW_TB_LOGDIR, else ./tb) and checkpoints/ (``step_N`` every 10 steps); every rank resumes from
$YANFLOW_RESUME_FROM when the console sets it (printing "resuming from PATH"). Without deepspeed it runs
the loop in pure Python.
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

EVERY = 10  # steps between two checkpoints (checkpoints/step_N)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)  # given by the deepspeed launcher
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    master = os.environ["MASTER_ADDR"] + ":" + os.environ["MASTER_PORT"]
    print(f"rank {rank}/{world} local_rank {args.local_rank} master {master}", flush=True)
    writer = yanflow_events.EventWriter() if rank == 0 else None
    resume = yanflow_events.resume_from()  # $YANFLOW_RESUME_FROM: checkpoints/step_N of an earlier run
    if deepspeed is None:
        first = yanflow_events.load_json_checkpoint(resume).get("steps", 0)
        for step in range(first, args.steps):
            if writer:
                writer.add_scalar("loss", yanflow_events.toy_loss(step, rank), step)
            if (step + 1) % EVERY == 0 and step + 1 < args.steps:
                if writer:
                    yanflow_events.save_numbered({"steps": step + 1, "world_size": world}, "step", step + 1)
                yanflow_events.end_epoch()
        if writer:
            writer.close()
            yanflow_events.save_checkpoint({"steps": args.steps, "world_size": world})
        return
    deepspeed.init_distributed()
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config="ds_config.json")
    loss_fn = nn.BCEWithLogitsLoss()
    first = 0
    if resume:  # a DeepSpeed checkpoint folder: checkpoints/<tag>
        folder = resume.rstrip("/")
        _, client = engine.load_checkpoint(os.path.dirname(folder), tag=os.path.basename(folder))
        first = (client or {}).get("steps", yanflow_events.number_of(folder))
    for step in range(first, args.steps):
        x = torch.randn(16, 32, device=engine.device)
        y = (x[:, :4].sum(dim=1, keepdim=True) > 0).float()
        loss = loss_fn(engine(x), y)
        engine.backward(loss)
        engine.step()
        if writer:
            writer.add_scalar("loss", loss.item(), step)
        if (step + 1) % EVERY == 0 and step + 1 < args.steps:  # every rank takes part
            engine.save_checkpoint("checkpoints", tag=f"step_{step + 1}", client_state={"steps": step + 1})
            yanflow_events.end_epoch()
    engine.save_checkpoint("checkpoints")  # every rank takes part
    if writer:
        writer.close()


if __name__ == "__main__":
    main()
