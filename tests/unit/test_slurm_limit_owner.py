"""A QOS's per-user limit in ``explain`` is the job's user's own figure (Slurm 22.05 lists every user
under "User Limits", by uid alone or as ``name(uid)``), and a job that alone asks for more than a
limit allows is told it never starts under it, with what to change, instead of "wait for room"."""

from __future__ import annotations

from test_slurm_explain_values import Recorded

from yanflow_tui.backends.slurm import reasons
from yanflow_tui.backends.slurm.explain import explain
from yanflow_tui.explain import Category

QOS = """\
QOS=gpu1(15)
    UsageRaw=0.000000
    GrpTRES=cpu=N(0),mem=N(0),gres/gpu=N(3)
    MaxTRESPJ=
    Account Limits
      ml
        MaxJobsPA=N(0) MaxJobsAccruePA=N(1) MaxSubmitJobsPA=N(1)
        MaxTRESPA=cpu=N(0),gres/gpu=N(3)
    User Limits
      1001
        MaxJobsPU=N(2) MaxJobsAccruePU=N(0) MaxSubmitJobsPU=N(2)
        MaxTRESPU=cpu=N(2),gres/gpu=1(1)
      {alice}
        MaxJobsPU=N(0) MaxJobsAccruePU=N(1) MaxSubmitJobsPU=N(1)
        MaxTRESPU=cpu=N(0),gres/gpu=1(0)
"""
JOB = (
    "JobId=52 JobName=qos UserId=alice(1000) GroupId=alice(1000) Account=ml QOS=gpu1 JobState=PENDING "
    "Reason=QOSMaxGRESPerUser Dependency=(null) TimeLimit=00:10:00 Partition=batch NumNodes=1 "
    "TRES=cpu=1,mem=1000M,node=1,billing=1,gres/gpu={gpus}\n"
)


def test_the_users_own_entry_is_read_by_uid_or_by_name():
    for alice in ("1000", "alice(1000)"):
        mine = reasons.owned_by(QOS.format(alice=alice), {"alice", "1000", "ml"})
        assert reasons.limit_entry(mine, "MaxTRESPU", "gres/") == ("gres/gpu", "1", "0")  # not uid 1001's 1(1)
        assert reasons.limit_entry(mine, "MaxTRESPA", "gres/") is None  # N: not set
    other = reasons.owned_by(QOS.format(alice="1000"), {"bob", "1001"})
    assert reasons.limit_entry(other, "MaxTRESPU", "gres/") == ("gres/gpu", "1", "1")


def test_over_a_limit_alone():
    per_user = reasons.limit_of("QOSMaxGRESPerUser")
    per_node = reasons.limit_of("QOSMaxGRESPerNode")
    assert per_user is not None and per_node is not None
    assert reasons.over_alone(per_user, "1", "2") and not reasons.over_alone(per_user, "2", "2")
    assert not reasons.over_alone(per_node, "1", "2")  # the job's count is its total, not per node
    assert not reasons.over_alone(per_user, "1", "")


async def explained(gpus: int):
    transport = Recorded(
        {
            "scontrol -o show job": (0, JOB.format(gpus=gpus), ""),
            "scontrol show assoc_mgr": (0, QOS.format(alice="1000"), ""),
            "squeue -h --start": (0, "N/A|(null)\n", ""),
        }
    )
    return await explain(transport, "site", "52")  # type: ignore[arg-type]


async def test_a_job_over_a_per_user_gpu_limit_alone_never_starts_and_says_what_to_change():
    found = await explained(2)
    assert found.category is Category.LIMITS and found.code == "QOSMaxGRESPerUser"
    assert found.reason == (
        "QOS gpu1's maximum GPU (GRES) per user limit is below what this job alone asks for: "
        "MaxTRESPU gres/gpu is 1, 0 in use, this job asks for 2, so it never starts."
    )
    assert found.expected_start is None and found.expected_start_why.startswith("never")
    assert "another QOS" in found.action and "yanflow-tui edit 52" in found.action


async def test_a_job_within_the_limit_waits_for_room():
    found = await explained(1)
    assert "MaxTRESPU gres/gpu is 1, 0 in use, this job asks for 1" in found.reason
    assert "never" not in found.reason and "limit has room" in found.expected_start_why
