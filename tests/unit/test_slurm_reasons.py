"""Slurm's pending reasons (``backends/slurm/reasons.py``): every documented code has a category, a
sentence and a short phrase; reasons with values are split; the command texts explain reads are parsed."""

from __future__ import annotations

import pytest
from paths import DATA

from yanflow_tui.backends.slurm import reasons
from yanflow_tui.explain import Category

SLURM_DATA = DATA / "slurm"

# The reasons ``man squeue`` (22.05) documents under JOB REASON CODES, beside the families.
DOCUMENTED = """AssociationJobLimit AssociationResourceLimit AssociationTimeLimit BadConstraints BeginTime Cleaning
Dependency DependencyNeverSatisfied FrontEndDown InactiveLimit InvalidAccount InvalidQOS JobHeldAdmin JobHeldUser
JobLaunchFailure Licenses NodeDown NonZeroExitCode PartitionDown PartitionInactive PartitionNodeLimit
PartitionTimeLimit Priority Prolog QOSJobLimit QOSResourceLimit QOSTimeLimit QOSUsageThreshold ReqNodeNotAvail
Reservation Resources SystemFailure TimeLimit WaitingForScheduling AccountNotAllowed QOSNotAllowed PartitionConfig
AccountingPolicy JobArrayTaskLimit BurstBufferResources BurstBufferStageIn BurstBufferOperation PowerNotAvail
PowerReserved ReservationDeleted DeadLine MaxMemPerLimit JobHoldMaxRequeue SchedDefer FedJobLock OutOfMemory""".split()


@pytest.mark.parametrize("code", DOCUMENTED + reasons.FAMILY_CODES)
def test_every_documented_reason_is_known(code):
    meaning = reasons.reason(code)
    assert meaning.category is not Category.UNKNOWN or code in ("WaitingForScheduling", "SchedDefer", "FedJobLock")
    assert meaning.sentence and meaning.short and "does not know" not in meaning.sentence


@pytest.mark.parametrize(
    ("code", "category", "short"),
    [
        ("Resources", Category.RESOURCES, "waits for resources"),
        ("Priority", Category.PRIORITY, "others first"),
        ("Dependency", Category.DEPENDENCY, "waits for a job"),
        ("JobHeldUser", Category.HELD, "held by user"),
        ("JobHeldAdmin", Category.HELD, "held by admin"),
        ("BeginTime", Category.BEGIN_TIME, "starts later"),
        ("Reservation", Category.RESERVATION, "waits for reservation"),
        ("PartitionDown", Category.NODE_STATE, "partition down"),
        ("PartitionTimeLimit", Category.CONFIGURATION, "time over partition's"),
        ("JobLaunchFailure", Category.LAUNCH_FAILURE, "launch failed"),
        ("QOSGrpGRES", Category.LIMITS, "QOS GPU limit"),
        ("AssocGrpCpuLimit", Category.LIMITS, "association CPU limit"),
        ("QOSMaxGRESPerUser", Category.LIMITS, "QOS GPU limit"),
        ("MaxGRESPerAccount", Category.LIMITS, "QOS GPU limit"),
        ("QOSMinGRES", Category.CONFIGURATION, "QOS minimum"),
    ],
)
def test_categories_and_phrases(code, category, short):
    meaning = reasons.reason(code)
    assert (meaning.category, meaning.short) == (category, short)


def test_actions_name_the_console_keys():
    assert (
        "press L" in reasons.reason("JobHeldUser").action
        and "yanflow-tui release" in reasons.reason("JobHeldUser").action
    )
    assert "press E" in reasons.reason("PartitionTimeLimit").action
    assert reasons.reason("Resources").action == ""  # waiting is all there is


