"""Accelerate template: a small model trained through ``accelerate.Accelerator``.

``accelerate launch`` starts one process per GPU and sets RANK, LOCAL_RANK and WORLD_SIZE for each;
the Accelerator reads them (on nodes without a GPU it joins them over gloo), and without accelerate
this script reads the same variables. The main process writes TensorBoard scalars
($YANFLOW_TB_LOGDIR, else ./tb) and checkpoints/ (``step_N`` every 10 steps); it resumes from
$YANFLOW_RESUME_FROM when the console sets it (printing "resuming from PATH").
"""

import argparse
import os

import yanflow_events

try:
    import torch
    from accelerate import Accelerator
    from torch import nn
except ImportError:
    Accelerator = None

EVERY = 10  # steps between two checkpoints (checkpoints/step_N)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    resume = yanflow_events.resume_from()  # $YANFLOW_RESUME_FROM: checkpoints/step_N of an earlier run
    if Accelerator is None:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        print(f"rank {rank}/{world} local_rank {os.environ['LOCAL_RANK']}", flush=True)
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
    # On nodes without a GPU, `accelerate launch --multi_gpu` still starts every process, but only
    # cpu=True joins them into one job (gloo); without it each would train alone as rank 0 of 1.
    accelerator = Accelerator(cpu=not torch.cuda.is_available())
    rank, world = accelerator.process_index, accelerator.num_processes
    node = os.environ.get("GROUP_RANK", "?")  # torch.distributed.run's, under accelerate's multi-GPU launcher
    print(f"rank {rank}/{world} node {node} local_rank {accelerator.local_process_index}", flush=True)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, optimizer = accelerator.prepare(model, optimizer)
    loss_fn = nn.BCEWithLogitsLoss()
    writer = yanflow_events.EventWriter() if accelerator.is_main_process else None
    first = 0
    if resume:  # a folder of accelerator.save_state: checkpoints/step_N
        accelerator.load_state(resume)
        first = yanflow_events.number_of(resume)
    for step in range(first, args.steps):
        x = torch.randn(16, 32, device=accelerator.device)
        y = (x[:, :4].sum(dim=1, keepdim=True) > 0).float()
        loss = loss_fn(model(x), y)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        if writer:
            writer.add_scalar("loss", loss.item(), step)
        if (step + 1) % EVERY == 0 and step + 1 < args.steps:
            accelerator.wait_for_everyone()
            accelerator.save_state(yanflow_events.checkpoint_path("step", step + 1, ""))
            yanflow_events.end_epoch()
    accelerator.wait_for_everyone()
    accelerator.save_state("checkpoints")
    if writer:
        writer.close()


if __name__ == "__main__":
    main()
