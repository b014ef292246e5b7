"""The last known state of each cluster, kept between runs so that the console paints at once.

At exit the app writes every cluster's last good snapshot (its jobs, nodes, health and when it was
taken) to one private JSON file (mode 0600, atomic, in the state dir); at start it reads it back and
the hub shows it marked ``cached`` until that cluster's first refresh replaces it. The file holds only
what the screens showed (what a read-only user of the cluster sees), never the config: no token,
password, key or option. A file from another format or yanflow version is ignored with a one-line
note; one that cannot be read or used (too deep, too big, not JSON, not the expected types, not a
regular file, unreadable) is ignored with a one-line note too and set aside (``NAME.bad``, mode
0600), so that it never stops a start, nor the next one. No Textual here.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields, replace
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from yanflow_tui import __version__
from yanflow_tui.locations import CLOEXEC, NOFOLLOW, private_file, state_dir
from yanflow_tui.model import Gpu, GpuState, Job, JobKind, JobState, Node, intern_all
from yanflow_tui.sanitize import clean
from yanflow_tui.speed import collector_off

if TYPE_CHECKING:  # the hub (and the backends' clients it loads) is imported after the early paint
    from yanflow_tui.hub import ClusterSnapshot, Hub

log = logging.getLogger(__name__)

FORMAT = 1
FILE_NAME = "snapshot.json"
MAX_BYTES = 512 * 1024 * 1024  # a bigger file is not ours: set aside
PAINT_MAX_BYTES = 64 * 1024 * 1024  # the digest: a few screenfuls per cluster
BAD_SUFFIX = ".bad"
# What reading and using a cache file may raise when the file is not one we can use: a nesting deeper
# than the parser's recursion (RecursionError), a size that does not fit (MemoryError)...
UNUSABLE = (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError, MemoryError)


def default_path() -> Path:
    return state_dir() / FILE_NAME


@dataclass(frozen=True)
class Cached:
    """One cluster's state as read back from the file."""

    kind: str
    health: str
    updated: float
    jobs: tuple[Job, ...]
    nodes: tuple[Node, ...]
    user: str = ""  # who "mine" was there (``Backend.current_user``; "" unknown)


# -- writing -----------------------------------------------------------------------------------------
def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):  # JobState, JobKind, GpuState, Health
        return value.value
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, (Gpu, Node, Job)):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    return value


def encode(snapshots: Iterable[ClusterSnapshot], saved: float, users: dict[str, str] | None = None) -> bytes:
    """The file's bytes: each cluster that has had a good refresh (a cached one keeps its own age), with
    who "mine" was there (``users``: ``Backend.current_user``, "" unknown; the early paint's "mine")."""
    return json.dumps(_document(snapshots, saved, users or {}), separators=(",", ":")).encode()


def _document(snapshots: Iterable[ClusterSnapshot], saved: float, users: dict[str, str]) -> dict:
    clusters = {
        snap.name: {
            "kind": snap.kind,
            "health": snap.health.value,
            "updated": snap.updated,
            "user": users.get(snap.name, ""),
            "jobs": [_plain(job) for job in snap.jobs],
            "nodes": [_plain(node) for node in snap.nodes],
        }
        for snap in snapshots
        if snap.updated is not None
    }
    return {"format": FORMAT, "yanflow": __version__, "saved": saved, "clusters": clusters}


def save(path: Path, snapshots: Iterable[ClusterSnapshot], saved: float, users: dict[str, str] | None = None) -> None:
    """Write the file atomically, mode 0600 (``locations.private_file``)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    doc = _document(snapshots, saved, users or {})
    private_file(path, json.dumps(doc, separators=(",", ":")).encode())
    _save_paint(path, doc)


# -- the early paint's digest ------------------------------------------------------------------------
# Beside the file, what the first paint needs of it (``earlypaint.digest``: a screenful of rows per
# cluster and view, counts, widths), so that a start paints after reading a few kilobytes. It names
# the file it was made from (size and mtime): a digest of another version of it is not used.
PAINT_FILE = "firstpaint.json"


def _stamp(path: Path) -> list[int]:
    st = os.stat(path, follow_symlinks=False)
    return [st.st_size, st.st_mtime_ns]


def _save_paint(path: Path, doc: dict) -> None:
    from yanflow_tui.earlypaint import digest

    made = {"format": FORMAT, "yanflow": __version__, "of": _stamp(path), **digest(doc)}
    private_file(path.with_name(PAINT_FILE), json.dumps(made, separators=(",", ":")).encode())


def read_paint(path: Path) -> tuple[dict | None, str]:
    """The digest beside the snapshot file ``path``, when it was made from that very file and by this
    version (None otherwise: no early paint, the console paints the snapshot itself a moment later),
    and a one-line note ("" when all is well): a digest that cannot be read is set aside."""
    made_path = path.with_name(PAINT_FILE)
    try:
        data = _read_bytes(made_path, PAINT_MAX_BYTES)
        if data is None:
            return None, ""
        made = _parse(data)
        if not isinstance(made, dict):
            raise ValueError("not a first-paint file")
    except UNUSABLE as exc:
        return None, set_aside(made_path, "cached first paint", exc)
    if made.get("format") != FORMAT or made.get("yanflow") != __version__:
        return None, ""
    try:
        return (made if made.get("of") == _stamp(path) else None), ""
    except OSError:  # no snapshot file: the digest is of nothing
        return None, ""


# -- a file that cannot be used ----------------------------------------------------------------------
class OtherVersion(ValueError):
    """A file written by another format or yanflow version: ignored, not set aside (the next exit
    writes over it)."""


def _read_bytes(path: Path, limit: int) -> bytes | None:
    """The bytes of the regular file ``path``, None when there is none; ``OSError`` / ``ValueError``
    when there is something else there (a symlink, a folder, a pipe, which would hold the start: it
    is opened without blocking), or something bigger than ``limit``, or it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW | CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file")
        if st.st_size > limit:
            raise ValueError(f"too big ({st.st_size} bytes)")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise ValueError("too big")
    return data


