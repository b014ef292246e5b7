"""Training curves from TensorBoard event files: the model (tag -> points of step, wall time, value),
TensorBoard's smoothing, where a job's log directory is, and ``CurveReader``, which feeds only the
bytes appended to each event file since the last read to TensorBoard's own loader.

The bytes come from the job's backend (``Backend.event_files`` lists ``EventFile`` entries,
``Backend.read_event_bytes`` reads one from an offset), so a file on a cluster is read the same way
as one on this machine. Each file's bytes go to a private mirror file that one
``tensorboard.backend.event_processing.event_file_loader.LegacyEventFileLoader`` reads; the loader
keeps its own position and holds back a partial trailing record until the rest of it arrives. A file
found shorter than what was read, or with another identity (a new inode), is read again from 0.

The mirror keeps the log directory's layout (RUN/BASENAME). When a reader's first read is large
(``FAST_MIN_BYTES``) and TensorBoard's Rust data server is installed, the reader switches for good to
the fast path (``curves_fast``): the server tails the mirror itself and the reader asks it for every
scalar after each refresh; if the server fails, the reader falls back to the Python loader over the
mirror files it already has (nothing is read again from the backend). The fast path shows what
TensorBoard shows: a step not above a tag's last one drops the tag's points from that step on (a
restarted job), values are float32, and events with a non-finite wall time are left out; tags are
ordered by run, then by their first point's wall time.

``tensorboard`` is an optional extra (``[tensorboard]``; ``installs.extra_command`` gives the command), imported
only when a reader parses its first bytes; without it ``TensorBoardMissing`` says how to install it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import operator
import os
import posixpath
import shutil
import tempfile
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from yanflow_tui import curves_fast
from yanflow_tui.errors import BackendError
from yanflow_tui.speed import collector_off

EVENT_PREFIX = "events.out.tfevents."  # what TensorBoard's writers name their files
DEFAULT_SUBDIR = "tb"  # the log directory when the spec names none: WORKDIR/tb
LOGDIR_ENV = "YANFLOW_TB_LOGDIR"  # set for the job, so the training code can write where the console reads
SECTION = "tensorboard"  # the spec's ``tensorboard: {logdir: ...}`` section
SECTION_KEYS = {"logdir": "text"}
READ_LIMIT = 64 * 2**20  # bytes asked of a backend in one read
FAST_MIN_BYTES = 4 * 2**20  # a first read this large goes to the data server (~90k events, ~2 s in Python)
SMOOTHING_WEIGHTS = (0.0, 0.6, 0.9, 0.99)
EXTRA = "tensorboard"  # the extra that installs it (``installs.extra_command`` says how, for this install)


class TensorBoardMissing(BackendError):
    """The optional ``tensorboard`` package, which reads event files, is not installed."""

    def __init__(self) -> None:
        from yanflow_tui.installs import extra_command

        super().__init__(f"reading TensorBoard event files needs the tensorboard package: {extra_command(EXTRA)}")


class CurvePoint(NamedTuple):
    """One scalar of one tag (a named tuple: a million of them are made in one read)."""

    step: int
    wall_time: float
    value: float


@dataclass
class Curves:
    """The scalars of a job's event files: tag -> points, in the order the files hold them. A tag of
    an event file in a subdirectory of the log directory (a TensorBoard "run") is ``RUN/TAG``."""

    series: dict[str, list[CurvePoint]] = field(default_factory=dict)

    @property
    def tags(self) -> list[str]:
        return list(self.series)

    def to_json(self) -> dict[str, list[dict[str, float | None]]]:
        return {
            tag: [
                {"step": p.step, "wall_time": p.wall_time if math.isfinite(p.wall_time) else None, "value": p.value}
                for p in points
            ]
            for tag, points in self.series.items()
        }


@dataclass(frozen=True)
class EventFile:
    """One event file as a backend lists it: its path, its size now, and what tells a file replaced
    under the same name apart (an inode number; "" where none is known)."""

    path: str
    size: int
    identity: str = ""


@dataclass(frozen=True)
class EventListing:
    logdir: str
    files: tuple[EventFile, ...]


def is_event_file(name: str) -> bool:
    return name.startswith(EVENT_PREFIX) and not name.endswith((".tmp", ".part"))


def logdir_for(section: Mapping[str, Any] | None, workdir: str) -> str:
    """A job's log directory: the spec's ``tensorboard.logdir`` (relative to the workdir), else
    WORKDIR/tb. POSIX paths: it may name a directory on a cluster."""
    logdir = str((section or {}).get("logdir") or "")
    if logdir.startswith("/"):
        return posixpath.normpath(logdir)
    return posixpath.normpath(posixpath.join(workdir or ".", logdir or DEFAULT_SUBDIR))


def smooth(values: Sequence[float], weight: float) -> list[float]:
    """TensorBoard's scalar smoothing (its frontend's ``classicSmoothing``): a debiased exponential
    moving average; non-finite values and constant series pass through unchanged."""
    if not math.isfinite(weight):
        weight = 0.0
    weight = max(0.0, min(weight, 1.0))
    if not values:
        return []
    first = values[0]
    if weight == 0.0 or all(v == first for v in values):
        return list(values)
    out: list[float] = []
    append = out.append
    last, count = 0.0, 0
    if weight != 1 and math.isfinite(sum(values)):  # all finite: one multiply per point, not a power
        keep, decay = 1 - weight, 1.0
        for value in values:
            last = last * weight + keep * value
            decay *= weight
            append(last / (1 - decay))
        return out
    for value in values:
        if not math.isfinite(value):
            out.append(value)
            continue
        last = last * weight + (1 - weight) * value
        count += 1
        out.append(last / (1 - weight**count) if weight != 1 else last)
    return out


@dataclass(frozen=True)
class Stats:
    minimum: float
    maximum: float
    last: float
    count: int


_value = operator.itemgetter(2)


def stats(points: Sequence[CurvePoint]) -> Stats | None:
    finite = [v for v in map(_value, points) if math.isfinite(v)]
    if not finite:
        return None
    return Stats(min(finite), max(finite), points[-1].value, len(points))


class EventSource(Protocol):
    """What a ``CurveReader`` reads from: a backend with ``capabilities.event_files``."""

    async def event_files(self, job_id: str) -> EventListing: ...

    async def read_event_bytes(self, job_id: str, path: str, offset: int, limit: int) -> tuple[int, bytes]: ...


def _loader_class() -> type:
    try:
        from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader
    except ImportError:
        raise TensorBoardMissing() from None
    _c_crc32c()
    return LegacyEventFileLoader


def _c_crc32c() -> None:
    """Without TensorFlow, TensorBoard's record reader checks each record with a pure-Python CRC32C
    (its stub's ``crc32c``); where ``google_crc32c`` (C) is installed, the stub uses it instead: the
    same checksums, a third less time per event. Checked on a known value before it is swapped in."""
    try:
        import google_crc32c
        from tensorboard.compat.tensorflow_stub import pywrap_tensorflow as stub
    except ImportError:
        return
    if getattr(stub.crc32c, "yanflow_c", False):
        return

    def crc32c(data: bytes | bytearray | memoryview) -> int:
        return google_crc32c.value(bytes(data))

    crc32c.yanflow_c = True  # type: ignore[attr-defined]
    if crc32c(b"123456789") == stub.crc32c(b"123456789") == 0xE3069283:
        stub.crc32c = crc32c


def _scalar_value(value: Any, scalar_tags: set[str]) -> float | None:
    """The float of one summary value that TensorBoard shows as a scalar: a ``simple_value``, or a
    one-element tensor of a tag whose metadata names the scalars plugin (as in tensorboard's own
    ``data_compat`` / ``dataclass_compat``)."""
    kind = value.WhichOneof("value")
    if kind == "simple_value":
        return float(value.simple_value)
    if value.HasField("metadata") and value.metadata.plugin_data.plugin_name == "scalars":
        scalar_tags.add(value.tag)
    if kind == "tensor" and value.tag in scalar_tags:
        from tensorboard.util import tensor_util

        array = tensor_util.make_ndarray(value.tensor)
        if array.size == 1:
            return float(array.reshape(()).item())
    return None


def _points(steps: Iterable[int], wall_times: Iterable[float], values: Iterable[float]) -> list[CurvePoint]:
    """Columns as points, made in C (``tuple.__new__`` over ``zip``): a third of the time of
    calling the named tuple's ``__new__`` a million times."""
    with collector_off():
        return list(map(tuple.__new__, itertools.repeat(CurvePoint), zip(steps, wall_times, values)))


class _FileState:
    def __init__(self, path: str, run: str, mirror: str, identity: str) -> None:
        self.path = path
        self.run = run  # the file's directory relative to the log directory ("" at its top)
        self.mirror = mirror
        self.identity = identity
        self.offset = 0  # bytes of the source handed to the loader
        self.loader: Any = None
        self.scalar_tags: set[str] = set()
        self.series: dict[str, list[CurvePoint]] = {}


class CurveReader:
    """The curves of one job's log directory, read incrementally. ``refresh`` reads only what each
    file gained since the last call; ``reads`` records every (path, offset, bytes) read, for tests
    and the benchmark. Call ``close`` (or drop it) to stop its data server and remove its mirror.

    ``fast``: None picks the path at the first refresh (the data server for a large first read),
    True the data server, False TensorBoard's Python loader. ``path`` says which one reads now and
    ``fallback`` why the data server was left, if it was."""

    def __init__(self, fast: bool | None = None) -> None:
        self.logdir = ""
        self.files: dict[str, _FileState] = {}
        self.reads: list[tuple[str, int, int]] = []
        self.fast = fast
        self.path = "python" if fast is False else ""  # "python" or "server" once chosen
        self.fallback = ""
        self._dir = tempfile.mkdtemp(prefix="yanflow-curves-")
        self._mirror = os.path.join(self._dir, "logdir")
        os.mkdir(self._mirror)
        self._finalizer = weakref.finalize(self, shutil.rmtree, self._dir, True)
        self._count = 0
        self._server: curves_fast.DataServer | None = None
        self._runs: dict[str, dict[str, list[CurvePoint]]] = {}  # the fast path's points, run -> tag
        self._dirty: set[str] = set()  # runs whose mirror files grew since the server was last asked

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        self._finalizer()

    @property
    def curves(self) -> Curves:
        """Every file's points, tag by tag, the files in path order (their names start with the time
        they were opened), as TensorBoard joins the files of a run."""
        out: dict[str, list[CurvePoint]] = {}
        if self.path == "server":
            first = {}
            for path in sorted(self.files, reverse=True):
                first[self.files[path].run] = path
            for run in sorted(self._runs, key=lambda r: first.get(r, "")):
                prefix = f"{run}/" if run else ""
                tags = self._runs[run]
                for tag in sorted(tags, key=lambda t: (tags[t][0].wall_time if tags[t] else math.inf, t)):
                    out[prefix + tag] = list(tags[tag])
            return Curves(out)
        for path in sorted(self.files):
            for tag, points in self.files[path].series.items():
                out.setdefault(tag, []).extend(points)
        return Curves(out)

    # -- feeding bytes (no I/O but the mirror files) ---------------------------------------------
    def _mirror_path(self, run: str, path: str) -> str:
        parts = [p for p in run.split("/") if p not in ("", ".")]
        if ".." in parts:  # a file outside the log directory (fed directly): a run of its own
            parts = [f"_{self._count}"]
        directory = os.path.join(self._mirror, *parts)
        os.makedirs(directory, exist_ok=True)
        mirror = os.path.join(directory, posixpath.basename(path))
        if not posixpath.basename(path).startswith(EVENT_PREFIX) or os.path.exists(mirror):
            mirror = os.path.join(directory, f"{EVENT_PREFIX}{self._count}")
        return mirror

    def _state(self, path: str, identity: str = "") -> _FileState:
        state = self.files.get(path)
        if state is not None and identity and state.identity and identity != state.identity:
            self._forget(state)
            state = None
        if state is None:
            self._count += 1
            relative = posixpath.relpath(posixpath.dirname(path), self.logdir) if self.logdir else "."
            run = "" if relative in (".", "") else relative
            mirror = self._mirror_path(run, path)
            state = _FileState(path, run, mirror, identity)
            open(mirror, "wb").close()
            self.files[path] = state
        return state

    def _forget(self, state: _FileState) -> None:
        """A file replaced or truncated: drop what it gave; it is read again from 0. The data server
        keeps what it read of a file, so it is started again over the mirror."""
        self.files.pop(state.path, None)
        with contextlib.suppress(OSError):
            os.unlink(state.mirror)
        if self._server is not None:
            self._server.close()
            self._server = None
            self._dirty.update(s.run for s in self.files.values())
        self._runs.pop(state.run, None)
        self._dirty.add(state.run)

    def offset(self, path: str) -> int:
        state = self.files.get(path)
        return state.offset if state is not None else 0

    def feed(self, path: str, start: int, data: bytes, identity: str = "") -> int:
        """Hand ``data``, the bytes of ``path`` from offset ``start``, to its loader; returns the number
        of new scalar points. ``start`` 0 for a file read before restarts it (truncated or replaced).
        On the fast path the bytes only go to the mirror; ``load`` asks the server."""
        state = self._state(path, identity)
        if start != state.offset:
            if start != 0:
                raise ValueError(f"{path}: bytes from {start}, but {state.offset} were read")
            self._forget(state)
            state = self._state(path, identity)
        if data:
            with open(state.mirror, "ab") as out:
                out.write(data)
            state.offset += len(data)
            self._dirty.add(state.run)
        if self.path == "server":
            return 0
        return self._load(state)

    def load(self) -> int:
        """The fast path: wait for the data server to read what the mirror gained, then take the
        points of the runs that grew; returns the number of new points. On a server failure the
        reader falls back, for good, to the Python loader over the mirror files."""
        if self.path != "server" or not self._dirty:
            return 0
        runs = {run: os.path.dirname(s.mirror) for s in self.files.values() for run in (s.run,) if run in self._dirty}
        before = sum(len(p) for run in runs for p in self._runs.get(run, {}).values())
        try:
            if self._server is None:
                self._server = curves_fast.DataServer(self._mirror, self._dir)
            self._server.sync(runs)
            found = self._server.read(sorted(runs))
        except (curves_fast.DataServerError, OSError) as exc:
            return self._fall_back(str(exc))
        self._dirty.clear()
        after = 0
        for run, tags in found.items():
            self._runs[run] = {tag: _points(*columns) for tag, columns in tags.items()}
            after += sum(len(p) for p in self._runs[run].values())
        return after - before

    def _fall_back(self, reason: str) -> int:
        self.fallback = reason
        self.path = "python"
        if self._server is not None:
            self._server.close()
            self._server = None
        self._runs.clear()
        self._dirty.clear()
        return sum(self._load(state) for _, state in sorted(self.files.items()))

    def _choose(self, pending: int) -> None:
        if self.path:
            return
        if self.fast or (self.fast is None and pending >= FAST_MIN_BYTES):
            if curves_fast.server_binary() is not None:
                self.path = "server"
                return
            self.fallback = "TensorBoard's data server (tensorboard_data_server) is not installed"
        self.path = "python"

    def _load(self, state: _FileState) -> int:
        if state.loader is None:
            if state.offset == 0:
                return 0
            state.loader = _loader_class()(state.mirror)
        with collector_off():
            return self._load_events(state)

    def _load_events(self, state: _FileState) -> int:
        added = 0
        series = state.series
        prefix = f"{state.run}/" if state.run else ""
        for event in state.loader.Load():  # ends at a partial record; the next call resumes there
            if not event.HasField("summary"):
                continue
            for value in event.summary.value:
                number = _scalar_value(value, state.scalar_tags)
                if number is None:
                    continue
                tag = prefix + value.tag
                points = series.get(tag)
                if points is None:
                    points = series[tag] = []
                points.append(CurvePoint(int(event.step), float(event.wall_time), number))
                added += 1
        return added

    # -- reading from a backend ------------------------------------------------------------------
    def plan(self, listing: EventListing) -> list[tuple[EventFile, int]]:
        """(file, offset to read from) for each listed file with bytes not read yet; a file now
        shorter than what was read, or with another identity, is forgotten and read from 0."""
        self.logdir = listing.logdir
        plan = []
        for entry in sorted(listing.files, key=lambda f: f.path):
            state = self.files.get(entry.path)
            if state is not None and (
                entry.size < state.offset or (entry.identity and state.identity and entry.identity != state.identity)
            ):
                self._forget(state)
                state = None
            offset = state.offset if state is not None else 0
            if entry.size > offset:
                plan.append((entry, offset))
        return plan

    async def refresh(
        self,
        source: EventSource,
        job_id: str,
        parse: Callable[..., Awaitable[Any]] | None = None,
        call: Callable[[Awaitable[Any]], Awaitable[Any]] | None = None,
    ) -> int:
        """Read what the job's event files gained and parse it; returns the number of new points.
        ``call(awaitable)`` awaits each backend call (e.g. with a timeout); ``parse(function, *args)``
        runs the parsing (e.g. ``asyncio.to_thread``, unbounded: a large file takes its time)."""

        async def direct(awaitable: Awaitable[Any]) -> Any:
            return await awaitable

        call = call or direct
        listing = await call(source.event_files(job_id))
        added = 0
        plan = self.plan(listing)
        self._choose(sum(entry.size - offset for entry, offset in plan))
        for entry, offset in plan:
            while offset < entry.size:
                start, data = await call(
                    source.read_event_bytes(job_id, entry.path, offset, min(READ_LIMIT, entry.size - offset))
                )
                self.reads.append((entry.path, start, len(data)))
                if parse is None:
                    added += self.feed(entry.path, start, data, entry.identity)
                else:
                    added += await parse(self.feed, entry.path, start, data, entry.identity)
                if not data:
                    break
                offset = start + len(data)
        if self.path == "server":
            added += self.load() if parse is None else await parse(self.load)
        return added


def from_metric_points(points: Iterable[Any]) -> Curves:
    """A backend's reported metrics (``MetricPoint``: Determined's trial metrics) as curves with no
    wall time (NaN), tag ``GROUP.NAME``."""
    out = Curves()
    for point in points:
        out.series.setdefault(f"{point.group}.{point.name}", []).append(
            CurvePoint(int(point.step), math.nan, float(point.value))
        )
    return out


async def job_curves(backend: Any, job_id: str, timeout: float) -> Curves:
    """Every curve of a job, read once: its event files where the backend reads them (each call
    bounded by ``timeout``), else the metrics it reports."""
    caps = backend.capabilities
    if caps.event_files:
        reader = CurveReader()
        try:
            await reader.refresh(
                backend, job_id, parse=asyncio.to_thread, call=lambda awaitable: asyncio.wait_for(awaitable, timeout)
            )
            return reader.curves
        finally:
            reader.close()
    if caps.metrics:
        return from_metric_points(await asyncio.wait_for(backend.metrics(job_id), timeout))
    why = caps.why_off("event_files")
    raise BackendError(f"cluster {backend.name!r} has no curves for its jobs" + (f": they are {why}" if why else ""))


def _num(value: float) -> str:
    return f"{value:.6g}"


def summary_lines(curves: Curves) -> list[str]:
    """One line per tag: its point count, min, max and last value (at its step)."""
    if not curves.series:
        return ["no scalars yet"]
    width = max(len(tag) for tag in curves.series)
    lines = []
    for tag, points in curves.series.items():
        found = stats(points)
        if found is None:
            lines.append(f"{tag:<{width}}  {len(points)} points, none finite")
            continue
        lines.append(
            f"{tag:<{width}}  {found.count} points  min {_num(found.minimum)}  max {_num(found.maximum)}"
            f"  last {_num(found.last)} (step {points[-1].step})"
        )
    return lines
