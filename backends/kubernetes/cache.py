"""The watch cache: one ``Reflector`` thread per resource (Nodes, Pods, Jobs) lists, then watches,
and keeps small extracted records in memory for the backend to read without any API call.

List and watch answers are decoded from raw bytes with ``json.loads`` (``_preload_content=False``),
never into the client's model classes. On ``410 Gone`` the reflector re-lists; when a watch stream
simply ends it re-watches from the last resourceVersion; when the API server cannot be reached it
records the error (readers raise it) and retries with backoff from 1 s to 30 s, keeping its cache.
Each reflector journals the keys its watch events put or delete (``changes_since``), so a reader can
look at those records only; a list, or more changes than the cache holds, starts the journal afresh.
"""

from __future__ import annotations

import bisect
import json
import logging
import threading
import time
from collections.abc import Callable
from operator import itemgetter
from typing import Any

from yanflow_tui.speed import collector_off

log = logging.getLogger(__name__)
WATCH_SECONDS = 120  # server-side timeoutSeconds of one watch request
CONNECT_TIMEOUT = 5.0
LIST_READ_TIMEOUT = 60.0
READ_SLACK = 30.0  # a watch read may be quiet this much longer than WATCH_SECONDS
BACKOFF_START = 1.0
BACKOFF_MAX = 30.0
JOURNAL_SLACK = 1024  # keys the journal keeps beyond the cache's size before it starts afresh


class Gone(Exception):
    """The watch's resourceVersion is too old (HTTP 410 or an ERROR event with code 410)."""


def cause(exc: BaseException) -> BaseException:
    """The exception that says what failed. Client 36 turns a TLS or websocket failure into an
    ``ApiException(status=0, reason=...)``, then fails on its missing body (``AttributeError: 'NoneType'
    object has no attribute 'decode'``): the ApiException before it holds the reason."""
    context = exc.__context__
    if not getattr(exc, "reason", None) and getattr(context, "reason", None) and hasattr(context, "status"):
        return context  # type: ignore[return-value]
    return exc


def error_text(exc: BaseException) -> str:
    """One line naming what failed, without the client's multi-line HTTP dumps."""
    exc = cause(exc)
    status = getattr(exc, "status", None)
    if status:
        reason = getattr(exc, "reason", "") or ""
        message = ""
        body = getattr(exc, "body", None)
        if body:
            try:
                message = json.loads(body).get("message", "")
            except (ValueError, AttributeError):
                message = ""
        return f"HTTP {status} {reason}{': ' + message if message else ''}".strip()
    reason = getattr(exc, "reason", None)  # urllib3 MaxRetryError wraps the socket error
    text = str(reason if reason is not None else exc).strip().splitlines()
    name = type(exc).__name__
    if hasattr(exc, "status") and len(text) > 1 and text[0].isidentifier():
        name = text[0]  # the client's ApiException(status=0) of a failed request: "SSLError\n<why>"
    return f"{name}: {text[-1] if text else ''}".rstrip(": ")


def is_connection_error(exc: BaseException) -> bool:
    """True for failures to reach the API server (as opposed to an HTTP error answer)."""
    return not getattr(exc, "status", None)


def _object_key(obj: dict) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""


