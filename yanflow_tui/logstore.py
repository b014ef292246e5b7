"""A bounded line store for endless logs.

The most recent lines stay in memory (a line and a character budget); older ones are spilled to a
private temp file (mode 0600 in a 0700 temp dir, removed on ``close``, when the store is collected,
and at exit) and found again through a sparse offset index: one 8-byte offset per block of
``BLOCK`` lines, so a 1 GB log of 10 million lines costs about 1.2 MB of index.

Threads: ``append`` belongs to one owner (the event loop). Disk writes run on one shared writer
thread, so appending never waits for the disk; lines leave memory only once they are written.
``get``/``slice`` of a few lines are cheap enough for the owner (a block cache serves scrolling);
``search``, ``find_all``, ``iter_all`` and ``write_to`` may read the whole file and belong in a
worker thread. Every reader takes the store's lock in short steps only.

Lines never contain "\\n": ``append`` splits a line that does. Matching is per line (a match that
would run into the next line does not count; ``^`` and ``$`` need ``re.MULTILINE``).
"""

from __future__ import annotations

import bisect
import os
import shutil
import tempfile
import threading
import weakref
from array import array
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from re import Pattern

from yanflow_tui.locations import CLOEXEC, NOFOLLOW, private_writer

BLOCK = 64  # lines per index entry
KEEP_LINES = 20_000  # default in-memory window...
KEEP_CHARS = 8 << 20  # ...and its character budget
SPILL_LINES = 4_096  # spill only this far over the budget, so writes come in large chunks
SPILL_CHARS = 1 << 20
READ_BYTES = 1 << 20  # a long read (search, save) takes this much of the file per step
READ_LINES = 16_384  # ... or this many in-memory lines
CACHE_BLOCKS = 32  # decoded blocks kept for scrolling through spilled lines
WIDTH_BUCKET = 16  # cell widths are counted in buckets of this size, for wrapped-height estimates

_ENCODING, _ERRORS = "utf-8", "surrogatepass"  # any str round-trips byte-exact

_writer: ThreadPoolExecutor | None = None
_writer_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    """The one writer thread every store shares (tasks run in order, so per-store order holds)."""
    global _writer
    with _writer_lock:
        if _writer is None:
            _writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="logstore-writer")
        return _writer


class _SpillFile:
    """The temp file behind one store. Written by the writer thread; read under the store's lock."""

    def __init__(self, lock: threading.Lock, tmp_dir: str | None) -> None:
        self.lock = lock
        self.tmp_dir = tmp_dir
        self.dir: str | None = None
        self.path: str | None = None
        self.fd = -1
        self.written = 0  # lines [0, written) are on disk
        self.error: OSError | None = None
        self.closed = False

    def _open(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="yanflow-log-", dir=self.tmp_dir)  # mode 0700
        path = os.path.join(self.dir, "spill.log")
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC, 0o600)  # our own new dir
        self.path = path

    def write(self, data: bytes, offset: int, upto: int) -> None:
        """Writer thread: put ``data`` at ``offset``; then lines [0, upto) are readable from disk."""
        if self.error is not None or self.closed:
            return
        try:
            if self.fd < 0:
                self._open()
            view = memoryview(data)
            done = 0
            while done < len(view):
                done += os.pwrite(self.fd, view[done:], offset + done)
        except OSError as exc:
            self.error = exc  # the lines stay in memory; the store stops spilling
            return
        with self.lock:
            self.written = upto

    def read(self, offset: int, length: int) -> bytes:
        """Caller holds the lock (so the file cannot be closed under it)."""
        chunks, done = [], 0
        while done < length:
            chunk = os.pread(self.fd, length - done, offset + done)
            if not chunk:
                raise OSError(f"log spill file ended early at byte {offset + done}")
            chunks.append(chunk)
            done += len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
            if self.fd >= 0:
                os.close(self.fd)
                self.fd = -1
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)


def _release(spill: _SpillFile) -> Future | None:
    """Close a spill file after its pending writes (at interpreter exit: at once, the writer is gone)."""
    if _writer is None:  # nothing was ever spilled: no write can be pending
        spill.close()
        return None
    try:
        return _executor().submit(spill.close)
    except RuntimeError:  # the interpreter is shutting down: no more futures
        spill.close()
        return None


