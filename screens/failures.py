"""Worker failures reach the app's one handler: Textual posts ``Worker.StateChanged`` only to the node
that ran the worker (it does not bubble), so a screen or widget that runs workers mixes in
``ForwardFailures``, which hands each failure on to the app (``YanflowApp.on_worker_state_changed``)."""

from __future__ import annotations

from textual.worker import Worker, WorkerState


class ForwardFailures:
    """A mixin for a Screen or Widget that runs workers: their failures go to the app."""

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR:
            worker = event.worker
            worker.node.app.post_message(Worker.StateChanged(worker, event.state))
