"""What the Slurm backend says changed between two answers (``JobList.changes``, from the parse of the
squeue text), over real polls of the REAL loopback cluster (``scripts/slurm-cluster up``; these tests
fail, not skip, without it): each change set is exactly the difference from the answer it names, and
the Queue's lists kept from those changes equal the lists worked out afresh from the same jobs."""

from __future__ import annotations

import time
from dataclasses import replace

import changeshelpers
import pytest
from slurmhelpers import CONF, local_cluster, slurm
from waiting import async_wait_until

from yanflow_tui.backends.slurm import parse
from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.backends.slurm.transport import Result
from yanflow_tui.errors import BackendError
from yanflow_tui.model import Job, JobState

Polls = changeshelpers.Polls


def sbatch(*args: str) -> str:
    return slurm("sbatch", "--parsable", "-p", "cpu", "-o", "/dev/null", *args).strip().split(";")[0]


@pytest.fixture
async def backend(slurm_dir, monkeypatch, slurm_jobs):
    """The local cluster, its squeue text kept to the lines of the jobs this test submitted: the cluster is
    shared, and a job of another test named with a newline would send the backend to JSON for a while."""
    monkeypatch.setenv("SLURM_CONF", str(CONF))
    b = SlurmBackend(local_cluster(nodes_refresh_seconds=1))
    run = b.transport.run

    async def ours(argv, *args, **kwargs):
        result = await run(argv, *args, **kwargs)
        if argv[0] != "squeue" or "-o" not in argv:
            return result
        lines = [line for line in result.data.split(b"\n") if set(line.split(parse.SEP.encode())[:2]) & mine()]
        return Result(result.argv, result.returncode, b"".join(line + b"\n" for line in lines), result.stderr)

    def mine() -> set[bytes]:
        return {job_id.encode() for job_id in slurm_jobs.ids}

    b.transport.run = ours  # type: ignore[method-assign]
    yield b
    await b.close()


async def test_changes_over_real_polls_are_exact_and_keep_the_queue_equal_to_one_made_afresh(backend, slurm_jobs):
    polls = Polls(backend)
    first = await polls.poll()
    assert first.changes is None  # the first answer: nothing to say
    assert (await polls.poll()).changes is not None  # the same queue again: an answer that says so
    held = [slurm_jobs.add(sbatch("--hold", "-J", f"yf-changes-{i}", "--wrap", "sleep 60")) for i in range(3)]
    array = slurm_jobs.add(sbatch("--array=0-5%2", "-J", "yf-changes-array", "--wrap", "sleep 2"))
    answer = await polls.poll()
    assert answer.changes is not None and {*held, array} <= {j.id for j in answer.changes.put}
    slurm("scontrol", "release", held[0])
    slurm("scontrol", "update", f"JobId={held[1]}", "Name=yf-changes-renamed")
    slurm("scancel", held[2])

    async def array_moved_on() -> bool:  # tasks start and end: the array's lines regroup, poll after poll
        answer = await polls.poll()
        return not any(j.parent == array and j.state.value in ("pending", "running") for j in answer)

    await async_wait_until(array_moved_on, timeout=60)
    backend.all_users = False  # "mine": squeue -u, another text
    await polls.poll()
    backend.all_users = True
    backend.widen_history()  # the history asked again, wider
    await polls.poll()
    # finished jobs of the history (set here: this cluster may keep none): listed unless in the queue
    finished = [Job(f"{held[2]}9{i}", backend.name, "old", "u", JobState.COMPLETED) for i in range(3)]
    live = Job(held[0], backend.name, "requeued", "u", JobState.FAILED)  # in the queue too: not listed
    for history in ([*finished, live], finished[1:], [replace(finished[1], reason="x"), finished[0]], []):
        backend._history = history
        backend._history_at = time.monotonic() + 3600  # (not asked again meanwhile)
        answer = await polls.poll()
        assert answer.changes is not None
        assert {j.id for j in history} - {live.id} <= {j.id for j in answer} and answer.count(live) == 0
    assert polls.told >= 9


async def test_after_a_failed_poll_an_answer_says_nothing_or_what_changed_since_the_last_answer(backend, slurm_jobs):
    polls = Polls(backend)
    await polls.poll()
    await polls.poll()
    slurm_jobs.add(sbatch("--hold", "-J", "yf-changes-fail", "--wrap", "sleep 60"))
    run, history = backend.transport.run, backend._refresh_history

    async def failing(argv, *args, **kwargs):
        if argv[0] == "squeue":
            raise BackendError("squeue failed")
        return await run(argv, *args, **kwargs)

    async def history_failing() -> None:
        raise BackendError("sacct failed")

    backend.transport.run = failing  # type: ignore[method-assign]
    with pytest.raises(BackendError):  # before the parse: the next answer follows the last one
        await backend.list_jobs()
    backend.transport.run = run  # type: ignore[method-assign]
    assert (await polls.poll()).changes is not None
    backend._refresh_history = history_failing  # type: ignore[method-assign]
    with pytest.raises(BackendError):  # after the parse, which was never answered
        await backend.list_jobs()
    backend._refresh_history = history  # type: ignore[method-assign]
    assert (await polls.poll()).changes is None
    assert (await polls.poll()).changes is not None