class LogStore:
    """A sequence of log lines of unbounded length in bounded memory."""

    def __init__(
        self, keep_lines: int = KEEP_LINES, keep_chars: int = KEEP_CHARS, tmp_dir: str | os.PathLike | None = None
    ) -> None:
        self.keep_lines = max(BLOCK, keep_lines)
        self.keep_chars = max(1, keep_chars)
        self._lock = threading.Lock()
        self._spill = _SpillFile(self._lock, os.fspath(tmp_dir) if tmp_dir is not None else None)
        self._finalizer = weakref.finalize(self, _release, self._spill)
        self._mem: list[str] = []  # lines [_mem_start, _total)
        self._mem_start = 0  # a multiple of BLOCK
        self._total = 0
        self._spill_end = 0  # lines [0, _spill_end) are handed to the writer
        self._unspilled_chars = 0  # characters of lines [_spill_end, _total)
        self._index = array("Q", [0])  # _index[k]: byte offset of line k * BLOCK in the file
        self._cache: OrderedDict[int, list[str]] = OrderedDict()
        self._widths: Counter[int] = Counter()  # line count by cell width // WIDTH_BUCKET
        self.widest = 0  # the widest line, in terminal cells
        self._closed = False

    # -- size and state ----------------------------------------------------------------------
    def __len__(self) -> int:
        return self._total

    @property
    def in_memory(self) -> int:
        """How many lines are held in memory now."""
        return len(self._mem)

    @property
    def spilled(self) -> int:
        """How many lines have left memory (they are read back from the file)."""
        return self._mem_start

    @property
    def path(self) -> Path | None:
        """The spill file, once something was spilled (None before, and after ``close``)."""
        spill = self._spill
        return Path(spill.path) if spill.path and not spill.closed else None

    @property
    def error(self) -> OSError | None:
        """Why spilling stopped (disk full...); the lines then stay in memory."""
        return self._spill.error

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def index_bytes(self) -> int:
        """Memory held by the offset index."""
        return self._index.itemsize * len(self._index)

    def sync(self) -> None:
        """Block until every spilled line is on disk, then forget the in-memory copies (for tests and
        worker threads; the event loop never needs it)."""
        if _writer is not None:
            _writer.submit(int).result()
        with self._lock:
            self._drop_written()

    def wrapped_rows(self, width: int) -> int:
        """About how many screen rows every line takes when wrapped at ``width`` cells: exact when no
        line is wider than ``width``, otherwise estimated from widths bucketed by WIDTH_BUCKET."""
        if width <= 0 or self.widest <= width:
            return self._total
        rows = 0
        half = WIDTH_BUCKET // 2
        for bucket, count in self._widths.items():
            middle = bucket * WIDTH_BUCKET + half
            rows += count * max(1, -(-middle // width))
        return max(self._total, rows)

    # -- writing -------------------------------------------------------------------------------
    def append(self, lines: Iterable[str]) -> int:
        """Add lines at the end; returns how many. O(len(lines)); never waits for the disk."""
        batch = lines if isinstance(lines, list) else list(lines)
        if not batch or self._closed:
            return 0
        joined = "\n".join(batch)
        if joined.count("\n") != len(batch) - 1:  # a line holding "\n" becomes several lines
            batch = joined.split("\n")
        chars = len(joined) - (len(batch) - 1)
        if joined.isascii():
            widths = list(map(len, batch))
        else:
            from rich.cells import cell_len

            widths = [len(line) if line.isascii() else cell_len(line) for line in batch]
        self._widths.update(map(WIDTH_BUCKET.__rfloordiv__, widths))
        self.widest = max(self.widest, max(widths))
        with self._lock:
            self._mem.extend(batch)
            self._total += len(batch)
            self._unspilled_chars += chars
            self._drop_written()
            if self._spill.error is None and (
                self._total - self._spill_end > self.keep_lines + SPILL_LINES
                or self._unspilled_chars > self.keep_chars + SPILL_CHARS
            ):
                self._start_spill()
        return len(batch)

    def _drop_written(self) -> None:
        """Forget the in-memory copies of lines the writer has put on disk (lock held)."""
        written = self._spill.written
        if written > self._mem_start:
            del self._mem[: written - self._mem_start]
            self._mem_start = written

    def _start_spill(self) -> None:
        """Hand whole blocks from the front of the unspilled lines to the writer until the rest
        fits the budget (lock held). Their offsets are indexed now; they leave memory once written."""
        start = pos = self._spill_end
        offset = self._index[-1]
        chunks = []
        while pos + BLOCK <= self._total and (
            self._total - pos > self.keep_lines or self._unspilled_chars > self.keep_chars
        ):
            block = self._mem[pos - self._mem_start : pos + BLOCK - self._mem_start]
            data = ("\n".join(block) + "\n").encode(_ENCODING, _ERRORS)
            chunks.append(data)
            offset += len(data)
            self._index.append(offset)
            self._unspilled_chars -= sum(map(len, block))
            pos += BLOCK
        if chunks:
            self._spill_end = pos
            _executor().submit(self._spill.write, b"".join(chunks), self._index[start // BLOCK], pos)

    # -- reading a few lines ---------------------------------------------------------------------
    def get(self, i: int) -> str:
        """Line ``i`` (negative counts from the end). A spilled line is read from disk."""
        with self._lock:
            total = self._total
            if i < 0:
                i += total
            if not 0 <= i < total:
                raise IndexError(f"log line {i} out of range (0..{total - 1})")
            if i >= self._mem_start:
                return self._mem[i - self._mem_start]
            return self._block(i // BLOCK)[i % BLOCK]

    def slice(self, start: int = 0, stop: int | None = None) -> list[str]:
        """Lines [start, stop), clamped to what exists. Meant for a screenful; bigger reads go to a thread."""
        with self._lock:
            total = self._total
            start, stop = max(0, start), total if stop is None else min(stop, total)
            out: list[str] = []
            pos = start
            while pos < min(stop, self._mem_start):
                k = pos // BLOCK
                block = self._block(k)
                end = min(stop, self._mem_start, (k + 1) * BLOCK)
                out.extend(block[pos - k * BLOCK : end - k * BLOCK])
                pos = end
            if pos < stop:
                out.extend(self._mem[pos - self._mem_start : stop - self._mem_start])
            return out

    def _block(self, k: int) -> list[str]:
        """The lines of spilled block ``k``, through a small LRU cache (lock held)."""
        cache = self._cache
        block = cache.get(k)
        if block is not None:
            cache.move_to_end(k)
            return block
        data = self._spill.read(self._index[k], self._index[k + 1] - self._index[k])
        block = data.decode(_ENCODING, _ERRORS).split("\n")[:-1]
        cache[k] = block
        if len(cache) > CACHE_BLOCKS:
            cache.popitem(last=False)
        return block

    # -- long reads (for worker threads) -----------------------------------------------------------
    def _spans(self, start: int, stop: int) -> Iterator[tuple[int, int, bytes | list[str]]]:
        """Cover lines [start, stop) in steps: (first, end, data) where data is the file's bytes of
        whole blocks (``first`` may come before ``start``, ``end`` after ``stop``) or a list of
        in-memory lines exactly [first, end). Each step holds the lock only while it copies."""
        pos = start
        while pos < stop:
            with self._lock:
                if self._closed:
                    raise ValueError("log store is closed")
                if pos >= self._mem_start:
                    end = min(stop, pos + READ_LINES)
                    data: bytes | list[str] = self._mem[pos - self._mem_start : end - self._mem_start]
                    first = pos
                else:
                    k = pos // BLOCK
                    last = -(-min(stop, self._mem_start) // BLOCK)  # blocks [k, last) hold the rest on disk
                    offsets = self._index
                    k2 = bisect.bisect_right(offsets, offsets[k] + READ_BYTES, k + 2, last + 1) - 1
                    data = self._spill.read(offsets[k], offsets[k2] - offsets[k])
                    first, end = k * BLOCK, k2 * BLOCK
            yield first, end, data
            pos = end

    @staticmethod
    def _text(data: bytes | list[str]) -> str:
        """A span's lines joined by "\\n" (no trailing newline)."""
        if isinstance(data, list):
            return "\n".join(data)
        return data.decode(_ENCODING, _ERRORS)[:-1]

    def iter_all(self, start: int = 0, stop: int | None = None) -> Iterator[str]:
        """Every line of [start, stop) (to the length at call time), reading the file in large steps."""
        stop = self._total if stop is None else min(stop, self._total)
        for first, _end, data in self._spans(max(0, start), stop):
            lines = data if isinstance(data, list) else self._text(data).split("\n")
            yield from lines[max(0, start - first) : stop - first]

    def find_all(
        self, pattern: Pattern[str], start: int = 0, stop: int | None = None, limit: int | None = None
    ) -> array:
        """Numbers of the lines in [start, stop) that ``pattern`` matches, in order, at most ``limit``."""
        stop = self._total if stop is None else min(stop, self._total)
        found = array("Q")
        for first, _end, data in self._spans(max(0, start), stop):
            if match_lines(pattern, self._text(data), first, start, stop, found, limit):
                break
        return found

    def search(self, pattern: Pattern[str], start: int, direction: int = 1, stop: int | None = None) -> int | None:
        """The first line matching ``pattern`` from ``start`` on (``direction`` 1, up to ``stop``), or
        the last one at or before ``start`` (``direction`` -1, down to ``stop``); None if none."""
        total = self._total
        if direction >= 0:
            found = self.find_all(pattern, max(0, start), total if stop is None else stop, limit=1)
            return found[0] if found else None
        low = max(0, stop or 0)
        high = min(start + 1, total)
        while high > low:
            begin = max(low, high - READ_LINES * 4)
            found = self.find_all(pattern, begin, high)
            if found:
                return found[-1]
            high = begin
        return None

    def write_to(self, path: str | os.PathLike, stop: int | None = None) -> int:
        """Write lines [0, stop) (default: all, at call time) to ``path`` atomically with mode 0600,
        streaming from disk. Returns the number of lines written. For a worker thread."""
        path = Path(path)
        stop = self._total if stop is None else min(stop, self._total)
        with private_writer(path) as out:
            for first, end, data in self._spans(0, stop):
                if isinstance(data, list):
                    out.write(("\n".join(data) + "\n").encode(_ENCODING, _ERRORS) if data else b"")
                elif end <= stop:
                    out.write(data)
                else:  # the last step overshoots ``stop``: cut after its line
                    cut = -1
                    for _ in range(stop - first):
                        cut = data.index(b"\n", cut + 1)
                    out.write(data[: cut + 1])
        return stop

    # -- closing ---------------------------------------------------------------------------------
    def close(self, wait: bool = False) -> None:
        """Drop every line and remove the spill file (after pending writes; ``wait`` blocks until then)."""
        with self._lock:
            self._closed = True
            self._mem, self._total, self._mem_start = [], 0, 0
            self._cache.clear()
            self._index = array("Q", [0])
        future = self._finalizer()
        if wait and future is not None:
            future.result()


def match_lines(
    pattern: Pattern[str], text: str, first: int, lo: int, hi: int, found: array, limit: int | None
) -> bool:
    """Append to ``found`` the numbers of the lines of ``text`` (line ``first`` onwards, joined by
    "\\n") in [lo, hi) that ``pattern`` matches. True once ``limit`` is reached."""
    search = pattern.search
    count = text.count
    pos, line, counted = 0, first, 0
    size = len(text)
    while pos <= size:
        match = search(text, pos)
        if match is None:
            return False
        begin = match.start()
        line += count("\n", counted, begin)
        counted = begin
        if line >= hi:
            return False
        line_end = text.find("\n", begin)
        if line_end < 0:
            line_end = size
        if line >= lo:
            if match.end() > line_end:  # the match runs into the next line: test this line alone
                line_start = text.rfind("\n", 0, begin) + 1
                hit = search(text[line_start:line_end]) is not None
            else:
                hit = True
            if hit:
                found.append(line)
                if limit is not None and len(found) >= limit:
                    return True
        pos = line_end + 1
    return False
