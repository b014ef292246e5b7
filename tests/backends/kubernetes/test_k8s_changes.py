"""What the Kubernetes backend says changed between two answers (``JobList.changes``, from the rows
kept per Job: ``jobrows``), over real HTTP against the API emulator: the first answer and the first
after a re-list say nothing; otherwise the change set is exactly the difference from the answer it
names, the rows not in it are the very same objects, the rows equal those built afresh from the
caches, and the Queue's lists kept from those changes equal the lists worked out afresh."""

from __future__ import annotations

import random

import changeshelpers
import pytest
from fakes.k8s_api import make_job, make_pod
from k8shelpers import cluster
from waiting import async_wait_until

from yanflow_tui.backends.kubernetes.backend import KubernetesBackend
from yanflow_tui.backends.kubernetes.extract import job_info, pod_info
from yanflow_tui.backends.kubernetes.views import build_jobs
from yanflow_tui.model import Job, JobList, JobState

NS = "ml"


@pytest.fixture
async def backend(kubeconfig):
    b = KubernetesBackend(cluster(kubeconfig))
    await b._ensure_started()  # (the caches listed: ``settle`` reads them)
    yield b
    await b.close()


class Polls(changeshelpers.Polls):
    """``changeshelpers.Polls``, each answer's rows also equal to those built afresh from the caches."""

    def check(self, answer: JobList) -> None:
        reflectors = self.backend._reflectors
        assert list(answer) == build_jobs("k8s", reflectors["jobs"].values(), reflectors["pods"].values())


def caught_up(emulator, backend: KubernetesBackend) -> bool:
    """The backend's job and pod caches hold what the emulator holds (in the test's namespace)."""
    for resource, extract in (("jobs", job_info), ("pods", pod_info)):
        want = {(NS, o["metadata"]["name"]): extract(o) for o in emulator.objects(resource) if _ours(o)}
        have = {(r.namespace, r.name): r for r in backend._reflectors[resource].values()}
        if have != want:
            return False
    return True


def _ours(obj: dict) -> bool:
    return obj["metadata"].get("namespace") == NS


async def settle(emulator, backend: KubernetesBackend) -> None:
    await async_wait_until(lambda: caught_up(emulator, backend), what="the caches caught up")


def by_id(jobs) -> dict[str, Job]:
    return {j.id: j for j in jobs}


async def test_the_first_answer_says_nothing_then_only_the_job_that_changed_is_put(emulator, backend):
    emulator.add_node("gpu-a", 8)
    for name in ("a", "b", "c"):
        emulator.put("jobs", make_job(name, NS))
        emulator.put("pods", make_pod(f"{name}-x", NS, node="gpu-a", job=name))
    polls = Polls(backend)
    await settle(emulator, backend)
    first = await polls.poll()
    assert first.changes is None and {j.id for j in first} == {"ml/a", "ml/b", "ml/c"}

    second = await polls.poll()  # nothing moved: nothing put, the very same rows
    assert second.changes is not None and second.changes.since == first.serial
    assert (second.changes.put, second.changes.gone) == ((), ())
    assert all(map(lambda a, b: a is b, second, first))

    emulator.set_pod_phase(NS, "b-x", "Succeeded")
    await settle(emulator, backend)
    built = backend._job_rows.rebuilt
    third = await polls.poll()
    assert third.changes is not None and third.changes.since == second.serial
    assert [j.id for j in third.changes.put] == ["ml/b"]
    assert by_id(second)["ml/b"].state is JobState.RUNNING and third.changes.put[0].state is not JobState.RUNNING
    assert third.changes.gone == ()
    assert by_id(third)["ml/a"] is by_id(first)["ml/a"] and by_id(third)["ml/c"] is by_id(first)["ml/c"]
    assert backend._job_rows.rebuilt == built + 1  # the one job built again, not all three

    emulator.remove("jobs", NS, "c")
    emulator.put("jobs", make_job("d", NS))
    await settle(emulator, backend)
    fourth = await polls.poll()
    assert fourth.changes is not None
    assert [j.id for j in fourth.changes.put] == ["ml/d"] and fourth.changes.gone == ("ml/c",)
    assert polls.told == 3


