"""The cyclic garbage collector, set for a big steady heap: no full collection while a key waits.

With 10,000 jobs (100,000 at big sites) the console holds a million objects or more that live from
one refresh to the next: jobs, snapshots, the Queue's entries and rows. CPython's full (generation 2)
collection walks all of them, 100-200 ms at 10k jobs and about a second at 100k, and it comes at
whatever allocation crosses its threshold, often in the middle of a key. So once fresh data is in
place, and then every second (what a filter or a sort made meanwhile), what is alive is moved out
of the collector's sight (``gc.freeze``, which costs nothing); young garbage is still collected as
usual, and refcounting frees the old jobs a refresh replaces. Cyclic garbage made of
frozen objects (a screen closed, widgets unmounted) waits for ``full_collection``: every
``FULL_EVERY`` seconds, when no key came for ``QUIET`` seconds, everything is unfrozen, collected
once, and frozen again. A screen closed (``dropped``: a job's detail, the Files view, a dialog, about
1.5 MB of widgets and their caches each) brings it forward: at the first tick with no key for
``QUIET`` seconds, or at once after ``DROPPED_LIMIT`` of them (keys coming all along, as in a sweep of
job details), so memory stays flat however many screens are opened and closed. From the start to
the first paint (``hold``: the cached snapshot read, the
first rows made) nothing is collected at all: nearly all of it lives on, and the passes over it cost
a quarter of that CPU at 10,000 jobs; the first ``settled`` (a refresh, or the first tick, a second
in) collects again. ``release`` (at exit) hands everything back to the collector. Pure: no Textual.

``map_big_blocks`` sets the C allocator (glibc's malloc) for the same heap: big blocks mapped apart
and given back as soon as they are freed.
"""

from __future__ import annotations

import ctypes
import gc
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

FULL_EVERY = 300.0  # seconds between two full collections (cyclic garbage among frozen objects)
QUIET = 2.0  # seconds without a key before one runs
DROPPED_LIMIT = 4  # screens closed since the last full collection that make one run even while keys come
_frozen = False  # a Heap froze what lived, and has not released it since (``frozen``)


def frozen() -> bool:
    """True while an app's Heap keeps what lives frozen (its first ``settled`` to its ``release``);
    False: not known. A look-up, where ``gc.get_freeze_count()`` walks every frozen object (65 ms at
    3 million: a 100,000-job console's heap), so that one who would freeze only where something is
    frozen already (the Slurm parse) need not count them."""
    return _frozen


def _froze() -> None:
    global _frozen
    gc.freeze()
    _frozen = True


@contextmanager
def paused() -> Iterator[None]:
    """No cyclic garbage collection inside: a Slurm parse or the Queue's rows make objects by the
    hundred thousand, nearly all of them kept, and the collections their allocations set off walk
    them again and again (a quarter to a third of a 100,000-line parse; a young list of 100,000 rows,
    5-10 ms each time, in a filter keystroke or its frame). What lives after a block that returns goes
    out of the collector's sight: frozen where objects are frozen already (an app's Heap freezes what
    a refresh keeps, and says so, ``frozen``, without the count that walks them all), else to the
    oldest generation (``gc.freeze`` then ``gc.unfreeze``): else the first collection after it walks
    every object just made, 0.2 s per 100,000. The collector is on again after, an exception
    included; one already off (an app at startup) is left off."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
        if frozen() or gc.get_freeze_count():
            gc.freeze()
        else:
            gc.freeze()
            gc.unfreeze()
    finally:
        gc.enable()


class Heap:
    """One app's use of ``gc.freeze``; ``clock`` is ``time.monotonic`` (tests pass their own)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.last_full = clock()
        self.last_key = float("-inf")
        self.freezes = 0
        self.full_collections = 0
        self.dropped_screens = 0  # screens closed since the last full collection (``dropped``)
        self._held = False  # the collector was on when ``hold`` turned it off

    def hold(self) -> None:
        """No collection until ``settled`` (the start: what is made until the first paint lives on)."""
        if gc.isenabled():
            gc.disable()
            self._held = True

    def _resume(self) -> None:
        if self._held:
            self._held = False
            gc.enable()

    def key_pressed(self) -> None:
        self.last_key = self.clock()

    def settled(self) -> None:
        """New data is in place (a refresh shown): what lives now is long-lived."""
        _froze()
        self.freezes += 1
        self._resume()

    def dropped(self) -> None:
        """A screen was closed: its widgets (frozen cyclic garbage, once a tick has passed while it was
        open) are freed by the next full collection, which ``tick`` brings forward."""
        self.dropped_screens += 1

    def tick(self) -> bool:
        """Called about once a second: what lives now is frozen too, or the full collection runs, when
        due (every ``FULL_EVERY`` seconds, or a screen closed: ``dropped``) and the user is not typing,
        or after ``DROPPED_LIMIT`` closed screens whatever the keys. True when one ran."""
        now = self.clock()
        due = self.dropped_screens > 0 or now - self.last_full >= FULL_EVERY
        if self.dropped_screens < DROPPED_LIMIT and (not due or now - self.last_key < QUIET):
            self.settled()
            return False
        self.full_collection()
        return True

    def full_collection(self) -> None:
        gc.unfreeze()
        gc.collect()
        _froze()
        self._resume()
        self.last_full = self.clock()
        self.full_collections += 1
        self.dropped_screens = 0

    def release(self) -> None:
        """Everything back under the collector (at exit: a process running apps one after
        another, as the tests do, keeps no frozen garbage)."""
        global _frozen
        gc.unfreeze()
        _frozen = False
        self._resume()


MMAP_THRESHOLD = 1 << 20  # bytes: malloc blocks this big or bigger are mapped apart (see map_big_blocks)
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (glibc's malloc.h)
_mapped: bool | None = None  # map_big_blocks's answer, once asked


def map_big_blocks() -> bool:
    """glibc only: every malloc block of ``MMAP_THRESHOLD`` bytes or more mapped apart, and unmapped
    when freed. By default glibc raises that threshold to the size of each big block freed (up to
    32 MB), so the big blocks of the next refreshes (a poll's squeue text: 17 MB at 100,000 jobs; the
    dicts and lists of 100,000 entries) come from the heap, which gives freed memory back only from
    its top: the resident memory then held them on, and grew a little with every refresh (100,000
    Slurm jobs, 8 polls: peak 406 -> 394-398 MB, 380 -> 364-367 MB held). Setting the threshold
    keeps it fixed. Once per process (later calls say what the first did); False elsewhere (nothing done)."""
    global _mapped
    if _mapped is None:
        _mapped = False
        try:
            if (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"):
                _mapped = ctypes.CDLL(None).mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
        except (ValueError, OSError, AttributeError):  # no such confstr name, no C library, no mallopt
            pass
    return _mapped
