"""Determined trial template (Core API): a two-layer MLP on synthetic data that reports training and
validation loss, writes TensorBoard scalars, checkpoints each epoch, and honours preemption.

Determined runs it as ``python3 -m determined.launch.torch_distributed python3 train.py``: the rank
comes from ``core.distributed`` (torchrun's RANK/LOCAL_RANK/WORLD_SIZE underneath). Outside Determined
(no ``determined`` or ``torch`` to import) it runs a pure-Python loop with the ranks torchrun gives,
writing ./tb (or $YANFLOW_TB_LOGDIR) and checkpoints/epoch_N.json itself. Either way it resumes from
$YANFLOW_RESUME_FROM when the console sets it (a Determined checkpoint's uuid; printing "resuming from").
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


def main(core, hparams, resume=None):
    rank = core.distributed.rank
    torch.manual_seed(rank)
    hidden = int(hparams["hidden"])
    model = nn.Sequential(nn.Linear(32, hidden), nn.ReLU(), nn.Linear(hidden, 1))
    steps, first = 0, 0
    if resume:  # a checkpoint's uuid ($YANFLOW_RESUME_FROM) or the trial's latest after a restart
        with core.checkpoint.restore_path(resume) as path:
            model.load_state_dict(torch.load(pathlib.Path(path) / "model.pth"))
        steps = int(core.checkpoint.get_metadata(resume).get("steps_completed", 0))
        first = steps // 32  # 4096 samples of 128 an epoch
    optimizer = torch.optim.SGD(model.parameters(), lr=float(hparams["lr"]))
    loss_fn = nn.BCEWithLogitsLoss()
    x_train, y_train = make_data(4096, 0)
    x_val, y_val = make_data(1024, 1)
    writer = yanflow_events.EventWriter(str(core.train.get_tensorboard_path())) if rank == 0 else None
    for _epoch in range(first, int(hparams["epochs"])):
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
    resume = yanflow_events.resume_from()  # $YANFLOW_RESUME_FROM: checkpoints/epoch_N.json of an earlier run
    if rank == 0:
        writer = yanflow_events.EventWriter()
        epochs = int(hparams["epochs"])
        first = yanflow_events.load_json_checkpoint(resume).get("epoch", 0)
        for epoch in range(first, epochs):
            for step in range(epoch * 32, epoch * 32 + 32):
                writer.add_scalar("loss", yanflow_events.toy_loss(step, rank), step)
            state = {"epoch": epoch + 1, "steps_completed": (epoch + 1) * 32, "hparams": hparams}
            yanflow_events.save_numbered(state, "epoch", epoch + 1)
            if epoch + 1 < epochs:
                yanflow_events.end_epoch()
        writer.close()


if __name__ == "__main__":
    if det is None:
        main_without_determined(DEFAULT_HPARAMS)
    else:
        info = det.get_cluster_info()
        hparams = info.trial.hparams if info is not None else DEFAULT_HPARAMS
        distributed = det.core.DistributedContext.from_torch_distributed()
        resume = yanflow_events.resume_from() or (info.latest_checkpoint if info is not None else None)
        with det.core.init(distributed=distributed) as core_context:
            main(core_context, hparams, resume)
