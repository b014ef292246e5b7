"""Resume a job from its newest checkpoint, on its cluster or another (no UI: the job detail's and the
Queue's resume key and ``yanflow-tui resume`` share it).

``find`` looks through the job's backend, by capability, never by kind: the spec's ``resume:`` glob, or
the backend's own checkpoints (``capabilities.checkpoints``: Determined), or the job's output folder
(``capabilities.files``: Slurm over its SSH transport, the local filesystem) for the layouts of
``yanflow_tui.checkpoints``. ``plan`` adds the spec the job was submitted with (``submitted``; for a job
this console did not submit, the job as its cluster holds it: ``capabilities.resubmission``), the spec to
send (``RESUME_ENV`` set to the checkpoint) and, for another cluster, what must move: nothing where the
clusters name the same ``storage:``, else a copy through this console (the backend's atomic download
here, then the other cluster's gated ``upload``), else the words saying what to copy."""

from __future__ import annotations

import asyncio
import posixpath
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from yanflow_tui import checkpoints, submitted
from yanflow_tui.backends.base import Backend
from yanflow_tui.checkpoints import Entry, Found
from yanflow_tui.errors import BackendError, NotOffered, YanflowError
from yanflow_tui.model import Checkpoint, JobSpec

RESUME_ENV = "YANFLOW_RESUME_FROM"  # what every template project reads, and resumes from
MOVED_TO = ".yanflow/resume"  # where a copied checkpoint lands on the other cluster (relative to its home)
MAX_LISTINGS = 60  # folders listed for one search at most (each is a round trip on a remote cluster)
LAST_BYTES = 4096
Progress = Callable[[int, int | None], None]


class NoCheckpoint(YanflowError):
    """The job has no checkpoint the console can find (the message says where it looked)."""

    title = "No checkpoint"


@dataclass(frozen=True)
class Search:
    """What ``find`` found (None: nothing) and where it looked, said plainly."""

    found: Found | None
    looked: str


@dataclass(frozen=True)
class Move:
    """What must move for the new job to read the checkpoint: ``how`` is "none" (the same cluster, or
    the same ``storage:``), "copy" (through this console) or "manual" (the user copies it); ``say``
    tells it plainly; ``dest`` is where a copy goes on the other cluster."""

    how: str
    say: str
    dest: str = ""


@dataclass(frozen=True)
class Plan:
    cluster: str  # the job's
    job_id: str
    target: str  # where the new job goes
    found: Found
    spec: JobSpec | None  # the spec to send (the job's own, ``RESUME_ENV`` set); None: not known here
    move: Move
    why_no_spec: str = ""


# -- finding ------------------------------------------------------------------------------------------
async def find(backend: Backend, job_id: str, pattern: str | None = None) -> Search:
    """The job's newest checkpoint. Raises ``NotOffered`` when its cluster can read no file of it."""
    caps = backend.capabilities
    if pattern:
        if not caps.files:
            raise NotOffered(_no_files(backend))
        return await _by_pattern(backend, job_id, pattern)
    if caps.checkpoints:
        listed = await backend.checkpoints(job_id)
        return Search(_backend_checkpoint(listed), f"the checkpoints {backend.name} keeps for job {job_id}")
    if not caps.files:
        raise NotOffered(_no_files(backend))
    return await _by_layout(backend, job_id)


def _no_files(backend: Backend) -> str:
    why = backend.capabilities.why_off("files")
    return f"cluster {backend.name!r} cannot read a job's files, so no checkpoint can be found there" + (
        f" ({why})" if why else ""
    )


def _backend_checkpoint(listed: list[Checkpoint]) -> Found | None:
    kept = [c for c in listed if c.state.upper() in ("", "COMPLETED", "ACTIVE")] or listed
    if not kept:
        return None
    best = max(kept, key=lambda c: (c.steps or 0, c.time.timestamp() if c.time else 0.0))
    steps = f" (steps {best.steps})" if best.steps is not None else ""
    return Found(best.uuid, "checkpoints", f"checkpoint {best.uuid}{steps}", True, best.size_bytes, best.time, best)


