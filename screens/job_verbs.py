"""A job verb through the backends' gate, for the Queue's actions: which jobs it fits (cancel, an extra
verb, any action), the backends' own check of typed values, the values a backend offers before it asks
(or the job back in the Submit form as a job file), and the calls themselves with the hub's timeout, said
in one notification. The dialogs before a verb are ``verb_flow.py``'s."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from yanflow_tui.hub import error_text
from yanflow_tui.keys import JobVerb
from yanflow_tui.locations import job_file_path, private_file
from yanflow_tui.model import Job
from yanflow_tui.sanitize import clean
from yanflow_tui.screens.verb_flow import ask, ask_values

if TYPE_CHECKING:
    from yanflow_tui.app import YanflowApp

Perform = Callable[[Sequence[Job], str, dict[str, str]], None]  # run verb with args on jobs (after the dialogs)


def cancellable(app: YanflowApp) -> Callable[[Job], bool]:
    """Whether a job can be cancelled: not over, and its backend cancels and may write."""

    def fits(job: Job) -> bool:
        backend = app.hub.backend(job.cluster)
        return not job.state.terminal and backend.capabilities.cancel and not backend.read_only

    return fits


def fits_verb(app: YanflowApp, verb: str) -> Callable[[Job], bool]:
    """Whether a job's backend offers ``verb`` (an extra action) and may write."""

    def fits(job: Job) -> bool:
        backend = app.hub.backend(job.cluster)
        return verb in backend.capabilities.actions and not backend.read_only

    return fits


def actionable(app: YanflowApp) -> Callable[[Job], bool]:
    """Whether a job's backend offers any extra action and may write."""

    def fits(job: Job) -> bool:
        backend = app.hub.backend(job.cluster)
        return bool(backend.capabilities.actions) and not backend.read_only

    return fits


def checker(app: YanflowApp, jobs: Sequence[Job], verb: str) -> Callable[[dict[str, str]], str]:
    """The backends' own check of typed values (no I/O), run before the confirmation."""

    def check(args: dict[str, str]) -> str:
        for cluster in dict.fromkeys(job.cluster for job in jobs):
            try:
                app.hub.backend(cluster).check_args(verb, args)
            except Exception as exc:
                return f"{cluster}: {error_text(exc)}"
        return ""

    return check


async def prefill(app: YanflowApp, verb: JobVerb, job: Job, perform: Perform) -> None:
    """A backend that gives the job back as a job file (``capabilities.job_files``): the Submit form
    with that file loaded and the larger values set, to review and submit. Else ask it what to offer
    (e.g. the doubled time limit), then the prefilled prompts."""
    backend = app.hub.backend(job.cluster)
    if verb.form and backend.capabilities.job_files:  # the job back in the Submit form, the larger values set there
        try:
            name, text, values = await app.hub.call(backend.job_file(job.id, dict(verb.args)))
            path = job_file_path(f"{job.cluster}-{name}")
            await asyncio.to_thread(private_file, path, text)
        except Exception as exc:
            app.report_error(f"{verb.label}: not offered", error_text(exc))
            return
        app.open_in_submit(str(path), values, job.cluster)
        return
    try:
        defaults = await app.hub.call(backend.verb_defaults(job.id, verb.verb, dict(verb.args)))
    except Exception as exc:
        app.report_error(f"{verb.label}: not offered", error_text(exc))
        return
    check = checker(app, [job], verb.verb)
    if not defaults or verb.verb == "edit":  # nothing to prefill, or the field's value now in its prompt
        ask(app, verb, [job], lambda args: perform([job], verb.verb, args), check, defaults)
        return
    ask_values(app, verb, job, defaults, lambda args: perform([job], verb.verb, args), check)


async def call_each(
    app: YanflowApp,
    jobs: Sequence[Job],
    call: Callable[[Job], Awaitable[str | None]],
    failed: str,
    done: str,
    each_done: Callable[[Job], None],
) -> None:
    """Await a gated backend call (cancel, perform) for each job, with the hub's timeout (``each_done``
    after each that worked); say how it went (what the backend said, or one line per failure), and
    ask the clusters for their jobs again."""
    said, errors = [], []
    for job in jobs:
        try:
            answer = await app.hub.call(call(job))
        except Exception as exc:
            errors.append(f"{job.cluster}/{job.id}: {error_text(exc)}")
            continue
        each_done(job)
        said.append(answer or f"{done}: job {job.id} on {job.cluster}")
    if errors:
        app.report_error(failed, "\n".join(errors))
    if said:
        summary = said if len(said) <= 3 else [*said[:2], f"{done}: {len(said)} jobs in all"]
        app.notify(clean("\n".join(summary)), markup=False)
    for cluster in dict.fromkeys(job.cluster for job in jobs):
        app.request_refresh(cluster)