class Reflector:
    """List-then-watch of one resource into a dict of extracted records, in a daemon thread."""

    def __init__(
        self,
        resource: str,
        list_call: Callable[..., Any],
        extract: Callable[[dict], Any],
        on_change: Callable[[], None] | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
        watch_seconds: int = WATCH_SECONDS,
    ):
        self.resource = resource
        self.list_call = list_call
        self.extract = extract
        self.on_change = on_change or (lambda: None)
        self.connect_timeout = connect_timeout
        self.watch_seconds = watch_seconds
        self.items: dict[tuple[str, str], Any] = {}
        self.resource_version = ""
        self.version = 0  # bumped on every change; readers memoise on it
        self.error: str | None = None  # set while the API server cannot be reached (or refuses)
        self.connection_lost = False
        self.synced = threading.Event()
        self.lists = 0
        self.reshaped = 0  # bumped whenever a key comes or goes (the records' order may differ then)
        self.watches = 0
        self.events = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._response = None
        self._thread: threading.Thread | None = None
        self._values: list = []
        self._values_version = -1
        # (version, key) of each record a watch event put or deleted, oldest first; complete after _journal_from
        self._journal: list[tuple[int, tuple[str, str]]] = []
        self._journal_from = 0

    # -- control -----------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"k8s-{self.resource}", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        response = self._response
        if response is not None:
            _shutdown(response)

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def wake(self) -> None:
        """Cut a backoff wait short (the user asked for a refresh)."""
        self._wake.set()

    def values(self) -> list:
        """The cached records; the same list object until something changes."""
        return self.snapshot()[2]

    def snapshot(self) -> tuple[int, int, list]:
        """(``version``, ``lists``, ``values()``) read together: the records are those of that version,
        and ``lists`` (how many full lists were taken) moves when the cache was listed afresh."""
        with self._lock:
            return self._snapshot()

    def _snapshot(self) -> tuple[int, int, list]:
        if self._values_version != self.version:
            self._values = list(self.items.values())
            self._values_version = self.version
        return self.version, self.lists, self._values

    def changes_since(self, version: int) -> tuple[int, int, list, dict[tuple[str, str], Any] | None, int]:
        """``snapshot()``, then, read with it, the records put since ``version`` (a version this cache had)
        by key (None: deleted), None where that is not known (listed afresh since, or more changed than
        the journal keeps); and ``reshaped``."""
        with self._lock:
            now = self._snapshot()
            if not self._journal_from <= version <= self.version:
                return (*now, None, self.reshaped)
            journal, items = self._journal, self.items
            at = bisect.bisect_right(journal, version, key=itemgetter(0))
            return (*now, {key: items.get(key) for _, key in journal[at:]}, self.reshaped)

    # -- the loop ------------------------------------------------------------------------------
    def _run(self) -> None:
        delay = BACKOFF_START
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self._list()
                    need_list = False
                    delay = BACKOFF_START
                self._watch()  # returns when the server ends the stream: re-watch from our resourceVersion
            except Gone:
                need_list = True
            except Exception as exc:
                if self._stop.is_set():
                    break
                if self.error is None:  # once per outage, with the traceback
                    log.warning("watch failed, retrying with backoff: %s", error_text(exc), exc_info=exc)
                self.error = error_text(exc)
                self.connection_lost = is_connection_error(exc)
                need_list = True
                self.on_change()
                self._wake.wait(delay)
                self._wake.clear()
                delay = min(BACKOFF_MAX, delay * 2)

    def _list(self) -> None:
        response = self.list_call(_preload_content=False, _request_timeout=(self.connect_timeout, LIST_READ_TIMEOUT))
        try:
            body = response.data
        finally:
            response.release_conn()
        extract = self.extract
        items = {}
        with collector_off():  # a big list allocates ~10^6 objects: one collection after, not dozens during
            data = json.loads(body)
            for obj in data.get("items") or ():
                items[_object_key(obj)] = extract(obj)
            version = (data.get("metadata") or {}).get("resourceVersion") or ""
            del data, body
        with self._lock:
            self.items = items
            self.resource_version = version
            self.version += 1
            self.lists += 1
            self.reshaped += 1
            self._journal, self._journal_from = [], self.version
        self.error = None
        self.connection_lost = False
        self.synced.set()
        self.on_change()

    def _watch(self) -> None:
        try:
            response = self.list_call(
                watch=True,
                resource_version=self.resource_version,
                timeout_seconds=self.watch_seconds,
                allow_watch_bookmarks=True,
                _preload_content=False,
                _request_timeout=(self.connect_timeout, self.watch_seconds + READ_SLACK),
            )
        except Exception as exc:
            if getattr(exc, "status", None) == 410:  # some servers answer an expired version this way
                raise Gone(error_text(exc)) from None
            raise
        self._response = response
        self.watches += 1
        try:
            if self._stop.is_set():
                return
            buffer = b""
            for segment in response.stream(amt=None, decode_content=False):
                if self._stop.is_set():
                    return
                buffer += segment
                if b"\n" not in buffer:
                    continue
                *lines, buffer = buffer.split(b"\n")
                self._apply(lines)
            if buffer.strip():
                self._apply([buffer])
        finally:
            self._response = None
            _shutdown(response)

    def _apply(self, lines: list[bytes]) -> None:
        with self._lock:
            journal = self._journal
            before = len(journal)
            try:
                self._take(lines, journal, self.version + 1)
            finally:  # (an ERROR event mid-batch: what came before it is in the cache, a change too)
                changed = len(journal) > before
                if changed:
                    self.version += 1
                    if len(journal) > len(self.items) + JOURNAL_SLACK:
                        self._journal, self._journal_from = [], self.version
        if changed:
            self.on_change()

    def _take(self, lines: list[bytes], journal: list, stamp: int) -> None:
        """Watch events into the cache, each key put or deleted into ``journal`` as of version ``stamp``."""
        extract, items = self.extract, self.items
        for line in lines:
            if not line.strip():
                continue
            event = json.loads(line)
            kind = event.get("type")
            obj = event.get("object") or {}
            if kind == "ERROR":
                if obj.get("code") == 410:
                    raise Gone(obj.get("message") or "resourceVersion too old")
                raise RuntimeError(f"watch error: {obj.get('message') or obj}")
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if rv:
                self.resource_version = rv
            if kind == "BOOKMARK":
                continue
            self.events += 1
            key = _object_key(obj)
            if kind == "DELETED":
                self.reshaped += items.pop(key, None) is not None
            else:
                self.reshaped += key not in items
                items[key] = extract(obj)
            journal.append((stamp, key))


def _shutdown(response) -> None:
    """Stop a (possibly blocked) streaming response from another thread."""
    try:
        shutdown = getattr(response, "shutdown", None)
        if shutdown is not None:
            shutdown()
        response.close()  # a half-read stream's connection must never go back to the pool open
        response.release_conn()
    except Exception:
        pass


class ChangeThrottle:
    """Turns bursts of change signals from threads into calls of ``callback`` on the event loop, at
    most one per ``interval`` seconds (the first of a quiet period goes at once)."""

    def __init__(self, loop, callback: Callable[[], None], interval: float = 0.1):
        self.loop = loop
        self.callback = callback
        self.interval = interval
        self._pending = False
        self._last = 0.0
        self._lock = threading.Lock()

    def signal(self) -> None:
        with self._lock:
            if self._pending:
                return
            self._pending = True
        delay = max(0.0, self._last + self.interval - time.monotonic())
        try:
            self.loop.call_soon_threadsafe(self._arm, delay)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            pass

    def _arm(self, delay: float) -> None:
        self.loop.call_later(delay, self._fire)

    def _fire(self) -> None:
        with self._lock:
            self._pending = False
            self._last = time.monotonic()
        self.callback()
