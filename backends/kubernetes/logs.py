"""Pod log streaming: one thread per pod reads ``/pods/NAME/log`` (with ``follow`` when asked) and
hands lines to the event loop in batches; the async iterator merges them in arrival order, each
tagged with its rank. Crashed or restarted containers' previous logs come first, as the source
``"rank N (previous)"``. Closing the iterator stops every thread (their responses are shut down).

Each pod's log is one container's (``container=``): the job's main stream reads each pod's default
container (the ``kubectl.kubernetes.io/default-container`` annotation's, else the first), and every
other container is a stream of its own, named after it. The cluster's ``log_tail`` / ``log_since``
options limit what is read first (``tailLines`` / ``sinceSeconds``, as ``kubectl logs --tail --since``).

Follow reconnects after a read timeout or a dropped connection from a little before the last
timestamp shown (``timestamps=true`` + ``sinceSeconds``, counted on the server's clock: its ``Date``
header, not ours), skipping the lines before it and as many lines at it as were shown: no line lost or
repeated, even in a burst that shares one timestamp. A partial last line is held back until its newline
(or the log's end). While it reconnects after a real drop it emits a ``status`` line (not after a quiet
log's read timeout).

Only the client's public API: ``CoreV1Api.read_namespaced_pod_log(..., _preload_content=False)``, the
raw streaming response. It has no ``sinceTime``, hence ``sinceSeconds`` with ``RESUME_SLACK``.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import re
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from yanflow_tui.backends.kubernetes.cache import CONNECT_TIMEOUT, _shutdown
from yanflow_tui.backends.kubernetes.extract import PodInfo
from yanflow_tui.errors import BackendError
from yanflow_tui.model import LogLine

FOLLOW_READ_TIMEOUT = 300.0  # a quiet log reconnects after this long
READ_TIMEOUT = 60.0
RETRY_SECONDS = 1.0
POLL_SECONDS = 0.25
# A resumed read starts this much before the last line shown: the Date header's whole seconds, and the
# nodes' clocks (which stamp the lines) against the API server's. The lines read twice are skipped.
RESUME_SLACK = 10
_DONE = object()
_DURATION = re.compile(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")


@dataclass(frozen=True, slots=True)
class LogLimits:
    """What a log read starts from: its last ``tail`` lines, of the last ``since`` seconds (None: all)."""

    tail: int | None = None
    since: int | None = None


def log_limits(options: Mapping[str, Any], cluster: str = "") -> LogLimits:
    """The cluster's ``log_tail`` (lines, as ``kubectl logs --tail``; -1: all) and ``log_since`` (a
    duration such as ``30s``, ``10m``, ``1h30m``, as ``--since``); raises with the accepted forms."""
    where = f"cluster {cluster!r}: " if cluster else ""
    tail = options.get("log_tail")
    if tail is not None and (isinstance(tail, bool) or not isinstance(tail, int) or tail < -1):
        raise BackendError(f"{where}log_tail: expected a number of lines (-1: all), got {tail!r}")
    since = options.get("log_since")
    seconds = None
    if since is not None:
        found = _DURATION.fullmatch(str(since).strip())
        if found:
            hours, minutes, secs = (int(g or 0) for g in found.groups())
            seconds = hours * 3600 + minutes * 60 + secs
        if not found or not seconds:
            raise BackendError(f"{where}log_since: expected a duration like 30s, 10m or 1h30m, got {since!r}")
    return LogLimits(tail if tail is not None and tail >= 0 else None, seconds)


class PodLogReader:
    """Reads one pod's log in a thread; calls ``emit(list[LogLine])`` for each batch of lines."""

    def __init__(
        self,
        core,
        pod: PodInfo,
        job_id: str,
        source: str,
        follow: bool,
        emit: Callable[[object], None],
        pod_alive: Callable[[], bool],
        container: str = "",
        limits: LogLimits = LogLimits(),
    ):
        self.core = core
        self.pod = pod
        self.container = container  # "" (a pod that lists none): the server's choice
        self.limits = limits
        self.job_id = job_id
        self.source = source
        self.follow = follow
        self.emit = emit
        self.pod_alive = pod_alive
        self.stopped = threading.Event()
        self._response = None
        self._server_clock = 0.0  # the server's time minus our monotonic clock, from a Date header (0: none)
        self._last: tuple[int, int] | None = None  # (epoch s, ns) of the last line shown
        self._at_last = 0  # lines shown with that timestamp
        self._seen = 0
        self.thread = threading.Thread(target=self._run, name=f"k8s-log-{pod.name}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopped.set()
        if self._response is not None:
            _shutdown(self._response)

    def _run(self) -> None:
        try:
            restarts = self.pod.restarts_of(self.container) if self.container else self.pod.restarts
            if restarts:
                self._read(previous=True)
            self._read(previous=False)
        finally:
            self.emit(_DONE)

    def _open(self, follow: bool, previous: bool, resume: bool):
        """``GET /pods/NAME/log`` of the container, with timestamps: from a little before the last line
        shown when resuming, else within the cluster's limits."""
        extra: dict[str, int | str] = {"container": self.container} if self.container else {}
        if resume:
            extra["since_seconds"] = self._since_last()
        else:  # the first read (nothing shown yet): the limits; never when resuming, which they would cut
            if self.limits.tail is not None:
                extra["tail_lines"] = self.limits.tail
            if self.limits.since is not None:
                extra["since_seconds"] = self.limits.since
        response = self.core.read_namespaced_pod_log(
            self.pod.name,
            self.pod.namespace,
            follow=follow,
            previous=previous,
            timestamps=True,
            _preload_content=False,
            _request_timeout=(CONNECT_TIMEOUT, FOLLOW_READ_TIMEOUT if follow else READ_TIMEOUT),
            **extra,
        )
        self._read_server_clock(response)
        return response

    def _read_server_clock(self, response) -> None:
        try:
            date = email.utils.parsedate_to_datetime(response.headers.get("Date") or "")
        except (TypeError, ValueError, AttributeError):
            return
        self._server_clock = date.timestamp() - time.monotonic()

    def _since_last(self) -> int:
        """Seconds from a little before the last line shown to the server's now (our clock without a Date)."""
        assert self._last is not None
        now = self._server_clock + time.monotonic() if self._server_clock else time.time()
        return max(1, math.ceil(now - self._last[0])) + RESUME_SLACK

    def _status(self, text: str, source: str) -> None:
        self.emit([LogLine(self.job_id, text, source, status=True)])

    def _read(self, previous: bool) -> None:
        source = f"{self.source} (previous)" if previous else self.source
        # What was shown, surviving a dropped stream: the last timestamp, and how many lines bore it.
        self._last, self._at_last = None, 0
        outage = ""  # why the stream broke, while reconnecting
        follow = self.follow and not previous
        while not self.stopped.is_set():
            try:
                response = self._open(follow, previous, resume=self._last is not None)
            except Exception as exc:
                status = getattr(exc, "status", None)
                if previous or not follow or status in (404, 403) or not self.pod_alive():
                    if status not in (400, 404):  # 400: not started yet / no previous container
                        self.emit([LogLine(self.job_id, f"[log unavailable: {status or type(exc).__name__}]", source)])
                    return
                if self._last is not None and not outage:  # it was streaming: say so while it is away
                    outage = _reason(exc)
                    self._status(f"reconnecting… ({outage})", source)
                self.stopped.wait(RETRY_SECONDS)  # waiting to start, or the API server is away
                continue
            if outage:
                self._status("reconnected: resuming after the last line shown", source)
                outage = ""
            self._response = response
            leftover = b""
            try:
                leftover = self._pump(response, source)
            except Exception as exc:
                if not follow or not self.pod_alive():
                    return
                if "Timeout" not in type(exc).__name__:  # a quiet log's read timeout is no outage
                    outage = _reason(exc)
                    self._status(f"reconnecting… ({outage})", source)
                continue
            finally:
                self._response = None
                _shutdown(response)
            if not follow or not self.pod_alive():
                if leftover:  # a last line without a newline: the log's true end
                    self._emit_lines([leftover], source)
                return
            # The stream ended while the pod still runs (e.g. the API server went away): reconnect;
            # a partial last line comes again, whole, from there.
            outage = "the log stream ended"
            self._status(f"reconnecting… ({outage})", source)
            self.stopped.wait(RETRY_SECONDS)

    def _pump(self, response, source: str) -> bytes:
        """Emit the stream's complete lines; returns a partial last line (no newline yet)."""
        self._seen = 0  # lines at the last shown timestamp met again in this stream
        buffer = b""
        for segment in response.stream(amt=None, decode_content=False):
            if self.stopped.is_set():
                return b""
            buffer += segment
            if b"\n" not in buffer:
                continue
            *lines, buffer = buffer.split(b"\n")
            self._emit_lines(lines, source)
        return buffer

    def _emit_lines(self, lines: list[bytes], source: str) -> None:
        batch = []
        for raw in lines:
            text = raw.decode("utf-8", errors="replace")
            stamp, sep, rest = text.partition(" ")
            key = _stamp_key(stamp) if sep else None
            if key is None:
                rest = text
            elif self._last is None or key > self._last:
                self._last, self._at_last, self._seen = key, 1, 1
            elif key < self._last:
                continue  # shown before a reconnect
            else:
                self._seen += 1
                if self._seen <= self._at_last:
                    continue  # shown before a reconnect: as many lines bore this timestamp
                self._at_last += 1
            batch.append(LogLine(self.job_id, rest.rstrip("\r"), source))
        if batch:
            self.emit(batch)


_STAMP = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)")


