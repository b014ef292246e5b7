"""TensorFlow template: Keras training under ``tf.distribute.MultiWorkerMirroredStrategy``.

The console sets TF_CONFIG on every node (the worker list and this node's index); the strategy reads
it, and without tensorflow this script reads the same JSON. The chief (worker 0) writes TensorBoard
scalars ($YANFLOW_TB_LOGDIR, else ./tb) and checkpoints/ (``epoch_N`` each epoch); it resumes from
$YANFLOW_RESUME_FROM when the console sets it (printing "resuming from PATH").
"""

import argparse
import json
import os

import yanflow_events

try:
    import tensorflow as tf
except ImportError:
    tf = None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    config = json.loads(os.environ["TF_CONFIG"])
    index, workers = config["task"]["index"], config["cluster"]["worker"]
    print(f"worker {index}/{len(workers)} of {','.join(workers)}", flush=True)
    resume = yanflow_events.resume_from()  # $YANFLOW_RESUME_FROM: checkpoints/epoch_N.* of an earlier run
    if tf is None:
        if index == 0:
            writer = yanflow_events.EventWriter()
            first = yanflow_events.load_json_checkpoint(resume).get("epoch", 0)
            for epoch in range(first, args.epochs):
                for step in range(epoch * 10, epoch * 10 + 10):
                    writer.add_scalar("loss", yanflow_events.toy_loss(step, index), step)
                yanflow_events.save_numbered({"epoch": epoch + 1, "workers": len(workers)}, "epoch", epoch + 1)
                if epoch + 1 < args.epochs:
                    yanflow_events.end_epoch()
            writer.close()
            yanflow_events.save_checkpoint({"epochs": args.epochs, "workers": len(workers)})
        return
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    with strategy.scope():
        layers = [tf.keras.Input((32,)), tf.keras.layers.Dense(64, "relu"), tf.keras.layers.Dense(1)]
        model = tf.keras.Sequential(layers)
        model.compile(optimizer="sgd", loss=tf.keras.losses.BinaryCrossentropy(from_logits=True))
    x = tf.random.normal((2048, 32), seed=1)
    y = tf.cast(tf.reduce_sum(x[:, :4], axis=1, keepdims=True) > 0, tf.float32)
    chief = index == 0
    logdir = yanflow_events.logdir() if chief else os.path.join("/tmp", f"tb-worker-{index}")
    first = 0
    if resume:  # checkpoints/epoch_N.weights.h5
        model.load_weights(resume)
        first = yanflow_events.number_of(resume)
    saves = "checkpoints" if chief else f"/tmp/checkpoints-worker-{index}"
    each = tf.keras.callbacks.ModelCheckpoint(saves + "/epoch_{epoch}.weights.h5", save_weights_only=True)
    callbacks = [tf.keras.callbacks.TensorBoard(logdir), each]
    model.fit(x, y, batch_size=64, epochs=args.epochs, initial_epoch=first, callbacks=callbacks)
    model.save_weights(("checkpoints" if chief else f"/tmp/checkpoints-worker-{index}") + "/checkpoint.weights.h5")


if __name__ == "__main__":
    main()
