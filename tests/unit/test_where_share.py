"""The ``where`` ranking and the ``share`` readings as pure functions: the order (soonest first, never
last), the GPU type a job names matched to a cluster's own name for it, Slurm's ``sbatch --test-only``
answers (a start, a refusal, an option an old version lacks), ``sshare -P`` and ``scontrol show
assoc_mgr`` text (as Slurm 22.05 prints it), and a Kubernetes namespace's ResourceQuotas."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from yanflow_tui.backends.kubernetes import quota
from yanflow_tui.backends.slurm import standing
from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.backends.slurm.transport import Result, Transport
from yanflow_tui.config import ClusterConfig
from yanflow_tui.model import Node, Resources
from yanflow_tui.placement_rank import NEVER, NOW, WAITS, Placement, node_type_for, rank, when_text
from yanflow_tui.share import Share, ShareLine, share_text

NOW_T = datetime(2026, 12, 6, 12, 0, tzinfo=timezone.utc)


def test_rank_puts_now_first_waits_by_start_and_never_last():
    later = Placement("b", WAITS, "busy", NOW_T + timedelta(hours=2))
    sooner = Placement("c", WAITS, "busy", NOW_T + timedelta(minutes=5))
    unknown = Placement("d", WAITS, "no estimate")
    never = Placement("a", NEVER, "no GPUs")
    now = Placement("e", NOW, "free")
    assert [p.cluster for p in rank([never, later, unknown, sooner, now], NOW_T)] == ["e", "c", "b", "d", "a"]
    assert [p.cluster for p in rank([Placement("x", NOW, ""), Placement("y", NOW, "")], NOW_T)] == ["x", "y"]


def test_when_text_says_when_in_words():
    assert when_text(Placement("a", NOW, ""), NOW_T) == "now"
    assert when_text(Placement("a", NEVER, ""), NOW_T) == "never"
    assert when_text(Placement("a", WAITS, ""), NOW_T) == "later (no estimate)"
    assert when_text(Placement("a", WAITS, "", NOW_T + timedelta(minutes=12)), NOW_T).startswith("in 12 min (")


def test_a_gpu_type_matches_a_clusters_longer_name_for_it():
    nodes = [Node("k", "n1", "ready", gpu_type="NVIDIA-A100-SXM4-80GB", gpus_total=8)]
    assert node_type_for("a100", nodes) == "NVIDIA-A100-SXM4-80GB"
    assert node_type_for("a10", nodes) == "a10"  # a word of the name, never a prefix of one
    assert node_type_for("h100", nodes) == "h100"
    assert node_type_for("A100", [Node("s", "g1", "idle", gpu_type="a100", gpus_total=8)]) == "a100"


def test_sbatch_test_only_answers():
    start = int((NOW_T + timedelta(minutes=9)).timestamp())
    text = f"sbatch: Job 97 to start at {start} using 1 processors on nodes hx-n1 in partition batch"
    found = standing.will_run("site", text, NOW_T)
    assert found is not None and (found.verdict, found.nodes) == (WAITS, ("hx-n1",))
    assert found.expected_start == NOW_T + timedelta(minutes=9) and "in partition batch" in found.reason
    now = standing.will_run(
        "t",
        f"sbatch: Job 3 to start at {int(NOW_T.timestamp())} using 2 processors on nodes gpu[01-02] in partition gpu",
        NOW_T,
    )
    assert now is not None and now.verdict == NOW and now.nodes == ("gpu[01-02]",)
    refused = standing.will_run("t", "allocation failure: Requested node configuration is not available", NOW_T)
    assert refused is not None and refused.verdict == NEVER
    assert refused.reason == "sbatch --test-only: Requested node configuration is not available"
    partition = "sbatch: error: invalid partition specified: nope\nallocation failure: Invalid partition name specified"
    assert standing.will_run("t", partition, NOW_T).reason.endswith("Invalid partition name specified")
    iso = standing.will_run("t", "sbatch: Job 5 to start at 2026-12-06T14:00:00 using 1 processors on nodes n1", NOW_T)
    assert iso is not None and iso.verdict == WAITS and iso.expected_start is not None  # a version without %s
    assert standing.will_run("t", "sbatch: unrecognized option '--test-only'", NOW_T) is None  # never "no answer"
    assert standing.OPTION_MISSING.search("sshare: unrecognized option '-l'")


SSHARE = """Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|LevelFS|GrpTRESMins|TRESRunMins
root|||0.000000|120||1.000000|||cpu=0
 ml|alice|10|0.500000|60|0.5|0.500000|0.250000|1.000000||cpu=10
 ml|bob|10|0.500000|60|0.5|0.500000|0.750000|1.000000||cpu=0
