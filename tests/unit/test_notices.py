"""A word when a job ends (``notices``): which transitions are announced, once each, for my jobs only,
read through a backend's changes where it gives them; the ``notify:`` config; the escape sequences
(``termseq``); what the detail's ``y`` offers (``copyables``); and ``watch``'s exit status."""

from __future__ import annotations

import base64
import time
from dataclasses import replace

import pytest

from yanflow_tui.cli.watch import exit_status
from yanflow_tui.config import parse_config
from yanflow_tui.copyables import copyables, found_in
from yanflow_tui.errors import SpecError
from yanflow_tui.hub import ClusterSnapshot, Health
from yanflow_tui.model import Job, JobChanges, JobState
from yanflow_tui.notices import EndWatch, NoticeSettings, ended_text
from yanflow_tui.termseq import copy_sequence, desktop_notice, tmux_wrap

R, P, C, F, X = JobState.RUNNING, JobState.PENDING, JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED


def job(job_id: str, state: JobState, user: str = "alice", **extra) -> Job:
    return Job(job_id, "hpc", f"job-{job_id}", user, state, **extra)


def snap(*jobs: Job, serial: int = 0, changes: JobChanges | None = None, cached: bool = False) -> ClusterSnapshot:
    return ClusterSnapshot(
        "hpc", "slurm", False, Health.OK, updated=time.time(), jobs=jobs, jobs_serial=serial,
        job_changes=changes, cached=cached,
    )  # fmt: skip


def ids(jobs: list[Job]) -> list[str]:
    return [j.id for j in jobs]


def test_a_job_seen_running_or_pending_is_announced_once_when_it_ends():
    watch = EndWatch(NoticeSettings())
    assert watch.update(snap(job("1", R), job("2", P), job("3", C)), "alice") == []  # 3: never seen live
    ended = watch.update(snap(job("1", F, exit_code=3), job("2", X), job("3", C)), "alice")
    assert ids(ended) == ["1", "2"]
    assert watch.update(snap(job("1", F, exit_code=3), job("2", X), job("3", C)), "alice") == []  # once


def test_only_my_jobs_and_every_job_when_the_user_is_unknown():
    watch = EndWatch(NoticeSettings())
    watch.update(snap(job("1", R), job("2", R, user="bob")), "alice")
    assert ids(watch.update(snap(job("1", C), job("2", C, user="bob")), "alice")) == ["1"]
    anyone = EndWatch(NoticeSettings())
    anyone.update(snap(job("1", R), job("2", R, user="bob")), "")
    assert ids(anyone.update(snap(job("1", C), job("2", C, user="bob")), "")) == ["1", "2"]


def test_states_clusters_and_off():
    failed_only = EndWatch(NoticeSettings(states=frozenset({F})))
    failed_only.update(snap(job("1", R), job("2", R)), "")
    assert ids(failed_only.update(snap(job("1", C), job("2", F)), "")) == ["2"]
    elsewhere = EndWatch(NoticeSettings(clusters=("other",)))
    elsewhere.update(snap(job("1", R)), "")
    assert elsewhere.update(snap(job("1", F)), "") == []
    off = EndWatch(NoticeSettings(on=False))
    off.update(snap(job("1", R)), "")
    assert off.update(snap(job("1", F)), "") == []


def test_the_last_runs_cache_is_not_seeing_a_job_run():
    watch = EndWatch(NoticeSettings())
    watch.update(snap(job("1", R), cached=True), "")
    assert watch.update(snap(job("1", F)), "") == []


def test_a_job_gone_from_the_list_is_forgotten():
    watch = EndWatch(NoticeSettings())
    watch.update(snap(job("1", R)), "")
    watch.update(snap(), "")
    assert watch.update(snap(job("1", F)), "") == []


def test_the_backends_changes_are_read_alone():
    """With ``job_changes`` since the snapshot read before, only the jobs put are looked at."""
    watch = EndWatch(NoticeSettings())
    watch.update(snap(job("1", R), job("2", R), serial=10), "")
    # job 2's row in ``jobs`` says failed, but the changes say only job 1 changed: only 1 is read
    changes = JobChanges(since=10, put=(job("1", C),))
    assert ids(watch.update(snap(job("1", C), job("2", F), serial=11, changes=changes), "")) == ["1"]
    gone = JobChanges(since=11, gone=("2",))
    watch.update(snap(job("1", C), serial=12, changes=gone), "")
    assert watch.update(snap(job("1", C), job("2", F), serial=13), "") == []  # 2 was forgotten
    # changes relative to another answer than the last read: everything is compared
    watch.update(snap(job("3", R), serial=14), "")
    stale = JobChanges(since=99, put=())
    assert ids(watch.update(snap(job("3", F), serial=15, changes=stale), "")) == ["3"]