async def _list(backend: Backend, job_id: str, relative: str) -> list[Entry] | None:
    """A folder's entries (None: it is not there, or cannot be listed)."""
    try:
        listing = await backend.list_files(job_id, relative)
    except BackendError:
        if not relative:
            raise
        return None
    base = relative.strip("/")
    return [
        Entry(posixpath.join(base, f.name) if base else f.name, f.path, f.mtime, f.is_dir, f.size)
        for f in listing.files
    ]


async def _root(backend: Backend, job_id: str) -> tuple[str, list[Entry]]:
    listing = await backend.list_files(job_id, "")
    return listing.path, [Entry(f.name, f.path, f.mtime, f.is_dir, f.size) for f in listing.files]


async def _by_layout(backend: Backend, job_id: str) -> Search:
    where, root = await _root(backend, job_id)
    answers: list[Found | None] = []
    by_name = {e.relative: e for e in root}
    if (ckpt := by_name.get(checkpoints.TEMPLATE_DIR)) is not None and ckpt.is_dir:
        answers.append(checkpoints.template(await _list(backend, job_id, ckpt.relative) or []))
    work_dirs = [root] if checkpoints.is_work_dir(root) else []
    if (top := by_name.get(checkpoints.MMENGINE_DIRS)) is not None and top.is_dir:
        for sub in (await _list(backend, job_id, top.relative) or [])[:MAX_LISTINGS]:
            if sub.is_dir:
                entries = await _list(backend, job_id, sub.relative) or []
                if checkpoints.is_work_dir(entries):
                    work_dirs.append(entries)
    for entries in work_dirs:
        last = next((e for e in entries if posixpath.basename(e.relative) == "last_checkpoint"), None)
        text = await _read_text(backend, job_id, last.relative) if last is not None else ""
        answers.append(checkpoints.mmengine(entries, text))
    looked = (
        f"{where}: {checkpoints.TEMPLATE_DIR}/epoch_N* (the template projects), mmengine's last_checkpoint and "
        f"epoch_N.pth (there and in {checkpoints.MMENGINE_DIRS}/*/); a spec's resume: glob names any other layout"
    )
    return Search(checkpoints.newest(answers), looked)


async def _by_pattern(backend: Backend, job_id: str, pattern: str) -> Search:
    where, root = await _root(backend, job_id)
    found, queue, listed = list(root), [e for e in root if e.is_dir], 1
    depth = checkpoints.pattern_depth(pattern)
    while queue and listed < MAX_LISTINGS:
        entry = queue.pop(0)
        if entry.relative.count("/") + 1 >= depth or not checkpoints.may_hold(entry.relative, pattern):
            continue
        listed += 1
        inside = await _list(backend, job_id, entry.relative) or []
        found += inside
        queue += [e for e in inside if e.is_dir]
    return Search(checkpoints.by_pattern(found, pattern), f"{where}: the spec's resume: {pattern}")


async def _read_text(backend: Backend, job_id: str, relative: str) -> str:
    """A small file of the job (``last_checkpoint``), through the backend's own download; "" when it cannot be read."""
    folder = await asyncio.to_thread(tempfile.mkdtemp, prefix="yanflow-read-")
    try:
        target = Path(folder) / "file"
        await backend.download(job_id, relative, target)
        return await asyncio.to_thread(_head, target)
    except (BackendError, OSError):
        return ""
    finally:
        await asyncio.to_thread(shutil.rmtree, folder, True)


def _head(path: Path) -> str:
    with open(path, "rb") as fh:
        return fh.read(LAST_BYTES).decode("utf-8", "replace")


# -- where it goes ----------------------------------------------------------------------------------
def storage(backend: Backend) -> str:
    value = backend.config.options.get("storage")
    return str(value) if value else ""


def moved_path(cluster: str, job_id: str, found: Found) -> str:
    """Where a copied checkpoint lands on the other cluster, relative to the home its commands start in."""
    from yanflow_tui.locations import safe_filename

    name = posixpath.basename(found.path.rstrip("/")) or "checkpoint"
    return posixpath.join(MOVED_TO, safe_filename(f"{cluster}-{job_id}"), safe_filename(name))