"""


def test_sshare_lines_of_the_user_by_its_header():
    lines = standing.sshare_lines(SSHARE, "alice")
    got = {line.what: line.used for line in lines}
    assert got["fair-share factor"] == "0.250000" and got["shares"] == "10" and got["effective usage"] == "0.500000"
    assert {line.scope for line in lines} == {"fair-share in account ml"}
    older = "Account|User|RawShares|FairShare\nml|alice|5|0.9\n"  # fewer columns: those it has
    assert {line.what: line.used for line in standing.sshare_lines(older, "alice")} == {
        "shares": "5",
        "fair-share factor": "0.9",
    }


ASSOC_MGR = """Current Association Manager state

Association Records

ClusterName=site Account=ml UserName= Partition= Priority=0 ID=3
    SharesRaw/Norm/Level/Factor=1/0.50/1/0.00
    GrpJobs=N(2) GrpJobsAccrue=N(0)
    GrpTRES=cpu=N(8),mem=N(0),gres/gpu=8(6)
    MaxJobs= MaxJobsAccrue= MaxSubmitJobs= MaxWallPJ=
ClusterName=site Account=ml UserName=alice(1000) Partition= Priority=0 ID=4
    GrpJobs=N(2) GrpJobsAccrue=N(0)
    GrpTRES=cpu=N(8),mem=N(0),gres/gpu=N(6)
    MaxJobs=5(2) MaxJobsAccrue= MaxSubmitJobs= MaxWallPJ=
ClusterName=site Account=other UserName=bob(1001) Partition= Priority=0 ID=5
    GrpTRES=gres/gpu=2(2)

QOS Records

QOS=normal(1)
    UsageRaw=0.000000
    GrpJobs=N(0) GrpJobsAccrue=N(0) GrpSubmitJobs=N(0) GrpWall=N(0.00)
    GrpTRES=cpu=N(0),gres/gpu=N(0)
    MinPrioThresh=
    Account Limits
        No Accounts
    User Limits
        No Users
QOS=gpu4(2)
    GrpTRES=cpu=N(0),gres/gpu=16(12)
    User Limits
        alice(1000)
            MaxJobsPU=N(2) MaxJobsAccruePU=N(0) MaxSubmitJobsPU=N(2)
            MaxTRESPU=cpu=N(8),gres/gpu=4(4)
        bob(1001)
            MaxTRESPU=cpu=N(0),gres/gpu=4(1)