def _why(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if isinstance(exc, MemoryError):
        return "too big to read"
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return str(exc) or type(exc).__name__


def set_aside(path: Path, what: str, exc: BaseException) -> str:
    """Move the cache file ``path`` that could not be used out of the way (``NAME.bad``, mode 0600,
    replacing an older one), so that no later start meets it; the one-line note that says so."""
    bad = path.with_name(path.name + BAD_SUFFIX)
    note = f"{what} ignored: {_why(exc)}"
    try:
        os.replace(path, bad)
    except OSError as failed:
        note += f" (could not set it aside: {failed.strerror or failed})"
    else:
        note += f"; set aside as {bad.name}"
        try:
            if stat.S_ISREG(os.lstat(bad).st_mode):
                os.chmod(bad, 0o600)
        except OSError:
            pass
    return clean(note)


# -- reading -----------------------------------------------------------------------------------------
# The enums by value: a dict lookup is cheaper than calling the enum (``JobState(value)``), twice per job
# before the first paint. An unknown value is a KeyError: the file is corrupt.
_JOB_STATES = {s.value: s for s in JobState}
_JOB_KINDS = {k.value: k for k in JobKind}
_GPU_STATES = {s.value: s for s in GpuState}


_JOB_FIELDS = len(fields(Job))
_NODE_FIELDS = len(fields(Node))
_GPU_FIELDS = len(fields(Gpu))


def _reader() -> tuple[Callable[[dict], Job], Callable[[dict], Node]]:
    """The readers of one file's jobs and nodes. Fields are passed by position (``**`` and a merged
    dict per object cost more than the object itself); a record with a field missing (KeyError) or
    one too many (its length) is corrupt, as the keyword call had it. Equal times are read once and
    shared (array members, one submission), like the interned words."""
    times: dict[str, datetime] = {}
    states, kinds, gpu_states = _JOB_STATES, _JOB_KINDS, _GPU_STATES
    parse = datetime.fromisoformat

    def when(value: str | None) -> datetime | None:
        if value is None:
            return None
        stamp = times.get(value)
        if stamp is None:
            stamp = times[value] = parse(value)
        return stamp

    def job(d: dict) -> Job:
        if len(d) != _JOB_FIELDS:
            raise ValueError(f"a job with {len(d)} fields")
        details = d["details"]
        return Job(
            d["id"],
            d["cluster"],
            d["name"],
            d["user"],
            states[d["state"]],
            d["raw_state"],
            d["reason"],
            tuple(d["nodes"]),
            d["gpus"],
            when(d["submit_time"]),
            when(d["start_time"]),
            when(d["end_time"]),
            kinds[d["kind"]],
            d["exit_code"],
            d["command"],
            tuple(d["gpu_indices"]),
            d["parent"],
            tuple([(str(k), str(v)) for k, v in details]) if details else (),
            d["image"],
            d["tasks"],
        )

    def gpu(d: dict) -> Gpu:
        if len(d) != _GPU_FIELDS:
            raise ValueError(f"a GPU with {len(d)} fields")
        return Gpu(
            d["index"],
            gpu_states[d["state"]],
            d["job_id"],
            d["uuid"],
            d["name"],
            d["utilization"],
            d["memory_used_mb"],
            d["memory_total_mb"],
            d["reason"],
        )

    def node(d: dict) -> Node:
        if len(d) != _NODE_FIELDS:
            raise ValueError(f"a node with {len(d)} fields")
        return Node(
            d["cluster"],
            d["name"],
            d["state"],
            intern_all(d["partitions"]),
            d["cpus_total"],
            d["cpus_allocated"],
            d["memory_mb"],
            d["memory_allocated_mb"],
            d["gpu_type"],
            d["gpus_total"],
            d["gpus_allocated"],
            tuple([gpu(g) for g in d["gpus"]]),
            d["reason"],
        )

    return job, node


def decode(data: bytes) -> dict[str, Cached]:
    """The clusters in the file; raises ``ValueError`` when it is corrupt or not this version's."""
    return build(parse(data))


def parse(data: bytes) -> dict:
    """The file's document (plain JSON: what ``earlypaint`` draws from, before ``build``); raises
    ``ValueError`` when it is not JSON or not this version's."""
    with collector_off():  # the document is acyclic (refcounting frees it): a collection would only cost
        doc = _parse(data)
    if not isinstance(doc, dict):
        raise ValueError("not a snapshot file")
    if doc.get("format") != FORMAT or doc.get("yanflow") != __version__:
        raise OtherVersion(f"written by yanflow {doc.get('yanflow')!s} (format {doc.get('format')!s})")
    return doc


def _parse(data: bytes) -> Any:
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not JSON ({exc})") from None
    except RecursionError:  # ``[`` x 100,000
        raise ValueError("not JSON (nested too deeply)") from None


def build(doc: dict) -> dict[str, Cached]:
    """The clusters of a ``parse``d document; raises ``ValueError`` when it is corrupt."""
    with collector_off():  # the objects made all live on: collections while making them cost ~35%
        return _build(doc)


def _build(doc: dict) -> dict[str, Cached]:
    try:
        job, node = _reader()
        return {
            str(name): Cached(
                kind=str(c["kind"]),
                health=str(c["health"]),
                updated=float(c["updated"]),
                jobs=tuple([job(j) for j in c["jobs"]]),
                nodes=tuple([node(n) for n in c["nodes"]]),
                user=str(c.get("user") or ""),
            )
            for name, c in doc["clusters"].items()
        }
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        raise ValueError(f"corrupt ({type(exc).__name__}: {exc})") from None


def read(path: Path) -> tuple[dict | None, str]:
    """The file's ``parse``d document (None when there is none to use) and a one-line note ("" when
    all is well or there is no file yet). Never raises: a file that cannot be used is ignored, the
    note says why, and it is set aside (``set_aside``) unless it is another version's."""
    try:
        data = _read_bytes(path, MAX_BYTES)
        return (None if data is None else parse(data)), ""
    except OtherVersion as exc:
        return None, f"cached snapshot ignored: {exc}"
    except UNUSABLE as exc:
        return None, set_aside(path, "cached snapshot", exc)


def load(path: Path) -> tuple[dict[str, Cached], str]:
    """The file's clusters and a one-line note ("" when all is well or there is no file yet).
    Never raises: a file that cannot be used is ignored (and set aside) and the note says why."""
    doc, note = read(path)
    return from_doc(doc, note, path)


def from_doc(doc: dict | None, note: str = "", path: Path | None = None) -> tuple[dict[str, Cached], str]:
    """``load`` of a document ``read`` already (``note``: what ``read`` said); a corrupt one is set
    aside when its ``path`` is given."""
    if doc is None:
        return {}, note
    try:
        return build(doc), note
    except UNUSABLE as exc:
        if path is None:
            return {}, f"cached snapshot ignored: {_why(exc)}"
        return {}, set_aside(path, "cached snapshot", exc)


def seed(hub: Hub, cached: dict[str, Cached]) -> list[str]:
    """Show each configured cluster's cached state (same name and kind) marked ``cached`` until its
    first refresh; a cluster no longer in the config is not shown. Returns the names seeded."""
    seeded = []
    for name, entry in cached.items():
        snap = hub.snapshots.get(name)
        if snap is None or snap.kind != entry.kind or snap.updated is not None:
            continue
        hub.snapshots[name] = replace(
            snap, updated=entry.updated, jobs=entry.jobs, nodes=entry.nodes, cached=True, cached_user=entry.user
        )
        seeded.append(name)
    return seeded


def restore(hub: Hub, path: Path, doc: tuple[dict | None, str] | None = None) -> str:
    """Read ``path`` into ``hub``; the one-line note to show ("" when none). ``doc``: what ``read``
    returned for ``path`` already (the console reads it before Textual, to paint it at once)."""
    cached, note = from_doc(*doc, path) if doc is not None else load(path)
    if note:
        log.warning("%s (%s)", note, path)
    seed(hub, cached)
    return note


def keep(hub: Hub, path: Path, now: float) -> None:
    """Write each cluster's last good state to ``path``; a failure is logged, never raised."""
    try:
        users = {name: hub.backend(name).current_user for name in hub.names}
        save(path, hub.snapshots.values(), now, users)
    except (OSError, TypeError, ValueError) as exc:
        log.warning("could not keep the snapshot in %s: %s", path, exc)
