"""A job's TensorBoard from the detail view: started (or shown again) with ``t``, stopped with ``T``;
kept by the app in ``app.tensorboards`` (see ``yanflow_tui.tensorboards``), stopped at exit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from yanflow_tui.hub import error_text
from yanflow_tui.model import Job
from yanflow_tui.sanitize import clean

if TYPE_CHECKING:
    from yanflow_tui.app import YanflowApp


async def open_tensorboard(app: YanflowApp, job: Job) -> str | None:
    """The job's TensorBoard URL (started if none runs); None when it failed (reported)."""
    backend = app.hub.backend(job.cluster)
    try:
        board = await app.tensorboards.start(job.key, backend, job.id, app.hub.call)
    except Exception as exc:
        app.report_error("TensorBoard refused" if "read-only" in str(exc) else "TensorBoard failed", error_text(exc))
        return None
    app.notify(clean(f"TensorBoard at {board.url}  ({board.what})"), markup=False)
    return board.url


async def stop_tensorboard(app: YanflowApp, job: Job) -> None:
    try:
        stopped = await app.tensorboards.stop(job.key)
    except Exception as exc:
        app.report_error("TensorBoard stop failed", error_text(exc))
        return
    if stopped:
        app.notify("TensorBoard stopped", markup=False)


def tensorboard_text(app: YanflowApp, job: Job) -> str:
    board = app.tensorboards.of(job.key)
    if board is None:
        return "none (t: start one)"
    failure = f"\nlast refresh failed: {board.failure}" if board.failure else ""
    return f"{board.url}  ({board.what}){failure}"
