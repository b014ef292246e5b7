"""The resume key (the Queue's and the job detail's): the job's newest checkpoint found in the background
(``yanflow_tui.resume``: through its backend's capabilities), then the Submit form on the job's own spec
with ``YANFLOW_RESUME_FROM`` set to it; as the form's cluster changes, its notes say what must move
there (nothing, a copy through the console, or what to copy by hand). No checkpoint, or no spec known
here: said plainly, with where it looked or the path to set. A job this console did not submit opens as its
cluster gives it back (its own job file, ``Backend.native_resubmission``), sent with the options it ran with."""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

import yaml

from yanflow_tui import resume
from yanflow_tui.errors import YanflowError
from yanflow_tui.formfields import FormField, split_data
from yanflow_tui.hub import error_text
from yanflow_tui.locations import job_file_path, private_file
from yanflow_tui.model import Job, JobSpec
from yanflow_tui.spec import spec_to_data

if TYPE_CHECKING:
    from yanflow_tui.app import YanflowApp
    from yanflow_tui.backends.base import Capabilities

HEADER = "# YanFlow: job {job} on {cluster} resumed from its newest checkpoint ({env} set in env)\n"


def can_find_checkpoints(caps: Capabilities) -> bool:
    """Whether a cluster can find its jobs' checkpoints: their files, or checkpoints of its own."""
    return caps.files or caps.checkpoints


async def resume_job(app: YanflowApp, job: Job) -> None:
    """Find ``job``'s newest checkpoint, then open the Submit form on its spec resuming from it."""
    from yanflow_tui.screens.submit.screen import SubmitScreen

    backend = app.hub.backend(job.cluster)
    app.notify(f"resume: looking for job {job.id}'s newest checkpoint…", timeout=3, markup=False)
    try:
        plan = await app.hub.call(resume.plan(backend, job.id))
    except (YanflowError, OSError) as exc:
        title = "Resume: no checkpoint" if isinstance(exc, resume.NoCheckpoint) else "Resume"
        app.report_error(title, error_text(exc))
        return
    if plan.spec is None:
        app.report_error("Resume", f"checkpoint found: {plan.found.path}\n{plan.why_no_spec}")
        return
    native = plan.spec.native
    if native is not None:  # the job as its cluster holds it (not submitted from here): its own file
        path = job_file_path(f"{job.cluster}-{job.id}-resume-{native.file}")
        await asyncio.to_thread(private_file, path, native.text)
        values = given_back_values(plan.spec, backend.form_fields(plan.spec.kind))
    else:
        text = HEADER.format(job=job.id, cluster=job.cluster, env=resume.RESUME_ENV)
        text += yaml.safe_dump(spec_to_data(plan.spec), sort_keys=False, allow_unicode=True)
        path = job_file_path(f"{job.cluster}-{job.id}-resume.yaml")
        await asyncio.to_thread(private_file, path, text)
        values = {}
    app.open_in_submit(str(path), values, job.cluster)
    screen = app.screen
    if isinstance(screen, SubmitScreen):
        screen.resume_note = partial(note_for, app, plan)
        screen.before_submit = partial(carry_first, app, plan)
    app.notify(f"resume from {plan.found.path}", timeout=4, markup=False)


def given_back_values(spec: JobSpec, fields: Sequence[FormField]) -> dict[str, str]:
    """The form's texts where a job given back by its cluster (``spec.native``) differs from its file's
    own lines (its environment with the checkpoint), set over the file in the form."""
    written = spec.native.written if spec.native is not None else None
    now = split_data(spec_to_data(spec), fields)[0]
    was = split_data(spec_to_data(written), fields)[0] if written is not None else {}
    return {key: text for key, text in now.items() if was.get(key) != text}


def with_recorded(plan: resume.Plan, spec: JobSpec, cluster: str) -> JobSpec:
    """The form's spec sent with the options the job ran with (``NativeFile.recorded``), on its own cluster."""
    given = plan.spec.native if plan.spec is not None else None
    native = spec.native
    if given is None or not given.recorded or native is None or native.kind != given.kind or cluster != plan.cluster:
        return spec
    return replace(spec, native=replace(native, recorded=given.recorded))


def note_for(app: YanflowApp, plan: resume.Plan, cluster: str) -> str:
    """What the Submit form says of the resume while it is for ``cluster``."""
    found, source = plan.found, plan.cluster
    said = f"resuming job {plan.job_id} of {source} from {found.path} ({found.what})"
    given = plan.spec.native if plan.spec is not None else None
    if given is not None and given.recorded and (not cluster or cluster == source):
        ran = shlex.join(f"--{key}={value}" for key, value in given.recorded)
        said += f"; sent as {source} holds it, with the options it ran with: {ran}"
    if not cluster or cluster == source:
        return said
    move = resume.move_for(app.hub.backend(source), app.hub.backend(cluster), plan.job_id, found)
    if move.how == "none":
        return f"{said}; {move.say}"
    if move.how == "copy":
        return f"{said}. On {cluster}: {move.say} when you submit, and {resume.RESUME_ENV} set to its path there"
    return f"{said}. On {cluster}: {move.say}"


async def carry_first(app: YanflowApp, plan: resume.Plan, spec: JobSpec, cluster: str) -> JobSpec:
    """Before the form's submit: on another cluster that shares no storage, the checkpoint copied there
    (``resume.carry``) and the spec resuming from that copy. Left as it is where nothing must move, where
    only the user can copy it (the note said what), or where the user changed the path in the form. A job
    given back by its cluster goes with the options it ran with (``with_recorded``)."""
    spec = with_recorded(plan, spec, cluster)
    if cluster == plan.cluster or spec.env.get(resume.RESUME_ENV) != plan.found.path:
        return spec
    source, target = app.hub.backend(plan.cluster), app.hub.backend(cluster)
    move = resume.move_for(source, target, plan.job_id, plan.found)
    if move.how != "copy":
        return spec
    app.notify(f"copying {plan.found.path} to {cluster}…", timeout=4, markup=False)
    path = await resume.carry(source, plan.job_id, plan.found, target, move.dest)
    app.notify(f"copied to {cluster}:{path}", timeout=4, markup=False)
    return resume.resumed(spec, path, cluster)
