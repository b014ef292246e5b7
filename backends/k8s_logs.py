"""Pod log streaming: one thread per pod reads ``/pods/NAME/log`` (with ``follow`` when asked) and
hands lines to the event loop in batches; the async iterator merges them in arrival order, each
tagged with its rank. Crashed or restarted containers' previous logs come first, as the source
``"rank N (previous)"``. Closing the iterator stops every thread (their responses are shut down).

Follow reconnects after a read timeout or a dropped connection from the last timestamp seen
(``timestamps=true`` + ``sinceSeconds``), skipping lines at or before it.
"""

from __future__ import annotations

import asyncio
import math
import threading
from datetime import datetime, timezone
from typing import AsyncIterator, Callable

from yanflow_tui.backends.k8s_cache import CONNECT_TIMEOUT, _shutdown
from yanflow_tui.backends.k8s_extract import PodInfo, parse_time
from yanflow_tui.model import LogLine

FOLLOW_READ_TIMEOUT = 300.0  # a quiet log reconnects after this long
READ_TIMEOUT = 60.0
RETRY_SECONDS = 1.0
POLL_SECONDS = 0.25
_DONE = object()


class PodLogReader:
    """Reads one pod's log in a thread; calls ``emit(list[LogLine])`` for each batch of lines."""

    def __init__(self, core, pod: PodInfo, job_id: str, source: str, follow: bool,
                 emit: Callable[[object], None], pod_alive: Callable[[], bool]):
        self.core = core
        self.pod = pod
        self.job_id = job_id
        self.source = source
        self.follow = follow
        self.emit = emit
        self.pod_alive = pod_alive
        self.stopped = threading.Event()
        self._response = None
        self._last: str | None = None
        self.thread = threading.Thread(target=self._run, name=f"k8s-log-{pod.name}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopped.set()
        if self._response is not None:
            _shutdown(self._response)

    def _run(self) -> None:
        try:
            if self.pod.restarts:
                self._read(previous=True)
            self._read(previous=False)
        finally:
            self.emit(_DONE)

    def _read(self, previous: bool) -> None:
        source = f"{self.source} (previous)" if previous else self.source
        self._last = None  # timestamp of the last line shown; survives a dropped stream
        while not self.stopped.is_set():
            since = None
            last = self._last
            if last is not None:
                when = parse_time(last.split(".")[0].rstrip("Z") + "Z")
                if when is not None:
                    since = max(1, math.ceil((datetime.now(timezone.utc) - when).total_seconds()) + 1)
            follow = self.follow and not previous
            kwargs = {"since_seconds": since} if since else {}
            try:
                response = self.core.read_namespaced_pod_log(
                    self.pod.name, self.pod.namespace, follow=follow, previous=previous, timestamps=True,
                    _preload_content=False,
                    _request_timeout=(CONNECT_TIMEOUT, FOLLOW_READ_TIMEOUT if follow else READ_TIMEOUT),
                    **kwargs,
                )
            except Exception as exc:  # noqa: BLE001
                status = getattr(exc, "status", None)
                if previous or not follow or status in (404, 403) or not self.pod_alive():
                    if status not in (400, 404):  # 400: not started yet / no previous container
                        self.emit([LogLine(self.job_id, f"[log unavailable: {status or type(exc).__name__}]",
                                           source)])
                    return
                self.stopped.wait(RETRY_SECONDS)  # waiting to start, or the API server is away
                continue
            self._response = response
            try:
                self._pump(response, source)
            except Exception:  # noqa: BLE001 - read timeout or a dropped connection: reconnect
                if not follow or not self.pod_alive():
                    return
                continue
            finally:
                self._response = None
                _shutdown(response)
            if not follow or not self.pod_alive():
                return
            # The stream ended while the pod still runs (e.g. the API server went away): reconnect.
            self.stopped.wait(RETRY_SECONDS)

    def _pump(self, response, source: str) -> None:
        buffer = b""
        for segment in response.stream(amt=None, decode_content=False):
            if self.stopped.is_set():
                return
            buffer += segment
            if b"\n" not in buffer:
                continue
            *lines, buffer = buffer.split(b"\n")
            self._emit_lines(lines, source)
        if buffer:
            self._emit_lines([buffer], source)

    def _emit_lines(self, lines: list[bytes], source: str) -> None:
        last = self._last
        batch = []
        for raw in lines:
            text = raw.decode("utf-8", errors="replace")
            stamp, sep, rest = text.partition(" ")
            if not sep or not stamp[:1].isdigit():
                stamp, rest = "", text
            if stamp and last is not None and stamp <= last:
                continue  # already shown before a reconnect
            if stamp:
                last = stamp
            batch.append(LogLine(self.job_id, rest.rstrip("\r"), source))
        self._last = last
        if batch:
            self.emit(batch)


async def merged_logs(core, job_id: str, pods: Callable[[], list[PodInfo]], rank_of: Callable[[PodInfo], str],
                      follow: bool, finished: Callable[[], bool]) -> AsyncIterator[LogLine]:
    """Lines from every pod ``pods()`` returns (re-asked while following, so late pods join),
    merged in arrival order. Ends when every reader is done and, with ``follow``, the job finished."""
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
            if pod.name in readers:
                continue
            alive = (lambda name=pod.name: any(p.name == name and not p.terminal for p in pods()))
            reader = PodLogReader(core, pod, job_id, rank_of(pod), follow, emit, alive)
            readers[pod.name] = reader
            reader.start()

    try:
        start_new()
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), POLL_SECONDS)
            except asyncio.TimeoutError:
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
