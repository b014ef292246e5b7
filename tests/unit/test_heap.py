"""The GC policy for a big steady heap (yanflow_tui.heap): freeze after a refresh, a full pass only when quiet."""

from __future__ import annotations

import gc
import os
import sys
import weakref

import pytest

from yanflow_tui import heap
from yanflow_tui.heap import Heap


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_settled_moves_what_lives_out_of_the_collectors_sight_and_release_hands_it_back():
    keeper = Heap(Clock())
    try:
        kept = [[] for _ in range(100)]  # tracked containers
        assert not heap.frozen()
        keeper.settled()
        assert gc.get_freeze_count() >= len(kept) and heap.frozen()  # (said without counting them)
    finally:
        keeper.release()
    assert gc.get_freeze_count() == 0 and not heap.frozen()


def test_the_full_collection_waits_for_its_period_and_for_a_quiet_keyboard():
    clock = Clock()
    keeper = Heap(clock)
    try:
        clock.now += heap.FULL_EVERY - 1
        assert not keeper.tick()  # not due yet
        clock.now += 2
        keeper.key_pressed()
        clock.now += heap.QUIET / 2
        assert not keeper.tick()  # due, but a key just came
        clock.now += heap.QUIET
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
        clock.now += heap.QUIET
        assert keeper.tick()  # quiet: no need to wait FULL_EVERY
        assert keeper.dropped_screens == 0
        for _ in range(heap.DROPPED_LIMIT - 1):
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
    assert heap.map_big_blocks() and heap.map_big_blocks()  # once per process, the same answer after
    bigger = bytearray(16 * 2**20)  # freed: by default, the threshold would rise to 16 MB
    del bigger
    block = bytearray(12 * 2**20)  # (zeroed: resident)
    held = _resident_mb()
    del block
    assert _resident_mb() < held - 10
