"""The Queue's REASON column shows the backend's short phrase for a reason where the cluster can
explain (``ClusterSnapshot.reason_phrase``, a pure mapping: no call per row), and the reason as it is
elsewhere; the hub takes the phrase from a backend with ``capabilities.explain`` only."""

from __future__ import annotations

from dataclasses import replace

from yanflow_tui.backends.slurm import reasons
from yanflow_tui.config import ClusterConfig, Config
from yanflow_tui.hub import ClusterSnapshot, Health, Hub
from yanflow_tui.model import Job, JobState
from yanflow_tui.screens.models.queueview import QueueView


def pending(cluster: str, i: int, reason: str) -> Job:
    return Job(str(i), cluster, f"job-{i}", "ann", JobState.PENDING, reason=reason)


def test_reason_cells_show_the_clusters_phrase_where_it_has_one():
    reasons_ = ["QOSGrpGRES", "ReqNodeNotAvail, UnavailableNodes:g[2-3]", "JobHeldUser", "Dependency"]
    slurm = ClusterSnapshot(
        "s", "slurm", False, health=Health.OK, jobs=tuple(pending("s", i, r) for i, r in enumerate(reasons_)),
        reason_phrase=reasons.short_phrase,
    )  # fmt: skip
    plain = ClusterSnapshot("f", "fake", False, health=Health.OK, jobs=(pending("f", 9, "Resources"),))
    view = QueueView(lambda key: -1)
    rows = view.visible_rows({"s": slurm, "f": plain}, {}, lambda: 0.0)
    cells = {row.key: str(row.cells[8]) for row in rows}
    assert cells == {
        "s/0": "QOS GPU limit",
        "s/1": "nodes unavailable: g[2-3]",
        "s/2": "held by user",
        "s/3": "waits for a job",
        "f/9": "Resources",  # no phrase: the reason as the backend gave it
    }
    view.given(rows)
    moved = replace(slurm, jobs=(pending("s", 0, "Priority"), *slurm.jobs[1:]))
    rows = view.visible_rows({"s": moved, "f": plain}, {}, lambda: 0.0)
    assert str(next(r for r in rows if r.key == "s/0").cells[8]) == "others first"


def test_the_hub_gives_the_phrase_of_backends_that_explain_only(fake_backend):
    hub = Hub(Config(clusters=(ClusterConfig("hpc", "fake"),)))
    assert hub.snapshots["hpc"].reason_phrase is None
    slurm = Hub(Config(clusters=(ClusterConfig("s", "slurm"),)))
    phrase = slurm.snapshots["s"].reason_phrase
    assert phrase is not None and phrase("JobHeldUser") == "held by user"
