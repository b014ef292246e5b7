"""``explain`` on Determined against the fake master: an experiment behind two others in its resource
pool's queue says "2 ahead" with the slots it asks for and the pool's free slots; the first in the
queue waits for slots; a paused one says how to activate it; and only GETs reach the master."""

from __future__ import annotations

from dethelpers import make_backend

from yanflow_tui.explain import Category


async def test_an_experiment_behind_two_others_says_2_ahead(master, backend):
    master.add_agent("agent-c", 4, pools=("gpus",), busy={0: "ctr-x", 1: "ctr-x", 2: "ctr-x"})
    for exp_id, name in ((20, "running"), (21, "first"), (22, "second"), (23, "mine")):
        master.add_experiment(exp_id, name, "alice", state="RUNNING", ntrials=1, slots=4)
    master.queue_experiment(20, 3, pool="gpus", held=3)  # scheduled: holds 3 of the pool's 4 slots
    master.queue_experiment(21, 4, pool="gpus")
    master.queue_experiment(22, 2, pool="gpus")
    master.queue_experiment(23, 4, pool="gpus")
    before = len([r for r in master.requests if r.method != "GET"])

    mine = await backend.explain("exp-23")
    assert mine.category is Category.PRIORITY and mine.state == "QUEUED"
    assert "2 jobs ahead of it in resource pool gpus" in mine.reason
    assert "it asks for 4 slots, 1 of 4 free in the pool" in mine.reason
    assert mine.short == "queued, 2 ahead" and dict(mine.details)["Jobs ahead"] == "2"
    assert mine.expected_start is None and mine.expected_start_why

    first = await backend.explain("exp-21")
    assert first.category is Category.RESOURCES and first.short == "queued, first"
    running = await backend.explain("exp-20")
    assert running.category is Category.RUNNING
    assert [r for r in master.requests if r.method != "GET"][before:] == []  # reads only


async def test_a_paused_experiment_says_how_to_activate_it(master, backend):
    master.add_experiment(30, "paused", "alice", state="PAUSED", ntrials=1)
    found = await backend.explain("exp-30")
    assert found.category is Category.HELD and "activate" in found.action and found.short == "paused"


async def test_read_only_explains(master, backend):
    master.add_experiment(31, "q", "alice", state="RUNNING", ntrials=1)
    master.queue_experiment(31, 2)
    read_only = make_backend(master, read_only=True)
    found = await read_only.explain("exp-31")
    assert found.category is Category.RESOURCES and "resource pool default" in found.reason
