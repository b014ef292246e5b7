"""The domain model's per-object classes: slotted, frozen, with quick_init's __init__ and interning."""

from __future__ import annotations

import pickle
from dataclasses import FrozenInstanceError, replace

import pytest

from yanflow_tui.model import Gpu, GpuState, Job, JobKind, JobState, LogLine, Node, intern_all


def test_job_keeps_the_dataclass_signature_defaults_and_immutability():
    job = Job("7", "hpc", "train", "alice", JobState.RUNNING, nodes=("gpu01",), kind=JobKind.SLURM)
    assert (job.raw_state, job.gpus, job.submit_time, job.parent, job.details) == ("", 0, None, "", ())
    assert job == Job("7", "hpc", "train", "alice", JobState.RUNNING, nodes=("gpu01",), kind=JobKind.SLURM)
    assert hash(job) == hash(replace(job))
    assert replace(job, name="eval").name == "eval" and job.name == "train"
    with pytest.raises(FrozenInstanceError):
        job.name = "x"  # type: ignore[misc]
    with pytest.raises((AttributeError, TypeError)):  # 3.11's frozen slots raise TypeError (cpython#90562)
        job.extra = 1  # type: ignore[attr-defined]
    assert pickle.loads(pickle.dumps(job)) == job
    with pytest.raises(TypeError):
        Job("7", "hpc", "train", "alice")  # type: ignore[call-arg]


def test_repeated_words_are_one_string_each():
    built = [
        Job("1", "".join(["h", "pc"]), "n", "".join(["ali", "ce"]), JobState.PENDING, "".join(["PEN", "DING"]))
        for _ in range(2)
    ]
    assert built[0].cluster is built[1].cluster and built[0].user is built[1].user
    assert built[0].raw_state is built[1].raw_state
    nodes = [Node("".join(["c", "1"]), "n1", "".join(["id", "le"])) for _ in range(2)]
    assert nodes[0].cluster is nodes[1].cluster and nodes[0].state is nodes[1].state
    gpus = [Gpu(0, GpuState.FREE, name="".join(["H1", "00"])) for _ in range(2)]
    assert gpus[0].name is gpus[1].name
    lines = [LogLine("".join(["4", "2"]), "x") for _ in range(2)]
    assert lines[0].job_id is lines[1].job_id
    first, second = intern_all(["".join(["gpu", "01"])]), intern_all(["".join(["gpu", "01"])])
    assert first[0] is second[0]


def test_a_value_that_is_not_a_plain_string_is_kept_as_given():
    class Name(str):
        pass

    job = Job("1", "c", "n", Name("bob"), JobState.RUNNING)
    assert type(job.user) is Name and Job("1", "c", "n", "u", JobState.RUNNING, exit_code=None).exit_code is None
