"""A tiny Core API trial for the const.yaml beside it: reports a falling validation loss."""

import determined as det


def main(core_context: det.core.Context) -> None:
    hparams = det.get_cluster_info().trial.hparams
    loss = 1.0
    for epoch in range(3):
        loss *= 1.0 - 0.1 * float(hparams.get("dropout1", 0.25))
        core_context.train.report_validation_metrics(steps_completed=epoch + 1, metrics={"validation_loss": loss})


if __name__ == "__main__":
    with det.core.init() as context:
        main(context)