async def test_a_rank_of_a_multi_node_job_changing_puts_its_row_and_deleting_it_takes_rows_out(emulator, backend):
    emulator.add_node("gpu-a", 8)
    emulator.put("jobs", make_job("mn", NS, parallelism=2, indexed=True))
    emulator.put("jobs", make_job("solo", NS))
    for i in (0, 1):
        emulator.put("pods", make_pod(f"mn-{i}", NS, node="gpu-a", job="mn", index=i))
    polls = Polls(backend)
    await settle(emulator, backend)
    first = await polls.poll()
    assert [j.id for j in first if j.parent == "ml/mn"] == ["ml/mn/mn-0", "ml/mn/mn-1"]
    second = await polls.poll()

    emulator.put("pods", make_pod("mn-1", NS, node="gpu-a", job="mn", index=1, waiting="CrashLoopBackOff"))
    await settle(emulator, backend)
    third = await polls.poll()
    assert third.changes is not None and third.changes.since == second.serial
    put = by_id(third.changes.put)
    assert put["ml/mn/mn-1"].reason == "CrashLoopBackOff"
    assert set(put) <= {"ml/mn", "ml/mn/mn-1"}  # the job's row only where it reads differently
    assert (
        by_id(third)["ml/mn/mn-0"] is by_id(first)["ml/mn/mn-0"] and by_id(third)["ml/solo"] is by_id(first)["ml/solo"]
    )

    emulator.remove("pods", NS, "mn-0")
    await settle(emulator, backend)
    fourth = await polls.poll()
    assert fourth.changes is not None and fourth.changes.gone == ("ml/mn/mn-0",)
    assert {j.id for j in fourth.changes.put} == {"ml/mn"}  # its "Pod names" changed

    emulator.remove("pods", NS, "mn-1")
    emulator.remove("jobs", NS, "mn")
    await settle(emulator, backend)
    fifth = await polls.poll()
    assert fifth.changes is not None and sorted(fifth.changes.gone) == ["ml/mn", "ml/mn/mn-1"]
    assert fifth.changes.put == () and [j.id for j in fifth] == ["ml/solo"]


async def test_a_relist_after_410_says_nothing_and_a_plain_rewatch_keeps_the_changes(emulator, backend):
    emulator.add_node("gpu-a", 8)
    emulator.put("jobs", make_job("old", NS))
    emulator.put("pods", make_pod("old-1", NS, node="gpu-a", job="old"))
    polls = Polls(backend)
    await settle(emulator, backend)
    await polls.poll()
    await polls.poll()
    jobs, pods = backend._reflectors["jobs"], backend._reflectors["pods"]

    emulator.end_watches()  # as the server does at timeoutSeconds: re-watched from the last resourceVersion
    await async_wait_until(lambda: jobs.watches >= 2 and pods.watches >= 2, what="re-watched")
    emulator.set_pod_phase(NS, "old-1", "Failed")
    await settle(emulator, backend)
    rewatched = await polls.poll()
    assert (jobs.lists, pods.lists) == (1, 1)
    assert rewatched.changes is not None and [j.id for j in rewatched.changes.put] == ["ml/old"]

    async def silent():  # changes the open watches never deliver, then history compacted and the streams cut
        await emulator._aput("jobs", make_job("new", NS), notify=False)
        await emulator._aput("pods", make_pod("new-1", NS, node="gpu-a", job="new"), notify=False)
        emulator.compacted = emulator.rv + 1
        emulator.history.clear()
        for queue in list(emulator._watchers):
            queue.put_nowait(None)

    emulator._call(silent())
    await async_wait_until(lambda: jobs.lists == 2 and pods.lists == 2, what="re-listed after 410 Gone")
    await settle(emulator, backend)
    relisted = await polls.poll()
    assert relisted.changes is None and {j.id for j in relisted} == {"ml/old", "ml/new"}
    after = await polls.poll()  # and the answer after that says again
    assert after.changes is not None and after.changes.since == relisted.serial and after.changes.put == ()
    assert polls.told == 3  # all but the first and the re-listed