def move_for(source: Backend, target: Backend, job_id: str, found: Found) -> Move:
    """What must move for a job on ``target`` to read ``found`` (of ``source``'s job)."""
    if source.name == target.name:
        return Move("none", "")
    shared = storage(source)
    if shared and shared == storage(target):
        return Move(
            "none", f"{source.name} and {target.name} share storage {shared!r}: {found.path} is read where it is"
        )
    size = f" ({found.size} bytes)" if found.size is not None else ""
    fetch = source.capabilities.checkpoints if found.checkpoint is not None else source.capabilities.files
    if fetch and target.capabilities.upload and not target.read_only:
        dest = moved_path(source.name, job_id, found)
        return Move(
            "copy",
            f"{source.name} and {target.name} share no storage: {source.name}:{found.path}{size} is copied through "
            f"this console (downloaded here, checked, then uploaded) to {target.name}:~/{dest}",
            dest,
        )
    why = target.capabilities.why_off("upload") or (
        f"{target.name} is read-only" if target.read_only else f"{target.name} cannot take files from this console"
    )
    return Move(
        "manual",
        f"{source.name} and {target.name} share no storage, and {why}: copy {source.name}:{found.path}{size} to "
        f"{target.name} yourself (e.g. scp -r), then set {RESUME_ENV} to its path there",
    )


def resumed(spec: JobSpec, path: str, cluster: str) -> JobSpec:
    """``spec`` sent to ``cluster`` resuming from ``path`` (``RESUME_ENV`` set, everything else its own)."""
    return replace(spec, env={**spec.env, RESUME_ENV: path}, cluster=cluster)


async def plan(source: Backend, job_id: str, target: Backend | None = None) -> Plan:
    """The job's newest checkpoint, the spec to send and what must move. Raises ``NoCheckpoint``
    (saying where it looked) when there is none."""
    target = target or source
    spec = await asyncio.to_thread(submitted.recall, source.name, job_id)
    search = await find(source, job_id, spec.resume if spec is not None else None)
    if search.found is None:
        raise NoCheckpoint(f"no checkpoint found for job {job_id} on {source.name}: looked in {search.looked}")
    move = move_for(source, target, job_id, search.found)
    if spec is None:
        given, why = await given_back(source, job_id, target, search.found.path)
        return Plan(source.name, job_id, target.name, search.found, given, move, why)
    new = resumed(spec, search.found.path, target.name) if move.how == "none" else spec
    return Plan(source.name, job_id, target.name, search.found, new, move)


async def given_back(source: Backend, job_id: str, target: Backend, path: str) -> tuple[JobSpec | None, str]:
    """A job not submitted from this console (no spec kept): the job as its cluster holds it, to send again
    there with ``RESUME_ENV`` set (``capabilities.resubmission``); else None and why, with what to do."""
    by_hand = f"submit it again with {RESUME_ENV}={path}"
    if not source.capabilities.resubmission:
        return None, (
            f"the spec job {job_id} was submitted with is not known here (it was not submitted from this "
            f"console): {by_hand}"
        )
    if target.name != source.name:
        return None, (
            f"job {job_id} was not submitted from this console: it is sent again as {source.name} holds it, on "
            f"{source.name} only (resume it there); on {target.name}, {by_hand}"
        )
    try:
        spec = await source.native_resubmission(job_id, {RESUME_ENV: path})
    except BackendError as exc:
        return None, f"job {job_id} was not submitted from this console, and {source.name} cannot send it again: {exc}"
    return replace(spec, cluster=source.name), ""


async def carry(
    source: Backend, job_id: str, found: Found, target: Backend, dest: str, progress: Progress | None = None
) -> str:
    """Copy ``found`` from ``source``'s job to ``target`` at ``dest``: downloaded here with the backend's
    atomic download (checked, moved into place only when complete), then uploaded through ``target``'s
    gate. Returns its path on ``target``."""
    folder = await asyncio.to_thread(tempfile.mkdtemp, prefix="yanflow-resume-")
    try:
        local = Path(folder) / (posixpath.basename(found.path.rstrip("/")) or "checkpoint")
        if found.checkpoint is not None:
            local = await source.download_checkpoint(found.checkpoint, local, progress)
        else:
            await source.download(job_id, found.path, local, progress)
        return await target.upload(local, dest)
    finally:
        await asyncio.to_thread(shutil.rmtree, folder, True)
