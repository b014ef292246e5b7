"""The first failure across ranks (``yanflow_tui.firstfailure``) over crafted per-rank logs."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from yanflow_tui import firstfailure as ff
from yanflow_tui.firstfailure import RankEvidence

T0 = datetime(2026, 12, 6, 12, 0, 0, tzinfo=timezone.utc)


def healthy_rank(rank: int, minute: int = 10) -> RankEvidence:
    """A rank that hung in an all-reduce and timed out (glog line, then torch's traceback)."""
    lines = (
        f"2026-12-06 12:00:01 rank {rank}: step 1",
        f"[rank{rank}]:[E1206 12:{minute:02d}:03.123456 811 ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600003 ms",
        f"[rank{rank}]: Traceback (most recent call last):",
        f'[rank{rank}]:   File "train.py", line 40, in <module>',
        f"[rank{rank}]: torch.distributed.DistBackendError: [Rank {rank}] NCCL watchdog thread terminated",
    )
    return RankEvidence(str(rank), f"g{rank // 8 + 1}", f"rank {rank}", lines, exit_code=1)


def cause_rank(rank: int) -> RankEvidence:
    lines = (
        "2026-12-06 12:00:01 step 1",
        "2026-12-06 12:00:05 loading shard 7",
        "Traceback (most recent call last):",
        '  File "train.py", line 31, in <module>',
        "    batch = next(loader)",
        "ValueError: shard 7 is corrupt",
    )
    return RankEvidence(str(rank), "g2", f"rank {rank}", lines, exit_code=1)


def test_sixteen_ranks_the_real_cause_on_one_rank_earlier():
    evidence = [cause_rank(r) if r == 11 else healthy_rank(r) for r in range(16)]
    found = ff.first_failure(evidence)
    assert found is not None
    first = found.first
    assert (first.rank, first.node, first.kind) == ("11", "g2", ff.EXCEPTION)
    assert first.why == "ValueError: shard 7 is corrupt"
    assert first.line == 5 and first.source == "rank 11"
    assert first.time == datetime(2026, 12, 6, 12, 0, 5, tzinfo=timezone.utc)
    assert first.time_from == "the log before it"
    assert len(found.consequences) == 15
    assert {c.kind for c in found.consequences} == {ff.NCCL}
    assert "rank 11 on g2 at 2026-12-06 12:00:05 UTC" in found.lines()[0]
    assert "15 more failed as consequences (an NCCL timeout: ranks" in found.lines()[-1]
    assert "  at line 6 of rank 11's log" in found.lines()


def test_the_cause_is_found_even_when_it_is_the_last_rank_and_has_no_timestamp_but_an_end():
    lines = ("Traceback (most recent call last):", '  File "x.py", line 1', "KeyError: 'lr'")
    cause = RankEvidence("15", "g2", "rank 15", lines, exit_code=1, ended=T0.replace(minute=1))
    found = ff.first_failure([*(healthy_rank(r) for r in range(15)), cause])
    assert found is not None and found.first.rank == "15"
    assert found.first.time_from == "the rank's end" and found.first.why == "KeyError: 'lr'"


def test_an_nccl_timeout_is_the_cause_when_it_comes_first():
    hung = RankEvidence("3", "g1", "rank 3", ("2026-12-06 12:20:00 bye",), signal="TERM", ended=T0.replace(minute=20))
    found = ff.first_failure([healthy_rank(0), healthy_rank(1, minute=11), hung])
    assert found is not None
    assert (found.first.rank, found.first.kind) == ("0", ff.NCCL)
    assert [c.kind for c in found.consequences] == [ff.NCCL, ff.KILLED]


def test_a_cuda_error_first_is_the_cause_and_later_ones_are_consequences():
    early = RankEvidence("2", "", "rank 2", ("[E1206 12:00:09.5 1 x.cpp:1] CUDA error: an illegal memory access",))
    late = RankEvidence("0", "", "rank 0", ("[E1206 12:05:00.0 1 x.cpp:1] CUDA error: unspecified launch failure",))
    found = ff.first_failure([late, early], year=2026)
    assert found is not None and (found.first.rank, found.first.kind) == ("2", ff.CUDA)
    assert found.first.time == datetime(2026, 12, 6, 12, 0, 9, 500000, tzinfo=timezone.utc)


def test_the_oom_killer_and_an_exit_code_without_logs():
    pods = [
        RankEvidence("0", "n1", "rank 0", (), exit_code=137, reason="OOMKilled", ended=T0.replace(second=30)),
        RankEvidence("1", "n2", "rank 1", (), exit_code=1, reason="Error", ended=T0.replace(second=50)),
        RankEvidence("2", "n3", "rank 2", (), exit_code=0, ended=T0.replace(second=59)),
    ]
    found = ff.first_failure(pods)
    assert found is not None
    assert (found.first.rank, found.first.kind, found.first.node) == ("0", ff.OOM, "n1")
    assert "OOMKilled" in found.first.why
    assert [c.rank for c in found.consequences] == ["1"]  # rank 2 exited 0: no failure


def test_torchrun_error_file_gives_the_exception_and_its_time():
    stamp = int(T0.replace(second=7).timestamp())
    payload = {"message": {"message": "RuntimeError: boom\nmore", "extraInfo": {"timestamp": str(stamp)}}}
    payload["message"]["message"] = "Traceback...\nRuntimeError: boom"
    ev = RankEvidence("1", "g2", "rank 1", (), exit_code=1, error_file=json.dumps(payload))
    found = ff.first_failure([ev, RankEvidence("0", "g1", "rank 0", (), signal="KILL")])
    assert found is not None and found.first.why == "RuntimeError: boom"
    assert found.first.time == T0.replace(second=7) and found.first.time_from == "torchrun's error file"


def test_srun_lines_fill_in_nodes_and_exit_codes():
    main = [
        "srun: error: g2: task 1: Exited with exit code 1",
        "srun: error: g1: tasks 0,2: Killed",
    ]
    evidence = ff.with_srun_tasks([RankEvidence(str(r), source=f"rank {r}") for r in range(3)], main)
    assert [(e.node, e.exit_code, e.signal) for e in evidence] == [
        ("g1", None, "KILL"),
        ("g2", 1, ""),
        ("g1", None, "KILL"),
    ]
    found = ff.first_failure(evidence)
    assert found is not None and found.first.rank == "1" and found.first.kind == ff.EXIT


def test_nothing_failed():
    assert ff.first_failure([RankEvidence("0", lines=("all good",), exit_code=0)]) is None


def test_a_merged_log_is_split_by_torchruns_rank_prefixes_and_the_line_is_the_logs_own():
    lines = [
        "2026-12-06 12:00:00 launching 4 workers",
        *(f"[rank{r}]: 2026-12-06 12:00:01 step 1" for r in range(4)),
        "[rank2]: 2026-12-06 12:00:05 loading shard 7",
        "[rank2]: Traceback (most recent call last):",
        '[rank2]:   File "train.py", line 31, in <module>',
        "[rank2]: ValueError: shard 7 is corrupt",
        *(healthy_rank(r).lines[1] for r in (0, 1, 3)),
        "Traceback (most recent call last):",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
    ]
    main = RankEvidence("0", "box", "", tuple(lines), exit_code=1, ended=T0.replace(minute=11))
    found = ff.first_failure(ff.split_ranks(main))
    assert found is not None
    assert (found.first.rank, found.first.why, found.first.line) == ("2", "ValueError: shard 7 is corrupt", 8)
    assert lines[found.first.line].endswith(found.first.why)
    assert sorted((c.rank, c.kind) for c in found.consequences) == [
        ("0", ff.NCCL),
        ("1", ff.NCCL),
        ("3", ff.NCCL),
        (ff.LAUNCHER, ff.LAUNCHER),
    ]


def test_a_job_without_ranks_is_one_rank_with_the_jobs_own_state():
    from yanflow_tui.failureevidence import merge
    from yanflow_tui.model import Job, JobState

    job = Job("7", "c", "n", "u", JobState.FAILED, raw_state="OUT_OF_MEMORY", nodes=("g4",), exit_code=0, end_time=T0)
    found = ff.first_failure(merge(job, [], {"": ["epoch 1", "slurmstepd: error: Detected 1 oom-kill event(s)"]}))
    assert found is not None and (found.first.rank, found.first.node, found.first.kind) == ("0", "g4", ff.OOM)
    assert found.first.line == 1 and found.first.time == T0
    found = ff.first_failure(merge(job, [], {"": ["epoch 1"]}))
    assert found is not None and found.first.kind == ff.OOM and "OUT_OF_MEMORY" in found.first.why


async def test_a_long_log_keeps_its_last_lines_and_the_line_numbers_stay_the_logs(monkeypatch):
    from yanflow_tui import failureevidence
    from yanflow_tui.model import Job, JobState, LogLine

    monkeypatch.setattr(failureevidence, "MAX_LINES", 100)
    lines = [f"2026-12-06 11:00:00 step {i}" for i in range(1000)]
    lines += ["Traceback (most recent call last):", '  File "t.py", line 1', "ZeroDivisionError: division by zero"]

    class Backend:
        class capabilities:  # stands for the Capabilities object
            logs, rank_evidence = True, False

        async def stream_logs(self, job_id, follow=False):
            for text in lines:
                yield LogLine(job_id, text)

    job = Job("1", "c", "n", "u", JobState.FAILED, exit_code=1)
    found = await failureevidence.find_first_failure(Backend(), job, 10)  # type: ignore[arg-type]
    assert found is not None and found.first.line == 1002 and found.first.why.startswith("ZeroDivisionError")


def test_a_log_that_holds_several_ranks_is_named_by_its_node_and_the_launcher_by_its_name():
    """torchrun starts ranks 2 and 3 on node 1: their lines are in node rank 1's file ("rank 1" as the
    Logs view names it). The answer names that log by its node, never "rank 1's log" beside rank 2;
    torchrun's own report is "the launcher", never "rank launcher"; gloo's lost peer on another node is a
    consequence, even where that node's clock stamps it earlier."""
    lines = ("2026-12-06 12:00:05 epoch 2", "Traceback (most recent call last):", "FileNotFoundError: shard-1-1.pt")
    cause = RankEvidence("2", "gpu02", "rank 1", lines, exit_code=1)
    tb = "Traceback (most recent call last):"
    report = RankEvidence(ff.LAUNCHER, "gpu02", "rank 1", (tb, "torch.distributed.elastic.ChildFailedError:"))
    stopped = RankEvidence(ff.LAUNCHER, "gpu01", "rank 0", (tb, "SignalException: Process 11050 got signal: 15"))
    gloo = "RuntimeError: [../gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:34209."
    lost = RankEvidence("0", "gpu01", "rank 0", ("2026-12-06 11:59:00 epoch 2", tb, gloo), exit_code=1)
    found = ff.first_failure([lost, cause, report, stopped])
    assert found is not None and found.first.rank == "2"  # (rank 0's line is older: the clocks of two nodes)
    text = "\n".join(found.lines())
    assert "a lost peer: rank 0" in text, text
    assert "at line 3 of gpu02's log (rank 1)" in text and "rank 1's log" not in text
    assert "the launcher's report" in text and "killed: the launcher" in text, text
    assert "rank launcher" not in text, text