def test_ended_text():
    assert ended_text(job("7", F, exit_code=3)) == "job 7 (job-7) on hpc: failed, exit code 3"
    assert ended_text(replace(job("7", X), name="")) == "job 7 on hpc: cancelled"


def test_notify_config(tmp_path):
    clusters = "clusters:\n  - name: hpc\n    kind: local\n"
    assert parse_config(clusters, "c.yaml").notify == NoticeSettings()
    assert parse_config("notify: false\n" + clusters, "c.yaml").notify.on is False
    text = "notify:\n  states: [failed]\n  clusters: [hpc]\n  bell: false\n" + clusters
    settings = parse_config(text, "c.yaml").notify
    assert settings == NoticeSettings(True, frozenset({F}), ("hpc",), bell=False, desktop=True)
    with pytest.raises(SpecError, match=r"c.yaml:2: notify.states\[0\]: not an end state: 'running'"):
        parse_config("notify:\n  states: [running]\n" + clusters, "c.yaml")
    with pytest.raises(SpecError, match=r"c.yaml:2: notify.clusters\[0\]: no cluster named 'gpu' \(configured: hpc\)"):
        parse_config("notify:\n  clusters: [gpu]\n" + clusters, "c.yaml")
    with pytest.raises(SpecError, match="c.yaml:2: notify.sound: unknown key"):
        parse_config("notify:\n  sound: true\n" + clusters, "c.yaml")


def test_desktop_notice_sequences():
    seq = desktop_notice("YanFlow", "job 1 on hpc: failed; \x1b]52;c;evil\x07 done")
    assert seq == (
        "\x1b]9;YanFlow: job 1 on hpc: failed; ]52;c;evil done\x07"
        "\x1b]777;notify;YanFlow;job 1 on hpc: failed, ]52,c,evil done\x07"
    )
    wrapped = desktop_notice("YanFlow", "x", tmux=True)
    assert wrapped == "\x1bPtmux;\x1b\x1b]9;YanFlow: x\x07\x1b\\\x1bPtmux;\x1b\x1b]777;notify;YanFlow;x\x07\x1b\\"


def test_copy_sequence():
    assert copy_sequence("123") == "\x1b]52;c;" + base64.b64encode(b"123").decode() + "\x07"
    assert copy_sequence("123", tmux=True) == copy_sequence("123") + tmux_wrap(copy_sequence("123"))
    big = copy_sequence("é" * 50_000)  # cut on a character boundary
    assert base64.b64decode(big[len("\x1b]52;c;") : -1]).decode("utf-8") == "é" * (74_994 // 2)


def test_copyables_finds_paths_and_urls():
    assert found_in("see /scratch/a/b.log, and http://127.0.0.1:6006/x. gpu/8 ~/runs/x 1/4 10.0.0.1:80") == [
        "http://127.0.0.1:6006/x",
        "/scratch/a/b.log",
        "~/runs/x",
    ]
    j = job(
        "42", R, details=(("StdOut", "/home/a/slurm-42.out"), ("Partition", "gpu"), ("StdErr", "/home/a/slurm-42.out"))
    )
    assert copyables(j, [("TensorBoard", "http://127.0.0.1:6006/")]) == [
        ("job id", "42"),
        ("StdOut", "/home/a/slurm-42.out"),
        ("TensorBoard", "http://127.0.0.1:6006/"),
    ]


@pytest.mark.parametrize(
    ("state", "code", "status"),
    [
        (C, 0, 0),
        (C, None, 0),
        (F, 3, 3),
        (F, None, 1),
        (F, 0, 1),
        (X, None, 143),
        (X, 0, 143),
        (X, -9, 137),
        (F, 300, 255),
    ],
)
def test_watch_exit_status(state, code, status):
    assert exit_status(job("1", state, exit_code=code)) == status
