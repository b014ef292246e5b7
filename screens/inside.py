"""Inside a running job from the console: the shell (the console suspends and the terminal is the
shell's until it exits) and port-forwards (kept by the app in ``app.forwards``, closed with a key or at
exit). The Queue and the job detail share these; the backend's capability flags say where they apply."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import SuspendNotSupported

from yanflow_tui.backends.base import Capabilities
from yanflow_tui.errors import NotOffered
from yanflow_tui.hub import error_text
from yanflow_tui.model import Job
from yanflow_tui.sanitize import clean

if TYPE_CHECKING:
    from yanflow_tui.app import YanflowApp


def shell_key(caps: Capabilities) -> bool:
    """Whether ``x`` is offered for a cluster's jobs: a shell, or a plain word why there is none (``no_shell``)."""
    return caps.shell or bool(caps.no_shell)


async def open_shell(app: YanflowApp, job: Job) -> None:
    """Ask the job's backend for a shell (the read-only gate answers first), then hand it the terminal."""
    try:
        shell = await app.hub.call(app.hub.backend(job.cluster).shell(job.id))
    except Exception as exc:
        title = (
            "No shell"
            if isinstance(exc, NotOffered)
            else "Shell refused"
            if "read-only" in str(exc)
            else "Shell failed"
        )
        app.report_error(title, error_text(exc))
        return
    try:
        with app.suspend():
            print(f"yanflow: shell in {clean(shell.what)}; exit it to come back to the console", flush=True)
            code = shell.run()
    except SuspendNotSupported:
        app.report_error("Shell failed", "this console cannot hand over its terminal: use `yanflow-tui shell`")
        return
    except Exception as exc:
        app.report_error("Shell failed", error_text(exc))
        return
    app.notify(clean(f"shell in {shell.what} exited ({code})"), markup=False)
    app.request_refresh()


async def open_forward(app: YanflowApp, job: Job, port: int) -> str | None:
    """Forward ``port`` of the job; the local address, or None (the failure was reported)."""
    try:
        forward = await app.hub.call(app.hub.backend(job.cluster).forward(job.id, port))
    except Exception as exc:
        app.report_error("Port-forward failed", error_text(exc))
        return None
    app.forwards.add(job.key, forward)
    app.notify(clean(f"{forward.address} -> {forward.what} port {port}"), markup=False)
    return forward.address


def forwards_text(app: YanflowApp, job: Job) -> str:
    rows = [f"{f.address} -> {f.what} port {f.remote_port}" for f in app.forwards.of(job.key)]
    return "\n".join(rows) or "none (p: forward a port)"
