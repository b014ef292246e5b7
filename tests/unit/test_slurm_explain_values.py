"""Slurm's ``explain`` over recorded command output (the shapes of Slurm 22.05's ``scontrol -o show
job``, ``scontrol show assoc_mgr`` and ``scontrol -o show node``): a QOS GPU limit names its value and
use, unavailable nodes name their state and reason, a partition's time limit names both limits, and a
command this Slurm lacks falls back instead of failing."""

from __future__ import annotations

from paths import DATA

from yanflow_tui.backends.slurm.explain import explain
from yanflow_tui.backends.slurm.transport import Result
from yanflow_tui.explain import Category

JOB = (
    "JobId=41 JobName=explain-qos UserId=alice(1000) GroupId=alice(1000) Priority=1000 Account=ml QOS=gpu2 "
    "JobState=PENDING Reason={reason} Dependency=(null) TimeLimit={limit} SubmitTime=1765000000 StartTime=0 "
    "Partition=batch ReqNodeList=(null) NumNodes=1 TRES=cpu=1,mem=1000M,node=1,billing=1,gres/gpu=1\n"
)
ASSOC_MGR = (DATA / "slurm" / "assoc_mgr-qos-22.05.txt").read_text()
NODES = (
    "NodeName=g2 Arch=x86_64 State=DOWN+DRAIN Reason=fan broken [root@2026-12-01T10:00:00]\n"
    "NodeName=g3 Arch=x86_64 State=IDLE+DRAIN Reason=kernel update [root@2026-12-02T10:00:00]\n"
)


class Recorded:
    """A transport that answers each command from ``answers`` (by its first words) and records it."""

    def __init__(self, answers: dict[str, tuple[int, str, str]]) -> None:
        self.answers = answers
        self.history: list[tuple[str, ...]] = []

    async def run(self, argv, stdin_data=None, timeout=None):
        argv = tuple(argv)
        self.history.append(argv)
        for prefix, (rc, out, err) in self.answers.items():
            if " ".join(argv).startswith(prefix):
                return Result(argv, rc, out, err)
        return Result(argv, 1, "", f"{argv[0]}: no recorded answer")


async def test_a_qos_gpu_limit_names_its_value_use_and_the_jobs_ask():
    transport = Recorded(
        {
            "scontrol -o show job": (0, JOB.format(reason="QOSGrpGRES", limit="01:00:00"), ""),
            "scontrol show assoc_mgr": (0, ASSOC_MGR, ""),
            "squeue -h --start": (0, "N/A|(null)\n", ""),
        }
    )
    found = await explain(transport, "site", "41")  # type: ignore[arg-type]
    assert found.category is Category.LIMITS and found.code == "QOSGrpGRES" and found.short == "QOS GPU limit"
    assert "QOS gpu2's total GPU (GRES) limit is reached" in found.reason
    assert "GrpTRES gres/gpu is 2, 2 in use, this job asks for 1" in found.reason
    assert found.expected_start is None and "limit has room" in found.expected_start_why
    assert ("scontrol", "show", "assoc_mgr", "flags=qos", "qos=gpu2") in transport.history


async def test_unavailable_nodes_say_their_state_and_why():
    reason = "ReqNodeNotAvail, UnavailableNodes:g[2-3]"
    transport = Recorded(
        {
            "scontrol -o show job": (0, JOB.format(reason=reason, limit="01:00:00"), ""),
            "scontrol -o show node g[2-3]": (0, NODES, ""),
            "squeue -h --start": (0, "1765003600|g1\n", ""),
        }
    )
    found = await explain(transport, "gpu", "41")  # type: ignore[arg-type]
    assert found.category is Category.NODE_STATE and found.short == "nodes unavailable: g[2-3]"
    assert "g2 DOWN+DRAIN (fan broken [root@2026-12-01T10:00:00])" in found.reason
    assert "g3 IDLE+DRAIN (kernel update" in found.reason
    assert found.expected_start is not None and int(found.expected_start.timestamp()) == 1765003600
    assert "on g1" in found.expected_start_why


async def test_a_time_limit_over_the_partitions_says_both_and_press_e():
    transport = Recorded(
        {
            "scontrol -o show job": (0, JOB.format(reason="PartitionTimeLimit", limit="2-00:00:00"), ""),
            "scontrol -o show partition batch": (0, "PartitionName=batch MaxTime=1-00:00:00 MaxNodes=UNLIMITED\n", ""),
        }
    )
    found = await explain(transport, "gpu", "41")  # type: ignore[arg-type]
    assert found.category is Category.CONFIGURATION
    assert "it asks for 2-00:00:00, partition batch allows 1-00:00:00" in found.reason
    assert found.action.startswith("press E") and "yanflow-tui edit 41" in found.action


async def test_priority_without_sprio_falls_back_on_squeue_priorities():
    transport = Recorded(
        {
            "scontrol -o show job": (0, JOB.format(reason="Priority", limit="01:00:00"), ""),
            "sprio": (1, "", "You are not running a supported priority plugin\n(priority/basic)."),
            "squeue -h -t PD -o %i|%Q -p batch": (0, "39|2000\n40|1500\n41|1000\n42|10\n", ""),
            "squeue -h --start": (1, "", "squeue: unrecognized option '--start'"),
        }
    )
    found = await explain(transport, "gpu", "41")  # type: ignore[arg-type]
    assert found.category is Category.PRIORITY and "2 jobs of higher priority ahead in partition batch" in found.reason
    assert found.short == "others first, 2 ahead" and dict(found.details)["Jobs ahead"] == "2 (squeue priorities)"
    assert found.expected_start is None and found.expected_start_why  # no --start: no estimate, still an answer


async def test_job_state_takes_only_job_state_where_it_works():
    from yanflow_tui.backends.slurm.backend import SlurmBackend
    from yanflow_tui.config import ClusterConfig
    from yanflow_tui.model import JobState

    transport = Recorded({"squeue --only-job-state": (0, "RUNNING\n", "")})
    backend = SlurmBackend(ClusterConfig("s", "slurm"), transport=transport)  # type: ignore[arg-type]
    assert await backend._job_state("41") is JobState.RUNNING
    assert transport.history == [("squeue", "--only-job-state", "-h", "-t", "all", "-j", "41", "-o", "%T")]
