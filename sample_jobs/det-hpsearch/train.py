"""A small Core API trial for the det-hpsearch sample: a two-layer MLP on synthetic data that
reports training and validation loss, checkpoints each epoch, and honours preemption.

Run by Determined as ``python3 -m determined.launch.torch_distributed python3 train.py``.
"""

import pathlib

import determined as det
import torch
from torch import nn


def make_data(n: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 32, generator=g)
    y = (x[:, :4].sum(dim=1, keepdim=True) > 0).float()
    return x, y


def main(core: det.core.Context, hparams: dict) -> None:
    torch.manual_seed(core.distributed.rank)
    model = nn.Sequential(nn.Linear(32, int(hparams["hidden"])), nn.ReLU(), nn.Linear(int(hparams["hidden"]), 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=float(hparams["lr"]))
    loss_fn = nn.BCEWithLogitsLoss()
    x_train, y_train = make_data(4096, 0)
    x_val, y_val = make_data(1024, 1)
    steps = 0
    for _epoch in range(int(hparams["epochs"])):
        for i in range(0, len(x_train), 128):
            optimizer.zero_grad()
            loss = loss_fn(model(x_train[i : i + 128]), y_train[i : i + 128])
            loss.backward()
            optimizer.step()
            steps += 1
            if steps % 10 == 0 and core.distributed.rank == 0:
                core.train.report_training_metrics(steps_completed=steps, metrics={"loss": loss.item()})
        with torch.no_grad():
            val = loss_fn(model(x_val), y_val).item()
        if core.distributed.rank == 0:
            core.train.report_validation_metrics(steps_completed=steps, metrics={"validation_loss": val})
            with core.checkpoint.store_path({"steps_completed": steps}) as (path, _uuid):
                torch.save(model.state_dict(), pathlib.Path(path) / "model.pth")
        if core.preempt.should_preempt():
            return


if __name__ == "__main__":
    info = det.get_cluster_info()
    distributed = det.core.DistributedContext.from_torch_distributed()
    with det.core.init(distributed=distributed) as core_context:
        main(core_context, info.trial.hparams)
