"""The job detail's "Nodes and GPUs" lines."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

from yanflow_tui.model import Gpu, GpuState, Job, JobKind, JobState, Node
from yanflow_tui.screens.render.placement import placement_text

WHEN = datetime(2026, 11, 29, tzinfo=timezone.utc)


def job(**kw) -> Job:
    base = Job(
        "7", "c", "train", "alice", JobState.RUNNING, "RUNNING", "", ("n1",), 2, WHEN, None, None, JobKind.SINGLE
    )
    return replace(base, **kw)


def node(name="n1", gpus=(), total=4, allocated=0) -> Node:
    return Node("c", name, "mixed", ("gpu",), 8, 0, 1000, 0, "A100", total, allocated, tuple(gpus))


def test_lists_the_gpus_the_job_holds_with_utilisation_memory_and_idle_ones():
    gpus = [
        Gpu(0, GpuState.ALLOCATED, "7", utilization=97.0, memory_used_mb=40960, memory_total_mb=81920),
        Gpu(1, GpuState.ALLOCATED, "7", utilization=1.0),
        Gpu(2, GpuState.ALLOCATED, "8"),
        Gpu(3),
    ]
    text = placement_text(job(), [node(gpus=gpus, allocated=3)]).plain
    assert text.startswith("n1")
    assert "2 of 4 GPU(s): #0 97% 40.0/80G, #1 1%" in text
    assert "#2" not in text and "1 idle" in text


def test_gpus_without_job_ids_are_not_guessed():
    text = placement_text(job(), [node(gpus=[Gpu(i, GpuState.ALLOCATED) for i in range(4)], allocated=4)]).plain
    assert "GPUs 4/4 allocated on the node" in text and "is not reported" in text


def test_a_gpu_held_on_a_node_outside_job_nodes_is_shown_and_unknown_nodes_are_said():
    text = placement_text(job(nodes=("gone",)), [node("n2", gpus=[Gpu(0, GpuState.ALLOCATED, "7")], total=1)]).plain
    assert "gone" in text and "not in the Nodes data" in text and "n2" in text and "1 of 1 GPU(s): #0" in text


def test_a_pending_job_is_not_placed():
    assert placement_text(job(nodes=(), state=JobState.PENDING), []).plain == "not placed yet"


def test_node_names_from_the_cluster_are_cleaned():
    text = placement_text(job(nodes=("n\x1b[31m1",)), []).plain
    assert "\x1b" not in text


def test_a_finished_job_is_not_given_the_nodes_gpus_of_now():
    text = placement_text(job(state=JobState.FAILED), [node(gpus=[Gpu(0, GpuState.ALLOCATED)], allocated=1)]).plain
    assert "ran here (it holds nothing now)" in text and "allocated on the node" not in text


def test_with_the_idle_rule_only_gpus_idle_for_its_minutes_count():
    gpus = [Gpu(0, GpuState.ALLOCATED, "7", utilization=0.0), Gpu(1, GpuState.ALLOCATED, "7", utilization=0.0)]
    now = placement_text(job(), [node(gpus=gpus, allocated=2)], idle=frozenset()).plain
    assert "idle" not in now.replace("mixed", "")  # under 5 % now, not yet for the rule's minutes
    later = placement_text(job(), [node(gpus=gpus, allocated=2)], idle=frozenset({("n1", 1)})).plain
    assert "1 idle" in later