def _stamp_key(stamp: str) -> tuple[int, int] | None:
    """(epoch seconds, nanoseconds) of an RFC 3339 timestamp; None when it is not one."""
    match = _STAMP.fullmatch(stamp)
    if not match:
        return None
    whole, fraction, zone = match.groups()
    try:
        when = datetime.fromisoformat(whole + ("+00:00" if zone == "Z" else zone))
    except ValueError:
        return None
    return int(when.timestamp()), int((fraction or "").ljust(9, "0"))


def _reason(exc: BaseException) -> str:
    status = getattr(exc, "status", None)
    if status:
        return f"HTTP {status}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:120]}" if text else type(exc).__name__


async def merged_logs(
    core,
    job_id: str,
    pods: Callable[[], list[PodInfo]],
    rank_of: Callable[[PodInfo], str],
    follow: bool,
    finished: Callable[[], bool],
    stream: str = "",
    limits: LogLimits = LogLimits(),
) -> AsyncIterator[LogLine]:
    """Lines from every pod ``pods()`` returns (re-asked while following, so late pods join),
    merged in arrival order: of each pod's default container, or of the container ``stream`` names
    (pods without it are left out). Ends when every reader is done and, with ``follow``, the job finished."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    readers: dict[str, PodLogReader] = {}
    done = 0

    def emit(item) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # loop closed
            pass

    def start_new() -> None:
        for pod in pods():
            if pod.name in readers or (stream and stream not in pod.containers):
                continue

            def alive(name: str = pod.name) -> bool:
                return any(p.name == name and not p.terminal for p in pods())

            container = stream or pod.default_container
            reader = PodLogReader(core, pod, job_id, rank_of(pod), follow, emit, alive, container, limits)
            readers[pod.name] = reader
            reader.start()

    try:
        start_new()
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), POLL_SECONDS)
            except (TimeoutError, asyncio.TimeoutError):
                if follow:
                    start_new()
                if done >= len(readers) and (not follow or finished()):
                    return
                continue
            if item is _DONE:
                done += 1
                if done >= len(readers) and queue.empty() and (not follow or finished()):
                    return
                continue
            for line in item:
                yield line
    finally:
        for reader in readers.values():
            reader.stop()


def container_streams(pods: list[PodInfo]) -> tuple[str, ...]:
    """A job's log streams: "" (each pod's default container), then its pods' other containers, in
    spec order."""
    others = dict.fromkeys(c for pod in pods for c in pod.containers if c != pod.default_container)
    return ("", *others)
