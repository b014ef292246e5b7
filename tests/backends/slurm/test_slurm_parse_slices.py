"""The squeue text parsed a slice at a time on the event loop (``backend.in_slices`` over
``parse.squeue_steps``): other coroutines (a key, a paint) run while a 100,000-line queue is parsed; a
poll cancelled mid-parse leaves the parser's cache fit for the next (right Jobs, changes exact or
None); ``get_job`` and a second ``list_jobs`` during a parse wait their turn and corrupt nothing. Over
a served transport (the backend's real argv and parse, no cluster)."""

from __future__ import annotations

import asyncio
import gc

import pytest
from servedslurm import Served
from slurmreference import ReferenceCaches, parse_squeue_text

from yanflow_tui.backends.slurm import backend as slurm_module
from yanflow_tui.backends.slurm import parse
from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.config import ClusterConfig
from yanflow_tui.model import Job, JobList

STATES = ("RUNNING", "PENDING", "COMPLETED", "FAILED", "COMPLETING")


def line(i: int, version: int) -> str:
    """Job ``i`` of a queue in the backend's ``-o`` format, as of poll ``version``: every 20th job moves
    on a state each poll; the first 20 of each 500 are the running tasks of an array, a pending rest
    line after them."""
    state = STATES[(i + (version if i % 20 == 0 else 0)) % len(STATES)]
    job_id = array_id = str(100_000 + i)
    task, display = "N/A", job_id
    if i % 500 <= 20:  # an array: 20 running tasks, then its pending remainder
        array_id = str(100_000 + i - i % 500)
        task = str(i % 500) if i % 500 < 20 else f"{20 + version}-99%4"  # (its rest: made anew each poll)
        state = "RUNNING" if i % 500 < 20 else "PENDING"
        display = f"{array_id}_{task}" if i % 500 < 20 else f"{array_id}_[{task}]"
    running = state != "PENDING"
    cols = {
        "job_id": job_id,
        "array_job_id": array_id,
        "array_task": task,
        "state": state,
        "reason": "None" if running else "Priority",
        "user": f"user{i % 37}",
        "node_count": "2" if running else "1",
        "nodes": f"gpu[{i % 900 + 1:04d}-{i % 900 + 2:04d}]" if running else "",
        "tres_per_node": "gres:gpu:a100:2" if i % 3 else "N/A",
        "submit": str(1_795_995_071 + i),
        "start": str(1_795_996_000 + i) if running else "N/A",
        "end": str(1_795_999_000 + i) if state in ("COMPLETED", "FAILED") else "NONE",
        "partition": ("gpu", "cpu", "debug")[i % 3],
        "account": "ml",
        "qos": "normal",
        "time_limit": "1:00:00",
        "cpus": str(8 * (i % 4 + 1)),
        "display_id": display,
        "name": f"train {i % 1000} | $(x) 名前" if i % 7 else "",
    }
    return parse.SEP.join(cols[name] for name, _ in parse.SQUEUE_FIELDS)


def queue(count: int, version: int = 0) -> bytes:
    """Poll ``version`` of a ``count``-job queue: 50 jobs gone from the front and 50 new at the end each
    poll, every 20th job another state."""
    first = 50 * version
    return "".join(line(i, version) + "\n" for i in range(first, first + count)).encode()


def reference(text: bytes, cluster: str) -> list[Job]:
    """The Jobs of ``text`` by the plain path (RawJobs, then Jobs)."""
    caches = ReferenceCaches()
    return parse.build_jobs(parse_squeue_text(text.decode(), caches), cluster, caches)


class Answers(SlurmBackend):
    """The backend, every answer of ``list_jobs`` kept by its serial (``get_job``'s too)."""

    def __init__(self, name: str, transport: Served):
        super().__init__(ClusterConfig(name, "slurm"), transport)
        self.answers: dict[int, list[Job]] = {}

    async def list_jobs(self) -> JobList:
        answer = await super().list_jobs()
        self.answers[answer.serial] = list(answer)
        return answer