def test_limit_families_are_read_by_grammar():
    limit = reasons.limit_of("QOSGrpGRES")
    assert limit is not None and (limit.scope, limit.kind, limit.tres, limit.assoc_mgr_key) == (
        "QOS",
        "Grp",
        "GRES",
        "GrpTRES",
    )
    assert reasons.limit_of("QOSMaxGRESPerUser").assoc_mgr_key == "MaxTRESPU"  # type: ignore[union-attr]
    assert reasons.limit_of("AssocGrpCPURunMinutesLimit").assoc_mgr_key == "GrpTRESRunMins"  # type: ignore[union-attr]
    assert reasons.limit_of("QOSGrpJobsLimit").assoc_mgr_key == "GrpJobs"  # type: ignore[union-attr]
    assert reasons.limit_of("Resources") is None and reasons.limit_of("Priority") is None
    assert "total GPU (GRES)" in reasons.reason("QOSGrpGRES").sentence
    # a name a later Slurm adds to a family is still understood
    assert reasons.reason("QOSMaxGRESMinutesPerUser").category is Category.LIMITS


def test_unknown_reason_keeps_its_name():
    meaning = reasons.reason("SomethingNew")
    assert (
        meaning.category is Category.UNKNOWN and "SomethingNew" in meaning.sentence and meaning.short == "SomethingNew"
    )


@pytest.mark.parametrize(
    ("text", "code", "values", "short"),
    [
        (
            "ReqNodeNotAvail, UnavailableNodes:g[2-3]",
            "ReqNodeNotAvail",
            {"UnavailableNodes": "g[2-3]"},
            "nodes unavailable: g[2-3]",
        ),
        (
            "(ReqNodeNotAvail, UnavailableNodes:gpu01,gpu03)",
            "ReqNodeNotAvail",
            {"UnavailableNodes": "gpu01,gpu03"},
            "nodes unavailable: gpu01,gpu03",
        ),
        ("QOSGrpGRES", "QOSGrpGRES", {}, "QOS GPU limit"),
        ("Dependency", "Dependency", {}, "waits for a job"),
        ("JobHeldUser", "JobHeldUser", {}, "held by user"),
        ("(BeginTime)", "BeginTime", {}, "starts later"),
        ("Reason=Priority", "Priority", {}, "others first"),
        ("", "None", {}, ""),
    ],
)
def test_split_and_short_phrase(text, code, values, short):
    got_code, got_values = reasons.split(text)
    if text:
        assert (got_code, got_values) == (code, values)
    assert reasons.short_phrase(text) == short


SCONTROL = (
    "JobId=566 JobName=explain-b UserId=alice(1000) GroupId=alice(1000) Priority=4294901755 Account=ml QOS=gpu "
    "JobState=PENDING Reason=ReqNodeNotAvail, UnavailableNodes:g[2-3] "
    "Dependency=afterok:565(unfulfilled),afterany:7_2+10(unfulfilled) "
    "TimeLimit=00:10:00 StartTime=1765000000 Partition=gpu ReqNodeList=(null) "
    "TRES=cpu=1,mem=1000M,node=1,billing=1,gres/gpu=2 Command=/bin/echo a b"
)


def test_scontrol_fields_keep_values_with_spaces():
    job = reasons.fields(SCONTROL)
    assert job["Reason"] == "ReqNodeNotAvail, UnavailableNodes:g[2-3]"
    assert job["TRES"] == "cpu=1,mem=1000M,node=1,billing=1,gres/gpu=2" and job["Command"] == "/bin/echo a b"
    assert job["UserId"] == "alice(1000)" and job["QOS"] == "gpu"
    assert reasons.dependencies(job["Dependency"]) == [
        ("afterok", "565", "unfulfilled"),
        ("afterany", "7_2", "unfulfilled"),
    ]
    assert reasons.dependencies("(null)") == [] and reasons.dependencies("singleton(unfulfilled)") == [
        ("singleton", "", "unfulfilled")
    ]


ASSOC_MGR = (SLURM_DATA / "assoc_mgr-qos-22.05.txt").read_text()  # its shape as Slurm 22.05 prints it


def test_assoc_mgr_limits_and_use():
    record = reasons.qos_record(ASSOC_MGR, "gpu2")
    assert record.startswith("QOS=gpu2(4)") and "QOS=normal" not in record
    assert reasons.limit_values(record, "GrpTRES", "gres/") == ("2", "2")
    assert reasons.limit_values(record, "GrpTRES", "cpu") is None  # N: not set
    assert reasons.limit_values(record, "MaxTRESPU", "gres/") == ("3", "")
    assert reasons.limit_values(record, "MaxJobsPU", "") == ("5", "1")
    assert reasons.qos_record(ASSOC_MGR, "other") == ""
