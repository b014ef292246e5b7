"""The pure parts of ``jobs``/``nodes``/``submit``'s new options: ``--state`` names, ``--since``,
the sort and columns, and the sbatch-style overrides checked by the spec checker."""

from __future__ import annotations

import argparse
from datetime import datetime, timedelta, timezone

import pytest

from yanflow_tui.cli import overrides, selection, tables
from yanflow_tui.cli.context import UsageError
from yanflow_tui.errors import SpecError
from yanflow_tui.model import Job, JobState
from yanflow_tui.spec import parse_spec

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=timezone.utc)


def job(job_id: str, state: JobState, raw: str = "", **kw) -> Job:
    return Job(job_id, "c", f"n{job_id}", "alice", state, raw_state=raw, **kw)


def test_state_names_ours_squeues_and_codes():
    timeout = job("1", JobState.FAILED, "TIMEOUT")
    failed = job("2", JobState.FAILED, "FAILED")
    running = job("3", JobState.RUNNING, "RUNNING")
    test = selection.state_test("TO")
    assert test is not None and [test(j) for j in (timeout, failed, running)] == [True, False, False]
    test = selection.state_test("failed")  # ours: every failure
    assert test is not None and [test(j) for j in (timeout, failed, running)] == [True, True, False]
    test = selection.state_test("R,timeout")
    assert test is not None and [test(j) for j in (timeout, failed, running)] == [True, False, True]
    assert selection.state_test("all") is None and selection.state_test(None) is None
    with pytest.raises(UsageError, match="unknown state 'sideways'"):
        selection.state_test("sideways")


def test_since_a_duration_or_a_date():
    assert selection.since_time("2h", NOW) == NOW - timedelta(hours=2)
    assert selection.since_time("1w", NOW) == NOW - timedelta(days=7)
    assert selection.since_time("2026-12-01T08:00+00:00") == datetime(2026, 12, 1, 8, tzinfo=timezone.utc)
    assert selection.since_time("2026-12-01").tzinfo is not None  # local time, made aware
    with pytest.raises(UsageError):
        selection.since_time("yesterdayish")


def test_sort_numeric_ids_descending_and_by_several_columns():
    jobs = [
        job("10", JobState.RUNNING, gpus=1),
        job("9", JobState.PENDING, gpus=4),
        job("100_2", JobState.RUNNING, gpus=1),
    ]
    ids = [j.id for j in tables.sorted_rows(jobs, "id", tables.JOB_COLUMNS)]
    assert ids == ["9", "10", "100_2"]
    ids = [j.id for j in tables.sorted_rows(jobs, "-gpus,id", tables.JOB_COLUMNS)]
    assert ids == ["9", "10", "100_2"]
    with pytest.raises(UsageError, match="unknown column 'colour'"):
        tables.sorted_rows(jobs, "colour", tables.JOB_COLUMNS)


def test_exit_column_shows_code_and_signal():
    header, rows = tables.table_rows(
        [job("1", JobState.FAILED, exit_code=0, signal=9), job("2", JobState.RUNNING)],
        ["id", "exit"],
        tables.JOB_COLUMNS,
    )
    assert header == ("ID", "EXIT") and rows == [("1", "0:9"), ("2", "-")]


def args(**given) -> argparse.Namespace:
    return argparse.Namespace(**{name: given.get(name) for name in overrides.OVERRIDES})


SPEC = "name: x\nkind: multi-node\ncommand: python train.py\nresources: {nodes: 1, gpus: 1}\n"


def test_overrides_mean_what_sbatchs_mean():
    spec = overrides.apply_overrides(parse_spec(SPEC), args(nodes=2, gpus=8, time="1-00:00", partition="big"))
    assert (spec.resources.nodes, spec.resources.gpus) == (2, 4)  # --gpus: in all, 4 a node
    assert spec.section("slurm") == {"time": "1-00:00", "partition": "big"}
    unchanged = parse_spec(SPEC)
    assert overrides.apply_overrides(unchanged, args()) is unchanged


def test_overrides_are_checked_like_the_form():
    with pytest.raises(SpecError, match="a single job runs on exactly 1 node"):
        overrides.apply_overrides(parse_spec("name: x\ncommand: 'true'\n"), args(nodes=2))
    with pytest.raises(UsageError, match="spread evenly"):
        overrides.apply_overrides(parse_spec(SPEC), args(nodes=2, gpus=3))
    with pytest.raises(UsageError, match="--time"):
        overrides.apply_overrides(parse_spec(SPEC), args(time="soon"))