"""


def test_assoc_mgr_limits_that_apply_to_me_with_their_use():
    lines = standing.assoc_mgr_lines(ASSOC_MGR, "alice")
    got = {(line.scope, line.what): (line.used, line.limit) for line in lines}
    assert got[("account ml", "GrpTRES gres/gpu")] == ("6", "8")
    assert got[("association ml/alice", "MaxJobs")] == ("2", "5")
    assert got[("QoS normal", "limits")] == ("none set", "")
    assert got[("QoS gpu4", "GrpTRES gres/gpu")] == ("12", "16")
    assert got[("QoS gpu4", "MaxTRESPU gres/gpu")] == ("4", "4")  # alice's own, not bob's
    assert not any("other" in scope or "bob" in scope for scope, _ in got)
    near = [line for line in lines if line.near]
    assert [(line.scope, line.what) for line in near] == [("QoS gpu4", "MaxTRESPU gres/gpu")]


def test_accounting_from_scontrol_show_config():
    assert standing.accounting(
        "AccountingStorageHost   = localhost\nAccountingStorageType   = accounting_storage/none\n"
    ) == ("accounting_storage/none")
    assert standing.accounting("ClusterName = x\n") == ""


QUOTAS = {
    "items": [
        {
            "metadata": {"name": "compute"},
            "status": {
                "hard": {"requests.nvidia.com/gpu": "8", "requests.memory": "64Gi", "pods": "10"},
                "used": {"requests.nvidia.com/gpu": "6", "requests.memory": "16Gi", "pods": "3"},
            },
        }
    ]
}


def test_quota_checks_and_lines():
    assert quota.check(QUOTAS, Resources(gpus=2), "ml") is None
    waits = quota.check(QUOTAS, Resources(gpus=4), "ml")
    assert waits is not None and waits.verdict == WAITS
    assert (
        waits.reason
        == "ResourceQuota compute in namespace ml: 6 of 8 GPUs in use (requests.nvidia.com/gpu); the job asks 4"
    )
    never = quota.check(QUOTAS, Resources(nodes=3, gpus=4), "ml")
    assert (
        never is not None and never.verdict == NEVER and "allows 8 GPUs" in never.reason and "asks 12" in never.reason
    )
    memory = quota.check(QUOTAS, Resources(memory_mb=128 * 1024), "ml")
    assert memory is not None and memory.verdict == NEVER and "allows 64 GiB memory" in memory.reason
    assert quota.check({"items": []}, Resources(gpus=64), "ml") is None
    lines = quota.share_lines(QUOTAS, "ml")
    assert [(line.what, line.used, line.limit) for line in lines] == [
        ("pods (pods)", "3", "10"),
        ("requests.memory (memory)", "16Gi", "64Gi"),
        ("requests.nvidia.com/gpu (GPUs)", "6", "8"),
    ]


def test_share_text_and_json():
    share = Share(
        "site", (ShareLine("QoS gpu4", "MaxTRESPU gres/gpu", "4", "4"), ShareLine("QoS gpu4", "MaxJobs", "1", "5"))
    )
    assert share_text(share) == ["QoS gpu4: MaxTRESPU gres/gpu: 4 of 4; MaxJobs: 1 of 5"]
    assert share_text(Share("t", note="no accounting")) == ["no accounting"]
    assert share.as_json()["lines"][0] == {"scope": "QoS gpu4", "what": "MaxTRESPU gres/gpu", "used": "4", "limit": "4"}


class OldSlurm(Transport):
    """A Slurm whose ``sshare`` lacks ``-l`` and whose ``scontrol show assoc_mgr`` lacks ``flags=`` (as
    older versions do): each refused with the error such a version prints; the rest answered as recorded."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[str, ...]] = []

    async def run(self, argv, stdin_data=None, timeout=None):
        argv = tuple(argv)
        self.sent.append(argv)
        if argv == ("id", "-un"):
            return Result(argv, 0, "alice\n", "")
        if argv[:3] == ("scontrol", "show", "config"):
            return Result(argv, 0, "AccountingStorageType   = accounting_storage/slurmdbd\n", "")
        if argv[0] == "sshare" and "-l" in argv:
            return Result(argv, 1, "", "sshare: unrecognized option '-l'\n")
        if argv[0] == "sshare":
            return Result(argv, 0, SSHARE, "")
        if argv[:3] == ("scontrol", "show", "assoc_mgr") and any(a.startswith("flags=") for a in argv):
            return Result(argv, 1, "", "scontrol: error: Invalid argument flags=assoc,qos\n")
        if argv[:3] == ("scontrol", "show", "assoc_mgr"):
            return Result(argv, 0, ASSOC_MGR, "")
        raise AssertionError(f"not expected: {argv}")

    async def _exec(self, script):  # pragma: no cover - run answers everything
        raise AssertionError(script)

    async def _stream(self, script, binary=False):  # pragma: no cover
        raise AssertionError(script)


async def test_an_option_an_older_slurm_lacks_falls_back_never_reads_as_no_answer():
    transport = OldSlurm()
    backend = SlurmBackend(ClusterConfig("old", "slurm", options={}), transport=transport)
    share = await backend.share()
    assert ("sshare", "-P", "-U", "-u", "alice") in transport.sent  # tried again without -l
    assert ("scontrol", "show", "assoc_mgr", "users=alice") in transport.sent  # and without flags=
    got = {(line.scope, line.what): (line.used, line.limit) for line in share.lines}
    assert got[("fair-share in account ml", "fair-share factor")] == ("0.250000", "")
    assert got[("QoS gpu4", "MaxTRESPU gres/gpu")] == ("4", "4")
    assert share.note == ""


def test_assoc_mgr_qos_owners_by_uid_alone_as_slurm_22_05_prints_them():
    """22.05 lists a QOS's users by uid alone: the figures are still mine only (bob's come first)."""
    text = ASSOC_MGR.replace("        alice(1000)\n", "        1000\n").replace("        bob(1001)\n", "        1001\n")
    text = text.replace(
        "    User Limits\n        1000\n", "    User Limits\n        1001\n            MaxJobsPU=3(3)\n        1000\n"
    )
    got = {(line.scope, line.what): (line.used, line.limit) for line in standing.assoc_mgr_lines(text, "alice")}
    assert got[("QoS gpu4", "MaxTRESPU gres/gpu")] == ("4", "4")  # alice's (uid 1000), not bob's 4(1)
    assert ("QoS gpu4", "MaxJobsPU") not in got  # bob's (uid 1001) only
