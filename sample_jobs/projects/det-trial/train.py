"""Determined trial template (Core API): a two-layer MLP on synthetic data that reports training and
validation loss, writes TensorBoard scalars, checkpoints each epoch, and honours preemption.

Determined runs it as ``python3 -m determined.launch.torch_distributed python3 train.py``: the rank
comes from ``core.distributed`` (torchrun's RANK/LOCAL_RANK/WORLD_SIZE underneath). Outside Determined
(no ``determined`` or ``torch`` to import) it runs a pure-Python loop with the ranks torchrun gives,
writing ./tb (or $YANFLOW_TB_LOGDIR) and checkpoints/ itself.
"""

import os
import pathlib

import yanflow_events

try:
    import determined as det
    import torch
    from torch import nn
except ImportError:
    det = None

DEFAULT_HPARAMS = {"lr": 0.01, "hidden": 64, "epochs": 3}


def make_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 32, generator=g)
    y = (x[:, :4].sum(dim=1, keepdim=True) > 0).float()
    return x, y


def main(core, hparams):
    rank = core.distributed.rank
    torch.manual_seed(rank)
    hidden = int(hparams["hidden"])
    model = nn.Sequential(nn.Linear(32, hidden), nn.ReLU(), nn.Linear(hidden, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=float(hparams["lr"]))
    loss_fn = nn.BCEWithLogitsLoss()
    x_train, y_train = make_data(4096, 0)
    x_val, y_val = make_data(1024, 1)
    writer = yanflow_events.EventWriter(str(core.train.get_tensorboard_path())) if rank == 0 else None
    steps = 0
    for _epoch in range(int(hparams["epochs"])):
        for i in range(0, len(x_train), 128):
            optimizer.zero_grad()
            loss = loss_fn(model(x_train[i : i + 128]), y_train[i : i + 128])
            loss.backward()
            optimizer.step()
            steps += 1
            if steps % 10 == 0 and rank == 0:
                core.train.report_training_metrics(steps_completed=steps, metrics={"loss": loss.item()})
                writer.add_scalar("loss", loss.item(), steps)
        with torch.no_grad():
            val = loss_fn(model(x_val), y_val).item()
        if rank == 0:
            core.train.report_validation_metrics(steps_completed=steps, metrics={"validation_loss": val})
            writer.add_scalar("validation_loss", val, steps)
            writer.flush()
            with core.checkpoint.store_path({"steps_completed": steps}) as (path, _uuid):
                torch.save(model.state_dict(), pathlib.Path(path) / "model.pth")
        if core.preempt.should_preempt():
            return


def main_without_determined(hparams):
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    print(f"rank {rank}/{world} local_rank {os.environ['LOCAL_RANK']} (no determined: pure-Python loop)")
    if rank == 0:
        writer = yanflow_events.EventWriter()
        steps = int(hparams["epochs"]) * 32
        for step in range(steps):
            writer.add_scalar("loss", yanflow_events.toy_loss(step, rank), step)
        writer.close()
        yanflow_events.save_checkpoint({"steps_completed": steps, "hparams": hparams})


if __name__ == "__main__":
    if det is None:
        main_without_determined(DEFAULT_HPARAMS)
    else:
        info = det.get_cluster_info()
        hparams = info.trial.hparams if info is not None else DEFAULT_HPARAMS
        distributed = det.core.DistributedContext.from_torch_distributed()
        with det.core.init(distributed=distributed) as core_context:
            main(core_context, hparams)
