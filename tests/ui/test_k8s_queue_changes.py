"""The Queue over two Kubernetes clusters on the same namespace of the API emulator: one's answers carry
``JobChanges`` (the backend's own), the other's are plain lists (compared in full). Through creates,
phase changes, new ranks of a multi-node job and deletions, both show the very same rows."""

from __future__ import annotations

from fakes.k8s_api import make_job, make_pod
from k8shelpers import cluster
from uihelpers import make_app, refreshed
from waiting import wait_for

from yanflow_tui.backends.kubernetes.extract import job_info, pod_info
from yanflow_tui.screens.models.queueview import MARK
from yanflow_tui.screens.queue import JobTable

NS = "ml"


def shown(table: JobTable, name: str) -> list[tuple[str, str]]:
    """(id, row text less the cluster and any mark) of cluster ``name``'s rows, in the table's order."""
    out = []
    for key in table.row_keys:
        where, _, job_id = key.partition("/")
        if where == name:
            out.append((job_id, (table.row_text(key) or "").partition(" ")[2].removeprefix(MARK)))
    return out


def caught_up(emulator, backend) -> bool:
    """The backend's job and pod caches hold what the emulator holds."""
    if set(backend._reflectors) < {"jobs", "pods"}:
        return False
    for resource, extract in (("jobs", job_info), ("pods", pod_info)):
        want = {o["metadata"]["name"]: extract(o) for o in emulator.objects(resource)}
        if {r.name: r for r in backend._reflectors[resource].values()} != want:
            return False
    return True


async def test_the_queue_from_kubernetes_changes_shows_what_a_full_compare_shows(
    home, emulator, kubeconfig, monkeypatch
):
    emulator.add_node("gpu-a", 8)
    emulator.put("jobs", make_job("mn", NS, parallelism=2, indexed=True))
    emulator.put("pods", make_pod("mn-0", NS, node="gpu-a", job="mn", index=0))
    for name in ("a", "b"):
        emulator.put("jobs", make_job(name, NS))
        emulator.put("pods", make_pod(f"{name}-x", NS, node="gpu-a", job=name))
    app = make_app(cluster(kubeconfig, "told"), cluster(kubeconfig, "plain"))
    plain = app.hub.backend("plain")
    answer = plain.list_jobs

    async def compared_in_full():
        return list(await answer())  # (a plain list: the Queue compares every job)

    monkeypatch.setattr(plain, "list_jobs", compared_in_full)
    steps = [
        lambda: emulator.set_pod_phase(NS, "a-x", "Succeeded"),
        lambda: emulator.put("pods", make_pod("mn-1", NS, job="mn", index=1, phase="Pending")),
        lambda: emulator.put("jobs", make_job("c", NS)),
        lambda: emulator.put("pods", make_pod("mn-1", NS, node="gpu-a", job="mn", index=1, waiting="ErrImagePull")),
        lambda: emulator.remove("jobs", NS, "b"),
        lambda: emulator.remove("pods", NS, "mn-0"),
        lambda: emulator.set_pod_phase(NS, "a-x", "Failed"),
        lambda: emulator.patch("jobs", NS, "a", {"status": {"conditions": [{"type": "Failed", "status": "True"}]}}),
    ]
    async with app.run_test(size=(160, 30)) as pilot:
        table = app.screen.query_one(JobTable)
        await wait_for(pilot, lambda: {"told/ml/a", "plain/ml/a"} <= set(table.row_keys), what="rows")
        told = 0
        backends = [app.hub.backend(name) for name in ("told", "plain")]
        for step in [lambda: None, *steps]:
            step()
            await wait_for(pilot, lambda: all(caught_up(emulator, b) for b in backends), what="caches caught up")
            await refreshed(pilot, app)
            told += app.hub.snapshots["told"].job_changes is not None
            assert app.hub.snapshots["plain"].job_changes is None
            assert shown(table, "told") == shown(table, "plain") != []
        assert told >= len(steps)
        rows = dict(shown(table, "told"))
        assert "ml/b" not in rows and "ml/c" in rows and "failed" in rows["ml/a"].lower()