def check(backend: Answers, answer: JobList, text: bytes) -> bool:
    """``answer`` holds the Jobs of ``text``; what it says changed (if anything) is exactly what it
    differs by from the answer it names. True when it said what changed."""
    assert list(answer) == reference(text, backend.name)
    changes = answer.changes
    if changes is None:
        return False
    before = backend.answers[changes.since]
    was = set(map(id, before))
    assert sorted(map(id, changes.put)) == sorted(id(j) for j in answer if id(j) not in was)
    assert set(changes.gone) == {j.id for j in before} - {j.id for j in answer}
    assert len(set(changes.gone)) == len(changes.gone)
    return True


@pytest.fixture
def fine_slices(monkeypatch):
    """A turn of the event loop after every step of a parse (a stretch of lines, an array, 100 lines of
    what changed), and no pause beyond one turn: a parse of a few thousand lines spans many turns."""
    monkeypatch.setattr(slurm_module, "SLICE", 0.0)
    monkeypatch.setattr(slurm_module, "PAUSE", 0.0)
    monkeypatch.setattr(parse, "_DELTA_STEP", 100)


async def test_the_event_loop_keeps_running_while_a_100k_line_queue_is_parsed():
    ticks = [0]

    async def ticker() -> None:  # a timer's coroutine (a paint, a key's handling) wanting a turn each ms
        while True:
            ticks[0] += 1
            await asyncio.sleep(0.001)

    text = queue(100_000)
    transport = Served([text], ticks)
    backend = Answers("slices-big", transport)
    ticking = asyncio.create_task(ticker())
    try:
        answer = await backend.list_jobs()  # (the served transport never waits: only the parse yields)
        during = ticks[0] - transport.served_at[0]
    finally:
        ticking.cancel()
    assert during >= 5, f"the ticker ran {during} times during the parse of 100,000 lines"
    assert list(answer) == reference(text, backend.name) and gc.isenabled()


@pytest.mark.parametrize("turns", [1, 20, 60, 100])
async def test_a_poll_cancelled_mid_parse_leaves_the_next_polls_right(fine_slices, turns):
    texts = [queue(20_000, version) for version in range(5)]
    transport = Served(texts)
    backend = Answers(f"slices-cancel-{turns}", transport)
    first = await backend.list_jobs()
    check(backend, first, texts[0])
    assert check(backend, await backend.list_jobs(), texts[1])  # an answer that says what changed
    transport.squeued.clear()
    polling = asyncio.create_task(backend.list_jobs())
    await transport.squeued.wait()  # texts[2] served: its parse starts
    for _ in range(turns):  # (a step of the parse a turn: 45 stretches of lines, 40 arrays, 30 of changes)
        await asyncio.sleep(0)
    assert not polling.done(), "the parse ended without giving the event loop a turn"
    polling.cancel()
    with pytest.raises(asyncio.CancelledError):
        await polling
    assert gc.isenabled()
    check(backend, await backend.list_jobs(), texts[3])  # right Jobs; changes None, or exact
    assert check(backend, await backend.list_jobs(), texts[4])  # and then, changes again
    assert transport.served == texts


async def test_get_job_and_a_second_list_jobs_during_a_parse_wait_their_turn(fine_slices):
    texts = [queue(20_000, version) for version in range(7)]
    transport = Served(texts)
    backend = Answers("slices-interleaved", transport)
    check(backend, await backend.list_jobs(), texts[0])
    transport.squeued.clear()
    polling = asyncio.create_task(backend.list_jobs())
    await transport.squeued.wait()  # texts[1] served: its parse starts
    assert not polling.done(), "the parse ended without giving the event loop a turn"
    wanted = reference(texts[2], backend.name)[-1]  # a job only the next text has
    assert wanted.id not in {j.id for j in reference(texts[1], backend.name)}
    assert await backend.get_job(wanted.id) == wanted  # its own query, after the parse in flight
    check(backend, await polling, texts[1])
    # two polls at once: one query and parse after the other, each answer right
    both = await asyncio.gather(backend.list_jobs(), backend.list_jobs())
    for answer, text in zip(both, texts[3:5], strict=True):
        check(backend, answer, text)
    check(backend, await backend.list_jobs(), texts[5])  # changes None, or exact
    assert check(backend, await backend.list_jobs(), texts[6])  # and then, changes again
    assert transport.served == texts and gc.isenabled()
