"""Idle GPUs: under the threshold for the configured time is idle, told once per episode; the rule comes
from the config file, checked with its line. The clock is injected: no sleeping."""

from __future__ import annotations

import pytest
from waiting import ManualClock

from yanflow_tui.config import parse_config
from yanflow_tui.errors import SpecError
from yanflow_tui.idlegpus import IdleRule, IdleTracker, notices
from yanflow_tui.model import Gpu, GpuState, Node


def node(name: str, *utils: float | None, job: str = "7") -> Node:
    gpus = tuple(Gpu(i, GpuState.ALLOCATED, job, utilization=u) for i, u in enumerate(utils))
    return Node("c", name, "mixed", gpus=gpus, gpus_total=len(gpus), gpus_allocated=len(gpus))


def test_a_job_at_zero_for_the_configured_time_is_idle_and_told_once_one_at_fifty_is_not():
    clock = ManualClock()
    tracker = IdleTracker(IdleRule(below=5, seconds=600), clock)
    busy = Node("c", "g2", "mixed", gpus=(Gpu(0, GpuState.ALLOCATED, "8", utilization=50.0),))
    nodes = [node("g1", 0.0, 0.0), busy]
    assert tracker.update("c", nodes) == []
    clock.now += 599
    assert tracker.update("c", nodes) == [] and tracker.idle_jobs() == frozenset()
    clock.now += 1
    told = tracker.update("c", nodes)
    assert [(e.node, e.index, e.job_id, e.since) for e in told] == [("g1", 0, "7", 1000.0), ("g1", 1, "7", 1000.0)]
    assert tracker.idle_jobs() == {"c/7"}
    assert tracker.idle_gpus("c") == {("g1", 0), ("g1", 1)}
    assert notices(told, tracker.rule) == [
        "c: job 7 holds 2 idle GPUs (g1 GPU 0 at 0%, g1 GPU 1 at 0%; under 5% for 10 minutes)"
    ]
    for _ in range(3):  # later refreshes: still idle, never told again
        clock.now += 60
        assert tracker.update("c", nodes) == []
    assert tracker.idle_jobs() == {"c/7"}


def test_an_episode_ends_when_the_gpu_works_and_a_new_one_is_told_again():
    clock = ManualClock()
    tracker = IdleTracker(IdleRule(below=5, seconds=60), clock)
    tracker.update("c", [node("g1", 1.0)])
    clock.now += 60
    assert len(tracker.update("c", [node("g1", 1.0)])) == 1
    clock.now += 10
    assert tracker.update("c", [node("g1", 5.0)]) == [] and tracker.idle_jobs() == frozenset()  # 5 is not under 5
    clock.now += 10
    assert tracker.update("c", [node("g1", 0.0)]) == []  # a new episode starts from zero
    clock.now += 59
    assert tracker.update("c", [node("g1", 0.0)]) == []
    clock.now += 1
    assert len(tracker.update("c", [node("g1", 0.0)])) == 1


def test_unknown_utilisation_free_gpus_and_another_job_are_not_idle_episodes():
    clock = ManualClock()
    tracker = IdleTracker(IdleRule(seconds=0), clock)
    free = Node("c", "g3", "idle", gpus=(Gpu(0, GpuState.FREE, utilization=0.0),))
    assert tracker.update("c", [node("g1", None), free]) == []
    tracker = IdleTracker(IdleRule(seconds=60), clock)
    tracker.update("c", [node("g1", 0.0, job="7")])
    clock.now += 60
    assert tracker.update("c", [node("g1", 0.0, job="9")]) == []  # the GPU went to job 9: its own episode
    assert tracker.under_since("c", "g1", 0, "9") == clock.now


def test_the_rule_comes_from_the_config_file():
    config = parse_config("clusters: [{name: l, kind: local}]\nidle_gpus: {below_percent: 10, minutes: 2}\n", "c.yaml")
    assert config.idle_gpus == IdleRule(below=10, seconds=120)
    assert parse_config("clusters: [{name: l, kind: local}]\n", "c.yaml").idle_gpus == IdleRule(5, 600)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("idle_gpus: {below_percent: 120}", "c.yaml:2: idle_gpus.below_percent: expected a percentage"),
        ("idle_gpus: {minutes: -1}", "c.yaml:2: idle_gpus.minutes: expected a number >= 0"),
        ("idle_gpus: {minute: 3}", "c.yaml:2: idle_gpus"),
        ("idle_gpus: 5", "c.yaml:2: idle_gpus: expected a mapping"),
    ],
)
def test_a_wrong_idle_rule_is_refused_with_its_file_and_line(text, says):
    with pytest.raises(SpecError) as caught:
        parse_config(f"clusters: [{{name: l, kind: local}}]\n{text}\n", "c.yaml")
    assert says in str(caught.value)
