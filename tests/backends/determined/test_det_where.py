"""``where`` on Determined against the fake master (the SDK over real HTTP, its answers built with the
SDK's own bindings): a job for a pool with two jobs queued ahead says "2 ahead" and waits; a job naming
no pool is placed in the master's default compute pool's queue; one asking more slots than its pool
has is "never" without a queue read; and ``yanflow-tui where --json`` on a read-only cluster says the
same while only GETs reach the master (issue 30)."""

from __future__ import annotations

import json

import yaml
from dethelpers import cache_token
from jobhelpers import run_cli

from yanflow_tui.placement_rank import NEVER, WAITS, place_all
from yanflow_tui.spec import spec_from_data


def busy_pool(master) -> None:
    """Pool ``gpus``: one agent of 4 slots, 3 held by experiment 20; experiments 21 and 22 queued."""
    master.add_agent("agent-c", 4, pools=("gpus",), busy={0: "ctr-x", 1: "ctr-x", 2: "ctr-x"})
    for exp_id, name in ((20, "running"), (21, "first"), (22, "second")):
        master.add_experiment(exp_id, name, "bob", state="RUNNING", ntrials=1, slots=4)
    master.queue_experiment(20, 3, pool="gpus", held=3)
    master.queue_experiment(21, 4, pool="gpus")
    master.queue_experiment(22, 2, pool="gpus")


def spec(name: str, gpus: int, pool: str | None = None):
    data: dict = {"name": name, "command": "python train.py", "resources": {"gpus": gpus}}
    if pool:
        data["determined"] = {"resource_pool": pool}
    return spec_from_data(data, "<test>")


def mutations(master) -> list:
    return [r for r in master.requests if r.method != "GET"]


async def test_a_job_behind_two_queued_ones_says_2_ahead(master, backend):
    busy_pool(master)
    nodes = await backend.list_nodes()
    (placed,), errors = await place_all([(backend, nodes)], spec("mine", 4, pool="gpus"), 30)
    assert errors == []
    assert placed.cluster == "det" and placed.verdict == WAITS
    assert placed.reason.startswith("2 ahead in resource pool gpus's queue; "), placed.reason
    assert "resource pool gpus" in placed.reason.partition("; ")[2]  # the agents' verdict follows
    assert placed.expected_start is None
    assert mutations(master) == []


async def test_no_pool_named_is_the_masters_default_compute_pool(master, backend):
    busy_pool(master)  # two queued in gpus: not this job's pool
    master.add_experiment(40, "default-queued", "bob", state="RUNNING", ntrials=1, slots=2)
    master.queue_experiment(40, 2, pool="default")
    nodes = await backend.list_nodes()
    (placed,), _ = await place_all([(backend, nodes)], spec("plain", 1), 30)
    assert placed.reason.startswith("1 ahead in resource pool default's queue; "), placed.reason
    master.queues.clear()
    (placed,), _ = await place_all([(backend, nodes)], spec("plain", 1), 30)
    assert placed.reason.startswith("no job queued ahead in resource pool default's queue"), placed.reason


async def test_more_slots_than_the_pool_has_is_never_without_reading_the_queue(master, backend):
    busy_pool(master)
    nodes = await backend.list_nodes()
    before = len(master.requests)
    (placed,), _ = await place_all([(backend, nodes)], spec("huge", 8, pool="gpus"), 30)
    assert placed.verdict == NEVER and "8" in placed.reason and "ahead" not in placed.reason
    assert not [r for r in master.requests[before:] if r.path == "/api/v1/job-queues"]


def test_cli_where_json_read_only_says_2_ahead(master, home, tmp_path):
    cache_token(master)
    busy_pool(master)
    config = tmp_path / "config.yaml"
    entry = {"name": "det", "kind": "determined", "master": master.url, "read_only": True}
    config.write_text(yaml.safe_dump({"clusters": [entry]}))
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump({"name": "mine", "command": "python train.py", "resources": {"gpus": 4},
                                   "determined": {"resource_pool": "gpus"}}))  # fmt: skip
    result = run_cli("--config", str(config), "where", str(job), "--json")
    assert result.returncode == 0, result.stderr
    (found,) = json.loads(result.stdout)["where"]
    assert found["cluster"] == "det" and found["verdict"] == "waits" and found["expected_start"] is None
    assert found["reason"].startswith("2 ahead in resource pool gpus's queue"), found
    assert mutations(master) == []  # read-only: GETs only, counted at the master
    assert any(r.path == "/api/v1/job-queues" for r in master.requests)


async def test_a_queue_the_master_refuses_leaves_the_agents_verdict(master, backend, monkeypatch):
    from determined.common.api import bindings, errors

    def refused(*args, **kwargs):
        raise errors.ForbiddenException("no permission to view the job queue")

    busy_pool(master)
    monkeypatch.setattr(bindings, "get_GetJobs", refused)
    nodes = await backend.list_nodes()
    (placed,), errors_ = await place_all([(backend, nodes)], spec("mine", 4, pool="gpus"), 30)
    assert errors_ == [] and placed.verdict == WAITS and "ahead" not in placed.reason
    assert "the pool's queue was not read (permission denied: " in placed.reason and "no permission" in placed.reason