async def test_get_job_between_answers_keeps_the_chain(emulator, backend):
    emulator.put("jobs", make_job("a", NS))
    emulator.put("jobs", make_job("b", NS))
    polls = Polls(backend)
    await settle(emulator, backend)
    first = await polls.poll()
    assert by_id(first)["ml/a"].state is JobState.PENDING
    emulator.put("pods", make_pod("a-x", NS, node="gpu-a", job="a"))
    await async_wait_until(
        lambda: _state(backend, "ml/a", JobState.RUNNING), ignore=(KeyError,), what="the change seen through get_job"
    )
    second = await polls.poll()
    assert second.changes is not None and second.changes.since == first.serial
    assert [j.id for j in second.changes.put] == ["ml/a"]


async def _state(backend: KubernetesBackend, job_id: str, state: JobState) -> bool:
    return (await backend.get_job(job_id)).state is state


async def test_random_changes_applied_to_the_previous_answer_give_the_new_one(emulator, backend):
    """A seeded walk of creates, phase changes, new ranks, deletions and quiet polls, each poll checked
    by ``Polls`` (changes == the difference; the Queue's kept lists == lists made afresh)."""
    rng = random.Random(20261202)
    emulator.add_node("gpu-a", 8)
    polls = Polls(backend)
    jobs: dict[str, list[str]] = {}  # job -> its pods
    serial = 0

    def create() -> None:
        nonlocal serial
        serial += 1
        name = f"j{serial}"
        multi = rng.random() < 0.4
        emulator.put("jobs", make_job(name, NS, parallelism=2 if multi else 1, indexed=multi))
        jobs[name] = []
        for i in range(rng.choice((0, 1, 2)) if multi else rng.choice((0, 1))):
            add_pod(name, i if multi else None)

    def add_pod(name: str, index: int | None) -> None:
        pod = f"{name}-p{len(jobs[name])}"
        emulator.put("pods", make_pod(pod, NS, node="gpu-a", job=name, index=index, phase="Pending"))
        jobs[name].append(pod)

    for _ in range(4):
        create()
    for _ in range(30):
        for _ in range(rng.choice((0, 1, 1, 2, 3))):
            action = rng.choice(("create", "phase", "phase", "pod", "delete-pod", "delete-job", "job-status"))
            if action == "create" or not jobs:
                create()
                continue
            name = rng.choice(sorted(jobs))
            if action == "phase" and jobs[name]:
                emulator.set_pod_phase(NS, rng.choice(jobs[name]), rng.choice(("Running", "Succeeded", "Failed")))
            elif action == "pod":
                add_pod(name, len(jobs[name]))
            elif action == "delete-pod" and jobs[name]:
                emulator.remove("pods", NS, jobs[name].pop(rng.randrange(len(jobs[name]))))
            elif action == "delete-job":
                emulator.remove("jobs", NS, name)
                for pod in jobs.pop(name):
                    emulator.remove("pods", NS, pod)
            elif action == "job-status":
                emulator.patch("jobs", NS, name, {"status": {"active": rng.randrange(3)}})
        await settle(emulator, backend)
        await polls.poll()
    assert polls.told == 29  # every answer but the first said what changed


async def test_the_cache_journal_names_the_records_changed_until_it_keeps_too_many(emulator, backend, monkeypatch):
    from yanflow_tui.backends.kubernetes import cache

    emulator.put("pods", make_pod("p1", NS, job="a"))
    emulator.put("pods", make_pod("p2", NS, job="a"))
    await settle(emulator, backend)
    pods = backend._reflectors["pods"]
    version, lists, _, news, reshaped = pods.changes_since(pods.version)
    assert news == {} and lists == 1
    emulator.set_pod_phase(NS, "p1", "Failed")
    emulator.remove("pods", NS, "p2")
    emulator.put("pods", make_pod("p3", NS, job="a"))
    await settle(emulator, backend)
    _, _, records, news, now_reshaped = pods.changes_since(version)
    assert news is not None and news.keys() == {(NS, "p1"), (NS, "p2"), (NS, "p3")}
    assert news[(NS, "p2")] is None and news[(NS, "p1")].phase == "Failed" and news[(NS, "p3")] in records
    assert now_reshaped == reshaped + 2  # one gone, one new: the order may differ
    monkeypatch.setattr(cache, "JOURNAL_SLACK", 0)  # (it keeps no more keys than the cache holds)
    version = pods.version
    emulator.bulk("pods", [make_pod(f"q{i}", NS, job="a") for i in range(5)])
    await settle(emulator, backend)
    assert pods.changes_since(version)[3] is None and pods.changes_since(pods.version)[3] == {}
