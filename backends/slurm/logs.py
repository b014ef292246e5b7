"""Following a Slurm job's log file across dropped connections.

``FileFollower`` reads the file by byte offset through ``Transport.read_from`` and counts the raw
bytes of every line it yields (before decoding, so non-UTF-8 bytes never shift it; a partial last
line is counted only once its newline arrives, or at the end of a final read). When the stream
breaks it reconnects with backoff (each attempt bounded by the command timeout, attempts unbounded
while following) and resumes at that offset, so no line is lost or repeated; meanwhile it yields
``Status`` items. A file found shorter than the offset (truncated or replaced) is read again from
its start. ``finish()`` (the job ended) stops following: what is left is read to the end, then the
iteration ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

from yanflow_tui.backends.slurm.transport import CONNECT_TIMEOUT, LineStream, Transport
from yanflow_tui.errors import BackendError

WINDOW = 8 * 2**20  # the first read shows the last lines of at most this many bytes
RECONNECT_MIN = 0.5
RECONNECT_MAX = 10.0
READ_TRIES = 3  # without follow, a read broken this many times in a row is an error
MAX_HEADER = 100


@dataclass(frozen=True)
class Status:
    """A change in the stream's state, for the user: not a line of the log."""

    text: str


class FileFollower:
    """One log file, read from the last ``lines`` lines on; with ``follow``, until ``finish()``."""

    def __init__(self, transport: Transport, path: str, lines: int, follow: bool, window: int = WINDOW):
        self.transport = transport
        self.path = path
        self.lines = lines
        self.follow = follow
        self.window = window
        self.offset = -1  # bytes of the file accounted for; -1 before the first header
        self.reconnects = 0  # streams reopened after a break (tests read it)
        self.size_at_open = -1  # the file's size when the current stream began (-1: none yet)
        self._skip_partial = False  # the first read began mid-line: drop up to its first newline
        self._finish = asyncio.Event()
        self._stream: LineStream | None = None

    def finish(self) -> None:
        """The job ended: stop following, read what is left to the end, then end."""
        self._finish.set()

    async def close(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            await stream.aclose()

    async def _open(self, following: bool) -> LineStream:
        return await asyncio.wait_for(
            self.transport.read_from(self.path, self.offset, following, self.window, self.lines),
            self.transport.timeout + CONNECT_TIMEOUT,
        )

    async def _pause(self, attempt: int) -> None:
        delay = min(RECONNECT_MAX, RECONNECT_MIN * 2 ** (attempt - 1))
        try:
            await asyncio.wait_for(self._finish.wait(), delay)
        except (TimeoutError, asyncio.TimeoutError):
            pass

    async def _chunks(self, stream: LineStream, following: bool) -> AsyncIterator[bytes]:
        """The stream's chunks; a followed one is cut short by ``finish()``."""
        if not following:
            async for chunk in stream:
                yield chunk
            return
        finished = asyncio.ensure_future(self._finish.wait())
        chunk = None
        try:
            while True:
                chunk = asyncio.ensure_future(stream.__anext__())
                await asyncio.wait({chunk, finished}, return_when=asyncio.FIRST_COMPLETED)
                if not chunk.done():
                    return
                try:
                    value = chunk.result()
                except StopAsyncIteration:
                    return
                yield value
        finally:
            finished.cancel()
            if chunk is not None:
                chunk.cancel()
                chunk.add_done_callback(_retrieve)

    async def run(self) -> AsyncIterator[str | Status]:
        attempt = 0
        outage = ""  # why the stream broke, while reconnecting
        opened = False
        while True:
            following = self.follow and not self._finish.is_set()
            ended = False
            try:
                if opened:
                    self.reconnects += 1
                self._stream = stream = await self._open(following)
                opened = True
                header: bytes | None = None
                buffer = b""
                async for chunk in self._chunks(stream, following):
                    data = buffer + chunk
                    if header is None:
                        if b"\n" not in data[:MAX_HEADER]:
                            if len(data) >= MAX_HEADER:
                                raise BackendError(f"cannot read {self.path}: unexpected output {data[:40]!r}")
                            buffer = data
                            continue
                        header, _, data = data.partition(b"\n")
                        for item in self._start(header, outage):
                            yield item
                        outage = ""
                    if data:
                        attempt = 0
                    *complete, buffer = data.split(b"\n")
                    for raw in complete:
                        self.offset += len(raw) + 1
                        if self._skip_partial:
                            self._skip_partial = False
                            continue
                        yield raw.decode("utf-8", errors="replace")
                ended = True
            except (BackendError, TimeoutError, asyncio.TimeoutError) as exc:
                if not self.follow and (not opened or attempt + 1 >= READ_TRIES):
                    raise
                if not opened:
                    raise  # the first open failing is an error to show, not a drop to ride out
                reason = str(exc) if isinstance(exc, BackendError) else "timed out"
            finally:
                await self.close()
            if ended:
                if not following:  # a final read reached the end of the file
                    if buffer and header is not None:
                        self.offset += len(buffer)
                        if not self._skip_partial:
                            yield buffer.decode("utf-8", errors="replace")
                    return
                if self._finish.is_set():
                    continue  # the job ended: read what is left, to the end
                reason = "the log stream ended"
            attempt += 1
            if not outage:
                outage = reason
                yield Status(f"reconnecting… ({reason})")
            await self._pause(attempt)

    def _start(self, header: bytes, outage: str) -> list[Status]:
        try:
            size, start, partial = (int(word) for word in header.split())
        except ValueError:
            raise BackendError(f"cannot read {self.path}: unexpected output {header[:40]!r}") from None
        items = []
        if self.offset >= 0 and start != self.offset:
            items.append(
                Status(
                    f"the log is shorter than the {self.offset} bytes shown (truncated or "
                    f"replaced): reading it again from the start"
                )
            )
            self._skip_partial = False
        elif self.offset < 0:
            self._skip_partial = partial == 1
        if outage:
            items.append(Status(f"reconnected: resuming at byte {start}"))
        self.offset = start
        self.size_at_open = size
        return items


def _retrieve(future: asyncio.Future) -> None:
    """Mark an abandoned read's outcome as seen (a stream cut by ``finish`` or by closing)."""
    if not future.cancelled():
        future.exception()
