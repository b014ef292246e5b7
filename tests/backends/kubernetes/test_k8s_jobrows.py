"""``jobrows.JobRows`` over random histories of the job and pod caches (records put, replaced by equal
or different ones, deleted, the caches listed afresh), with stand-in caches: every answer's rows equal
``build_jobs`` over the records; an answer says nothing when it is the first or follows a re-list,
and otherwise its changes, applied to the answer they name, give it (the rows not put being the very
same objects), whatever ``rows`` reads (``get_job``) happened in between."""

from __future__ import annotations

from dataclasses import replace

from fakes.k8s_api import make_job, make_pod
from hypothesis import example, given, settings
from hypothesis import strategies as st

from yanflow_tui.backends.kubernetes import views
from yanflow_tui.backends.kubernetes.extract import job_info, pod_info
from yanflow_tui.backends.kubernetes.jobrows import JobRows
from yanflow_tui.backends.kubernetes.views import build_jobs
from yanflow_tui.model import Job, JobList

JOB = job_info(make_job("base", "ml", parallelism=2, indexed=True))
POD = pod_info(make_pod("base", "ml", node="n1", job="base", index=0, phase="Pending"))
PHASES = ("Pending", "Running", "Succeeded", "Failed")


class Cache:
    """Stands for a ``Reflector``: its records, ``version`` and ``lists``, and the journal of the keys put
    or deleted since (``changes_since``), which a list or ``forget`` (more changes than it keeps) start afresh."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], object] = {}
        self.version = 0
        self.lists = 1
        self.journal: list[tuple[int, tuple[str, str]]] = []
        self.journal_from = 0
        self.reshaped = 0

    def snapshot(self) -> tuple[int, int, list]:
        return self.version, self.lists, list(self.items.values())

    def changes_since(self, version: int) -> tuple[int, int, list, dict | None, int]:
        if not self.journal_from <= version <= self.version:
            return (*self.snapshot(), None, self.reshaped)
        changed = {key: self.items.get(key) for v, key in self.journal if v > version}
        return (*self.snapshot(), changed, self.reshaped)

    def put(self, record) -> None:
        key = (record.namespace, record.name)
        self.reshaped += key not in self.items
        self.items[key] = record
        self.version += 1
        self.journal.append((self.version, key))

    def remove(self, key: tuple[str, str]) -> None:
        if self.items.pop(key, None) is not None:
            self.version += 1
            self.reshaped += 1
            self.journal.append((self.version, key))

    def relist(self) -> None:
        self.items = {key: replace(record) for key, record in self.items.items()}  # new objects, same content
        self.version += 1
        self.lists += 1
        self.reshaped += 1
        self.forget()

    def forget(self) -> None:
        self.journal, self.journal_from = [], self.version


def job(j: int, variant: int):
    multi = j % 2 == 0
    return replace(JOB, name=f"j{j}", uid=f"u{j}", indexed=multi, parallelism=2 if multi else 1, active=variant)


def pod(j: int, k: int, phase: str):
    return replace(POD, name=f"j{j}-p{k}", job=f"j{j}", index=k, phase=phase, node=f"n{k}")


STEP = st.one_of(
    st.tuples(st.just("job"), st.integers(0, 3), st.integers(0, 1)),
    st.tuples(st.just("pod"), st.integers(0, 3), st.integers(0, 1), st.sampled_from(PHASES)),
    st.tuples(st.just("rmjob"), st.integers(0, 3)),
    st.tuples(st.just("rmpod"), st.integers(0, 3), st.integers(0, 1)),
    st.tuples(st.just("relist")),
    st.tuples(st.just("forget"), st.booleans()),
    st.tuples(st.just("rows")),
    st.tuples(st.just("rows")),
    st.tuples(st.just("answer")),
    st.tuples(st.just("answer")),
)


@settings(max_examples=500, deadline=None)
@given(st.lists(STEP, max_size=40))
@example([("answer",), ("job", 1, 0), ("rows",), ("rmjob", 1)])  # came and went between two answers
@example([("job", 1, 0), ("answer",), ("rmjob", 1), ("rows",), ("job", 1, 0)])  # went and came back
@example([("job", 0, 0), ("pod", 0, 0, "Running"), ("answer",), ("relist",), ("answer",)])
@example([("job", 0, 0), ("pod", 0, 0, "Running"), ("answer",), ("rmpod", 0, 0)])  # a rank gone
@example([("job", 0, 0), ("job", 1, 0), ("rows",), ("rmjob", 0), ("job", 0, 1), ("rows",)])  # re-made: last now
def test_changes_applied_to_the_previous_answer_always_give_the_new_one(steps):
    jobs, pods = Cache(), Cache()
    memo = JobRows("c")
    before: JobList | None = None
    listed = jobs.lists + pods.lists
    for step in [*steps, ("answer",)]:
        match step:
            case ("job", j, variant):
                jobs.put(job(j, variant))
            case ("pod", j, k, phase):
                pods.put(pod(j, k, phase))
            case ("rmjob", j):
                jobs.remove(("ml", f"j{j}"))
            case ("rmpod", j, k):
                pods.remove(("ml", f"j{j}-p{k}"))
            case ("relist",):
                (jobs if len(steps) % 2 else pods).relist()
            case ("forget", which):
                (jobs if which else pods).forget()
            case ("rows",):
                assert memo.rows(jobs, pods) == build_jobs("c", jobs.snapshot()[2], pods.snapshot()[2])
            case ("answer",):
                answer = memo.answer(jobs, pods)
                assert list(answer) == build_jobs("c", jobs.snapshot()[2], pods.snapshot()[2])
                relisted = jobs.lists + pods.lists != listed
                listed = jobs.lists + pods.lists
                if before is None or relisted:
                    assert answer.changes is None
                else:
                    assert answer.changes is not None and answer.changes.since == before.serial
                    check(before, answer, answer.changes.put, answer.changes.gone)
                before = answer


def check(before: list[Job], now: list[Job], put: tuple[Job, ...], gone: tuple[str, ...]) -> None:
    assert set(gone) == {j.id for j in before} - {j.id for j in now} and len(set(gone)) == len(gone)
    was = set(map(id, before))
    assert sorted(map(id, put)) == sorted(id(j) for j in now if id(j) not in was)
    patched = {j.id: j for j in before}
    for job_id in gone:
        del patched[job_id]
    patched.update((j.id, j) for j in put)
    fresh = {j.id: j for j in now}
    assert patched.keys() == fresh.keys() and all(patched[k] is fresh[k] for k in fresh)


def test_an_unchanged_job_keeps_its_row_objects_and_an_equal_rebuild_puts_nothing():
    jobs, pods = Cache(), Cache()
    for j in range(3):
        jobs.put(job(j, 0))
        pods.put(pod(j, 0, "Running"))
    memo = JobRows("c")
    first = memo.answer(jobs, pods)
    pods.put(pod(1, 0, "Running"))  # a new record (a new resourceVersion) that reads the same
    second = memo.answer(jobs, pods)
    assert second.changes is not None and (second.changes.put, second.changes.gone) == ((), ())
    assert all(a is b for a, b in zip(second, first, strict=True))
    pods.put(pod(1, 0, "Failed"))
    third = memo.answer(jobs, pods)
    assert third.changes is not None and [j.id for j in third.changes.put] == ["ml/j1"]
    assert [a is b for a, b in zip(third, first, strict=True)] == [
        True,
        True,
        False,
        True,
        True,
    ]  # j0, its rank, j1, j2, its rank


def test_a_name_with_a_slash_could_give_an_id_twice_so_the_answers_say_nothing_while_it_is_there():
    jobs, pods = Cache(), Cache()
    jobs.put(job(1, 0))
    memo = JobRows("c")
    memo.answer(jobs, pods)
    jobs.put(replace(JOB, name="x/y", indexed=False))  # never from a real API server: names are DNS labels
    assert memo.answer(jobs, pods).changes is None
    assert memo.answer(jobs, pods).changes is None
    jobs.remove(("ml", "x/y"))
    assert memo.answer(jobs, pods).changes is None  # (it was there since the previous answer)
    assert memo.answer(jobs, pods).changes is not None


def test_after_a_pod_event_only_its_job_is_looked_at_and_after_a_lost_journal_every_job(monkeypatch):
    from yanflow_tui.backends.kubernetes import jobrows

    grouped = []
    monkeypatch.setattr(jobrows, "pods_by_job", lambda pods: grouped.append(1) or views.pods_by_job(pods))
    jobs, pods = Cache(), Cache()
    for j in range(4):
        jobs.put(job(j, 0))
        pods.put(pod(j, 0, "Running"))
    memo = JobRows("c")
    first = memo.answer(jobs, pods)
    assert len(grouped) == 1  # (the first time, every Job)
    pods.put(pod(2, 0, "Failed"))
    jobs.put(job(3, 1))
    second = memo.answer(jobs, pods)
    assert len(grouped) == 1 and memo.rebuilt == len(first) + 1 + 2  # j2's rank (j2 is multi-node: 2 rows), j3
    assert second.changes is not None and {j.id for j in second.changes.put} == {"ml/j2", "ml/j2/j2-p0", "ml/j3"}
    pods.put(pod(2, 0, "Running"))
    pods.forget()  # more changes than the journal keeps
    third = memo.answer(jobs, pods)
    assert len(grouped) == 2 and third.changes is not None
    assert {j.id for j in third.changes.put} == {"ml/j2", "ml/j2/j2-p0"} and third.changes.gone == ()
