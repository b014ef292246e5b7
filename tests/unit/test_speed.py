"""Speed in one room (yanflow_tui.speed): the GC policy for a big steady heap (freeze after a refresh, a full
pass only when quiet), the collector off for a big build, malloc's big blocks, and no speed trick outside it."""

from __future__ import annotations

import gc
import os
import re
import sys
import weakref
from pathlib import Path

import pytest

from yanflow_tui import speed
from yanflow_tui.speed import Heap


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_settled_moves_what_lives_out_of_the_collectors_sight_and_release_hands_it_back():
    keeper = Heap(Clock())
    try:
        kept = [[] for _ in range(100)]  # tracked containers
        assert not speed.frozen()
        keeper.settled()
        assert gc.get_freeze_count() >= len(kept) and speed.frozen()  # (said without counting them)
    finally:
        keeper.release()
    assert gc.get_freeze_count() == 0 and not speed.frozen()


def test_the_full_collection_waits_for_its_period_and_for_a_quiet_keyboard():
    clock = Clock()
    keeper = Heap(clock)
    try:
        clock.now += speed.FULL_EVERY - 1
        assert not keeper.tick()  # not due yet
        clock.now += 2
        keeper.key_pressed()
        clock.now += speed.QUIET / 2
        assert not keeper.tick()  # due, but a key just came
        clock.now += speed.QUIET
        assert keeper.tick()
        assert keeper.full_collections == 1 and gc.get_freeze_count() > 0
        assert not keeper.tick()  # the next one is a period away
    finally:
        keeper.release()


def test_a_full_collection_frees_cyclic_garbage_that_was_frozen():
    class Node:
        other: object = None

    keeper = Heap(Clock())
    try:
        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle: only the collector frees it
        gone = weakref.ref(a)
        keeper.settled()
        del a, b
        gc.collect()
        assert gone() is not None  # frozen: out of the collector's sight, not freed
        keeper.full_collection()
        assert gone() is None
    finally:
        keeper.release()


def test_a_closed_screen_brings_the_full_collection_forward_keys_or_not():
    clock = Clock()
    keeper = Heap(clock)
    try:
        keeper.key_pressed()
        keeper.dropped()
        assert not keeper.tick()  # a key just came: not yet
        clock.now += speed.QUIET
        assert keeper.tick()  # quiet: no need to wait FULL_EVERY
        assert keeper.dropped_screens == 0
        for _ in range(speed.DROPPED_LIMIT - 1):
            keeper.key_pressed()
            keeper.dropped()
            assert not keeper.tick()
        keeper.key_pressed()
        keeper.dropped()
        assert keeper.tick()  # keys all along: at the limit it runs anyway
        assert keeper.full_collections == 2
    finally:
        keeper.release()


def test_hold_stops_collecting_until_the_first_settled_and_release_always_resumes():
    assert gc.isenabled()
    keeper = Heap(Clock())
    try:
        keeper.hold()
        assert not gc.isenabled()
        keeper.tick()  # the first tick settles
        assert gc.isenabled()
        keeper.hold()
    finally:
        keeper.release()
    assert gc.isenabled()


def test_hold_leaves_a_collector_turned_off_elsewhere_off():
    gc.disable()
    keeper = Heap(Clock())
    try:
        keeper.hold()
        keeper.settled()
        assert not gc.isenabled()
    finally:
        keeper.release()
        gc.enable()


def _resident_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"),
    reason="glibc's malloc only",
)
def test_a_big_block_freed_is_given_back_even_after_a_bigger_one():
    """glibc's own threshold rises to the biggest block freed: the next big block (a poll's squeue
    text) then comes from the heap and is kept when freed. With ``map_big_blocks`` it is unmapped."""
    assert speed.map_big_blocks() and speed.map_big_blocks()  # once per process, the same answer after
    bigger = bytearray(16 * 2**20)  # freed: by default, the threshold would rise to 16 MB
    del bigger
    block = bytearray(12 * 2**20)  # (zeroed: resident)
    held = _resident_mb()
    del block
    assert _resident_mb() < held - 10


def test_idle_for_counts_from_the_last_key():
    clock = Clock()
    keeper = Heap(clock)
    assert keeper.idle_for() == float("inf")  # no key yet
    keeper.key_pressed()
    clock.now += 1.5
    assert keeper.idle_for() == 1.5


def test_collector_off_turns_it_on_again_after_an_exception_and_leaves_one_turned_off_elsewhere_off():
    seen = []
    gc.callbacks.append(lambda phase, info: seen.append(phase))
    try:
        with speed.collector_off():
            assert not gc.isenabled()
            garbage = [[[] for _ in range(10)] for _ in range(5000)]  # allocations that would set one off
            del garbage
        assert seen == [] and gc.isenabled()
    finally:
        gc.callbacks.pop()
    with pytest.raises(KeyError), speed.collector_off():
        raise KeyError("x")
    assert gc.isenabled()
    gc.disable()
    try:
        with speed.collector_off(), speed.collector_off(keep=True):
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_collector_off_keep_moves_what_lives_out_of_sight_frozen_only_where_something_is():
    assert gc.get_freeze_count() == 0
    with speed.collector_off(keep=True):
        made = [[] for _ in range(100)]
    assert gc.get_freeze_count() == 0 and gc.isenabled()  # to the oldest generation, not frozen
    keeper = Heap(Clock())
    try:
        keeper.settled()
        before = gc.get_freeze_count()
        with speed.collector_off(keep=True):
            more = [[] for _ in range(100)]
        after = gc.get_freeze_count()
        # (a frozen object freed meanwhile, e.g. by another test's thread, lowers the count: never raises it)
        assert after >= before + len(more) // 2
        with speed.collector_off():  # not kept: nothing more frozen
            others = [[] for _ in range(100)]
        assert gc.get_freeze_count() <= after and others
    finally:
        keeper.release()
    assert made


def test_shared_makes_each_value_once_and_is_bounded(monkeypatch):
    made = []
    shared = speed.Shared(lambda key: made.append(key) or key.upper())
    assert shared["a"] == "A" and shared["a"] == "A" and made == ["a"]
    monkeypatch.setattr(speed, "SHARED_MAX", 3)
    for key in "bcd":
        shared[key]
    assert len(shared) == 1 and made == ["a", "b", "c", "d"]  # emptied when full, then "d" made


SOURCES = Path(__file__).resolve().parents[2]
PACKAGE = ("yanflow_tui", "screens", "backends")
COLLECTOR = re.compile(r"\bgc\.(disable|enable|freeze|unfreeze)\(|\bfrom gc import\b|\bmallopt\b")
HEAP_CLOCK = re.compile(r"\bheap\.clock\b|\.last_key\b")


def _sources_using(pattern: re.Pattern[str]) -> set[str]:
    return {
        str(path.relative_to(SOURCES))
        for folder in PACKAGE
        for path in (SOURCES / folder).rglob("*.py")
        if pattern.search(path.read_text(encoding="utf-8"))
    }


def test_only_speed_turns_the_collector_off_freezes_or_sets_malloc():
    assert _sources_using(COLLECTOR) == {"yanflow_tui/speed.py"}


def test_only_speed_reads_the_heaps_clock():
    """The Queue asks the app (``idle_for``, ``settled``), not the heap's clock and last key."""
    assert _sources_using(HEAP_CLOCK) == {"yanflow_tui/speed.py"}
