"""Speed in one room: the heap and the garbage collector, glibc's malloc, the bounded memo of shared
values, and the quick constructors of the per-object model classes. Pure: no Textual (backends use
it too). The only state it keeps for the process is one object, ``_PROCESS``.

The collector. With 10,000 jobs (100,000 at big sites) the console holds a million objects or more
that live from one refresh to the next: jobs, snapshots, the Queue's entries and rows. CPython's
full (generation 2) collection walks all of them, 100-200 ms at 10k jobs and about a second at 100k,
and it comes at whatever allocation crosses its threshold, often in the middle of a key. So once
fresh data is in place, and then every second (what a filter or a sort made meanwhile), what is
alive is moved out of the collector's sight (``gc.freeze``, which costs nothing); young garbage is
still collected as usual, and refcounting frees the old jobs a refresh replaces. Cyclic garbage made
of frozen objects (a screen closed, widgets unmounted) waits for ``full_collection``: every
``FULL_EVERY`` seconds, when no key came for ``QUIET`` seconds, everything is unfrozen, collected
once, and frozen again. A screen closed (``dropped``: a job's detail, the Files view, a dialog, about
1.5 MB of widgets and their caches each) brings it forward: at the first tick with no key for
``QUIET`` seconds, or at once after ``DROPPED_LIMIT`` of them (keys coming all along, as in a sweep of
job details), so memory stays flat however many screens are opened and closed. From the start to
the first paint (``hold``: the cached snapshot read, the first rows made) nothing is collected at
all: nearly all of it lives on, and the passes over it cost a quarter of that CPU at 10,000 jobs;
the first ``settled`` (a refresh, or the first tick, a second in) collects again. ``release`` (at
exit) hands everything back to the collector. Code that makes objects by the hundred thousand (a
parse, a list, the Queue's rows, a million curve points) does it inside ``collector_off``; the
restored snapshot is frozen before Textual loads (``freeze_restored``).

``map_big_blocks`` sets the C allocator (glibc's malloc) for the same heap: big blocks mapped apart
and given back as soon as they are freed.

``Shared`` makes a value once per distinct key (cells, sort strings, widths) and hands the same one
to every user. ``quick_init`` and ``maker`` give the slotted, frozen model classes (``Job``,
``Node``...) an ``__init__`` and a factory 2-3 times quicker than a frozen dataclass's own.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import MISSING, fields
from sys import intern
from typing import Any, TypeVar

_T = TypeVar("_T")


class _Process:
    """What this module knows for the whole process (one instance, ``_PROCESS``)."""

    __slots__ = ("frozen", "mapped", "makers", "makers_as_given")

    def __init__(self) -> None:
        self.frozen = False  # a Heap froze what lived, and has not released it since (``frozen``)
        self.mapped: bool | None = None  # ``map_big_blocks``'s answer, once asked
        self.makers: dict[type, Callable[..., Any]] = {}  # ``maker(cls)``, per ``quick_init`` class
        self.makers_as_given: dict[type, Callable[..., Any]] = {}  # ``maker(cls, interned=False)``


_PROCESS = _Process()


# -- the collector -----------------------------------------------------------------------------------
FULL_EVERY = 300.0  # seconds between two full collections (cyclic garbage among frozen objects)
QUIET = 2.0  # seconds without a key before one runs
DROPPED_LIMIT = 4  # screens closed since the last full collection that make one run even while keys come


def frozen() -> bool:
    """True while an app's Heap keeps what lives frozen (its first ``settled`` to its ``release``);
    False: not known. A look-up, where ``gc.get_freeze_count()`` walks every frozen object (65 ms at
    3 million: a 100,000-job console's heap), so that one who would freeze only where something is
    frozen already (the Slurm parse) need not count them."""
    return _PROCESS.frozen


def _froze() -> None:
    gc.freeze()
    _PROCESS.frozen = True


@contextmanager
def collector_off(keep: bool = False) -> Iterator[None]:
    """No cyclic garbage collection inside: a Slurm parse, a Kubernetes list, the snapshot cache
    read, a million curve points or the Queue's rows make objects by the hundred thousand, nearly
    all of them kept (or acyclic: refcounting frees them), and the collections their allocations
    set off walk them again and again (a quarter to a third of a 100,000-line parse; a young list of
    100,000 rows, 5-10 ms each time, in a filter keystroke or its frame). The collector is on again
    after, an exception included; one already off (an app at startup, an outer block) is left off.

    ``keep``: what lives after a block that returns goes out of the collector's sight: frozen where
    objects are frozen already (an app's Heap freezes what a refresh keeps, and says so, ``frozen``,
    without the count that walks them all), else to the oldest generation (``gc.freeze`` then
    ``gc.unfreeze``): else the first collection after it walks every object just made, 0.2 s per
    100,000."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
        if keep:
            if _PROCESS.frozen or gc.get_freeze_count():
                gc.freeze()
            else:
                gc.freeze()
                gc.unfreeze()
    finally:
        gc.enable()


def freeze_restored() -> None:
    """What lives now out of the collector's sight: the console's cached jobs, restored before Textual
    loads, live on, and the collections while Textual is imported need not walk them."""
    gc.freeze()


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

    def idle_for(self) -> float:
        """Seconds since the last key (``key_pressed``); infinite before the first."""
        return self.clock() - self.last_key

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
        gc.unfreeze()
        _PROCESS.frozen = False
        self._resume()


# -- glibc's malloc ----------------------------------------------------------------------------------
MMAP_THRESHOLD = 1 << 20  # bytes: malloc blocks this big or bigger are mapped apart (see map_big_blocks)
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (glibc's malloc.h)


def map_big_blocks() -> bool:
    """glibc only: every malloc block of ``MMAP_THRESHOLD`` bytes or more mapped apart, and unmapped
    when freed. By default glibc raises that threshold to the size of each big block freed (up to
    32 MB), so the big blocks of the next refreshes (a poll's squeue text: 17 MB at 100,000 jobs; the
    dicts and lists of 100,000 entries) come from the heap, which gives freed memory back only from
    its top: the resident memory then held them on, and grew a little with every refresh (100,000
    Slurm jobs, 8 polls: peak 406 -> 394-398 MB, 380 -> 364-367 MB held). Setting the threshold
    keeps it fixed. Once per process (later calls say what the first did); False elsewhere (nothing done)."""
    if _PROCESS.mapped is None:
        _PROCESS.mapped = False
        try:
            if (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"):
                import ctypes  # (here: not on the early paint's path)

                _PROCESS.mapped = ctypes.CDLL(None).mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
        except (ValueError, OSError, AttributeError):  # no such confstr name, no C library, no mallopt
            pass
    return _PROCESS.mapped


# -- shared values -----------------------------------------------------------------------------------
SHARED_MAX = 65536


class Shared(dict):
    """Values made once each by ``make`` and shared by every user of an equal key (sort strings,
    cells, widths): a hit is a plain dict lookup (in C). What is shared is never changed in place
    (the table copies a ``Text`` cell before cutting it to fit). Bounded: emptied when it grows past
    ``SHARED_MAX``."""

    def __init__(self, make: Callable[[Any], Any]) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, value: Any) -> Any:
        if len(self) >= SHARED_MAX:
            self.clear()
        made = self[value] = self.make(value)
        return made


# -- quick constructors ------------------------------------------------------------------------------
def quick_init(*interned: str) -> Callable[[type[_T]], type[_T]]:
    """Give a frozen, slotted dataclass an ``__init__`` that fills its slots through their
    descriptors: a frozen dataclass's own ``__init__`` calls ``object.__setattr__`` per field, which
    makes it 2-3 times slower. Same signature, defaults and immutability afterwards (``replace``
    goes through it too). The ``interned`` fields, when given a plain ``str``, are interned.
    ``maker(cls)`` gives a quicker factory still, for parsers that build objects by the hundred thousand."""

    def wrap(cls: type[_T]) -> type[_T]:
        params, body, plain, given = [], [], [], []
        space: dict[str, Any] = {"_intern": intern, "_str": str}
        for f in fields(cls):  # type: ignore[arg-type]
            if f.default_factory is not MISSING or not f.init:
                raise TypeError(f"quick_init: {cls.__name__}.{f.name} needs the dataclass __init__")
            if f.default is MISSING:
                params.append(f.name)
            else:
                space[f"_default_{f.name}"] = f.default
                params.append(f"{f.name}=_default_{f.name}")
            space[f"_set_{f.name}"] = getattr(cls, f.name).__set__
            value = f"_intern({f.name}) if type({f.name}) is _str else {f.name}" if f.name in interned else f.name
            body.append(f"    _set_{f.name}(self, {value})")
            plain.append(f"    self.{f.name} = {value}")
            given.append(f"    self.{f.name} = {f.name}")
        exec(f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body) + "\n", space)
        init: Any = space["__init__"]
        init.__qualname__ = f"{cls.__qualname__}.__init__"
        setattr(cls, "__init__", init)  # noqa: B010 - mypy refuses a method assignment
        _PROCESS.makers[cls] = _maker(cls, params, plain, dict(space))
        _PROCESS.makers_as_given[cls] = _maker(cls, params, given, dict(space))
        return cls

    return wrap


def _maker(cls: type, params: list[str], plain: list[str], space: dict[str, Any]) -> Callable[..., Any]:
    """The factory ``maker`` gives: the fields stored with plain attribute stores into a mutable
    twin (same slots, so the same layout), which then becomes a ``cls``, about three times quicker
    than ``__init__``'s descriptor calls. ``cls`` itself where the twin cannot be one."""
    twin = type(f"_{cls.__name__}Build", (), {"__slots__": cls.__slots__})  # type: ignore[attr-defined]
    try:
        probe: Any = object.__new__(twin)
        probe.__class__ = cls
    except TypeError:  # a layout __class__ assignment refuses (e.g. a slotted base class)
        return cls
    space.update(_new=object.__new__, _twin=twin, _cls=cls)
    source = f"def make({', '.join(params)}):\n    self = _new(_twin)\n" + "\n".join(plain)
    exec(source + "\n    self.__class__ = _cls\n    return self\n", space)
    make: Any = space["make"]
    make.__qualname__ = f"{cls.__qualname__}.make"
    return make


def maker(cls: type[_T], interned: bool = True) -> Callable[..., _T]:
    """A factory for a ``quick_init`` class: the same arguments, defaults, interning and result as
    ``cls(...)`` (a frozen ``cls`` instance, equal to one its ``__init__`` builds), built quicker.
    ``interned=False``: the strings are stored as given, for a caller that shares them already (a
    parser that interned each word once); the result is equal all the same."""
    return (_PROCESS.makers if interned else _PROCESS.makers_as_given).get(cls, cls)
