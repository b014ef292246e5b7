"""``FinishedCodes``: the exit codes of the finished jobs squeue's text lists without one, asked once
and kept; each parse's Job gets one coded copy, the same object while the parse's Job is the same."""

from __future__ import annotations

from yanflow_tui.backends.slurm.finished import FinishedCodes
from yanflow_tui.model import Job, JobState


def job(job_id: str, state: JobState, parent: str = "") -> Job:
    return Job(job_id, "c", "n", "u", state, parent=parent)


def test_asks_only_for_finished_jobs_without_a_code_and_not_for_an_arrays_own_row():
    codes = FinishedCodes()
    jobs = [
        job("1", JobState.RUNNING),
        job("2", JobState.FAILED),
        job("3", JobState.COMPLETED),
        job("7", JobState.FAILED),
        job("7_0", JobState.FAILED, parent="7"),
    ]
    assert codes.missing(jobs) == ["2", "3", "7_0"]
    codes.learn({"2": (3, 0), "3": (0, 0), "1": (0, 0)}, ["2", "3"])  # only what was asked, finished
    assert codes.missing(jobs) == ["7_0"]


def test_the_coded_copy_is_kept_while_the_parses_job_is_the_same():
    codes = FinishedCodes()
    failed = job("2", JobState.FAILED)
    codes.learn({"2": (0, 9)}, ["2"])
    first, new = codes.apply([failed])
    assert (first[0].exit_code, first[0].signal) == (0, 9) and new == first
    again, new = codes.apply([failed])
    assert again[0] is first[0] and new == []  # nothing changed: no new Job
    assert codes.coded(failed) is first[0]
    rebuilt = job("2", JobState.FAILED)  # the parse made a new Job (its line changed)
    third, new = codes.apply([rebuilt])
    assert third[0] is not first[0] and new == third and third[0].signal == 9
    codes.apply([])  # no longer listed: forgotten
    assert codes.missing([rebuilt]) == ["2"]
