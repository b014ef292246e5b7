"""The Slurm parser's caches belong to their backend (issue #29): two backends (two clusters) never
share a table, a queue one of them parsed does not change the other's answers, and ``parse.py`` keeps
no state of its own between calls. No cluster needed."""

from __future__ import annotations

import collections
import copy
import itertools
import weakref

from servedslurm import Served
from slurmreference import ReferenceCaches

from yanflow_tui.backends.slurm import parse
from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.backends.slurm.parsecache import ParseCaches
from yanflow_tui.config import ClusterConfig
from yanflow_tui.model import JobState


def line(job_id: int, state: str, nodes: str = "", name: str = "train") -> str:
    cols = {
        "job_id": str(job_id),
        "array_job_id": str(job_id),
        "array_task": "N/A",
        "state": state,
        "reason": "None" if state != "PENDING" else "Priority",
        "user": "alice",
        "node_count": "2" if nodes else "1",
        "nodes": nodes,
        "tres_per_node": "gres:gpu:a100:2",
        "submit": "1795995071",
        "start": "1795995100" if state == "RUNNING" else "N/A",
        "end": "NONE" if state == "RUNNING" else "N/A",
        "partition": "gpu",
        "account": "(null)",
        "qos": "normal",
        "time_limit": "1:00:00",
        "cpus": "16",
        "display_id": str(job_id),
        "name": name,
    }
    return parse.SEP.join(cols[name] for name, _ in parse.SQUEUE_FIELDS)


async def test_two_backends_keep_their_own_caches_and_one_queue_does_not_change_the_others_answers():
    """Both named ``hpc`` (the worst case for tables kept by cluster name): job 5 runs on one and is
    pending on the other; each answer is its own, and a parse of one between two polls of the other
    leaves the other's kept lines, Jobs and changes as they were."""
    first = "\n".join([line(5, "RUNNING", "gpu[01-02]"), line(6, "PENDING")]) + "\n"
    other = "\n".join([line(5, "PENDING", name="eval"), line(7, "RUNNING", "cpu[1-2]")]) + "\n"
    one = SlurmBackend(ClusterConfig("hpc", "slurm"), Served([first.encode()]))
    two = SlurmBackend(ClusterConfig("hpc", "slurm"), Served([other.encode()]))
    assert one.parse_caches is not two.parse_caches
    before = await one.list_jobs()
    assert all(not table for table in vars_of(two.parse_caches).values() if isinstance(table, dict))
    answer = await two.list_jobs()
    assert [(j.id, j.state, j.name, j.nodes) for j in answer] == [
        ("5", JobState.PENDING, "eval", ()),
        ("7", JobState.RUNNING, "train", ("cpu1", "cpu2")),
    ]
    assert "gpu[01-02]" in one.parse_caches.hostlists and "gpu[01-02]" not in two.parse_caches.hostlists
    assert "cpu[1-2]" not in one.parse_caches.hostlists
    again = await one.list_jobs()
    assert [j.state for j in again] == [JobState.RUNNING, JobState.PENDING] and again[0].nodes == ("gpu01", "gpu02")
    assert all(a is b for a, b in zip(before, again, strict=True))  # its own lines kept: the same Jobs
    assert again.changes is not None and not again.changes.put and not again.changes.gone  # its own last parse
    assert [(j.id, j.state) for j in await two.list_jobs()] == [("5", JobState.PENDING), ("7", JobState.RUNNING)]


def vars_of(caches: ParseCaches) -> dict[str, object]:
    return {name: getattr(caches, name) for name in ParseCaches.__slots__}


def test_a_parse_writes_to_the_caches_it_is_given_only():
    text = "\n".join([line(5, "RUNNING", "gpu[01-02]"), line(6, "PENDING")]) + "\n"
    mine, theirs = ParseCaches(), ParseCaches()
    jobs = parse.squeue_jobs(text, "hpc", mine)
    assert mine.lines["hpc"] and mine.hostlists and mine.text_details
    assert all(not table for table in vars_of(theirs).values() if isinstance(table, dict))
    row = ["gpu01", "idle", "gpu:a100:8", "gpu:a100:0(IDX:N/A)", "gpu", "0/64/0/64", "1000", "0", "none"]
    nodes = parse.parse_sinfo_text(parse.SEP.join(row) + "\n", "hpc", mine)
    assert nodes[0].gpus_total == 8 and mine.gpus and not theirs.gpus
    mine.clear()
    assert all(not table for table in vars_of(mine).values() if isinstance(table, dict))
    cleared = parse.squeue_jobs(text, "hpc", mine)
    assert cleared == jobs and all(a is not b for a, b in zip(cleared, jobs, strict=True))  # parsed anew


# Types whose instances hold state that changes (a table, a counter, a cache object).
MUTABLE = (dict, list, set, bytearray, collections.deque, itertools.count, weakref.WeakValueDictionary, ParseCaches)
# The constant tables parse.py reads and never writes (checked below: a parse leaves them as they were).
CONSTANT_TABLES = {"_STATES", "HELD_STATES"}


def test_the_parser_module_keeps_no_state_of_its_own():
    found = {
        name
        for name, value in vars(parse).items()
        if not name.startswith("__") and (isinstance(value, MUTABLE) or hasattr(value, "cache_info"))
    }
    assert found == CONSTANT_TABLES, "parse.py holds state: keep it in ParseCaches instead"
    tables = {name: copy.deepcopy(getattr(parse, name)) for name in CONSTANT_TABLES}
    text = "\n".join([line(5, "RUNNING", "gpu[01-02]"), line(6, "CANCELLED by 0"), line(7, "weird")]) + "\n"
    caches = ReferenceCaches()
    parse.squeue_jobs(text, "c", caches)
    parse.build_jobs(parse.parse_squeue_json({"jobs": [{"job_id": 8, "job_state": "NEW"}]}, caches), "c", caches)
    parse.parse_sinfo_json({"nodes": [{"name": "n", "state": "drain", "gres": "gpu:2"}]}, "c", caches)
    assert parse.normalise_state("CANCELLED by 0") is JobState.CANCELLED
    assert {name: getattr(parse, name) for name in CONSTANT_TABLES} == tables
