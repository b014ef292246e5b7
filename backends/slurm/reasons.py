"""Slurm's pending reasons, every one it documents (``man squeue`` "JOB REASON CODES", the job reason
codes page, and the names libslurm 22.05 carries), each mapped to an ``explain.Category``, a sentence
and a short phrase for the Queue; the limit families (``QOSGrpGRES``, ``AssocMaxCpuPerJobLimit``,
``MaxGRESPerAccount``...) are read by their grammar, so a name a newer Slurm adds in a family is
understood too. Pure functions over text: no I/O (``backends/slurm/explain.py`` gathers the values)."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from functools import lru_cache

from yanflow_tui.explain import Category

RELEASE = "press L to release it (yanflow-tui release JOB)"
EDIT = "press E to edit its time limit, partition or QOS (yanflow-tui edit JOB)"
CANCEL = "cancel it with c (yanflow-tui cancel JOB) and submit it again as the cluster allows"
ADMIN = "ask the cluster's administrators"


@dataclass(frozen=True)
class Reason:
    """What one Slurm reason code means: its category, a sentence, a short phrase and what to do."""

    code: str
    category: Category
    sentence: str
    short: str
    action: str = ""


def _r(code: str, category: Category, sentence: str, short: str, action: str = "") -> tuple[str, Reason]:
    return code, Reason(code, category, sentence, short, action)


C = Category
TABLE: dict[str, Reason] = dict(
    [
        _r(
            "None", C.UNKNOWN, "Slurm gives no reason yet: the scheduler has not looked at the job", "not looked at yet"
        ),
        _r("WaitingForScheduling", C.UNKNOWN, "the scheduler has not looked at the job yet", "not looked at yet"),
        _r(
            "SchedDefer",
            C.UNKNOWN,
            "the scheduler deferred the job (defer): it is looked at on its next pass",
            "deferred",
        ),
        _r("Priority", C.PRIORITY, "jobs of higher priority in its partition come first", "others first"),
        _r("Resources", C.RESOURCES, "the resources it asks for are in use by other jobs", "waits for resources"),
        _r("Dependency", C.DEPENDENCY, "it waits for another job", "waits for a job"),
        _r(
            "DependencyNeverSatisfied",
            C.DEPENDENCY,
            "the job it depends on ended in a way that never satisfies the dependency",
            "dependency never met",
            CANCEL,
        ),
        _r("BeginTime", C.BEGIN_TIME, "it was asked not to start before its begin time", "starts later"),
        _r("JobHeldUser", C.HELD, "its user held it", "held by user", RELEASE),
        _r("JobHeldAdmin", C.HELD, "an administrator held it", "held by admin", ADMIN + " to release it"),
        _r(
            "JobHoldMaxRequeue",
            C.HELD,
            "it was requeued too often (MaxBatchRequeue) and is held",
            "held: requeued too often",
            RELEASE,
        ),
        _r("Reservation", C.RESERVATION, "it waits for its advanced reservation to start", "waits for reservation"),
        _r("ReservationDeleted", C.RESERVATION, "its reservation was deleted", "reservation deleted", EDIT),
        _r("ResvDeleted", C.RESERVATION, "its reservation was deleted", "reservation deleted", EDIT),
        _r("ReqNodeNotAvail", C.NODE_STATE, "nodes it needs are not available", "nodes unavailable"),
        _r("NodeDown", C.NODE_STATE, "a node the job needs is down", "node down"),
        _r("FrontEndDown", C.NODE_STATE, "no front end node can run the job", "front end down"),
        _r("PartitionDown", C.NODE_STATE, "its partition is down", "partition down", EDIT),
        _r("PartitionInactive", C.NODE_STATE, "its partition is inactive", "partition inactive", EDIT),
        _r("PowerNotAvail", C.NODE_STATE, "not enough power is available for the job", "no power"),
        _r("PowerReserved", C.RESERVATION, "the power it needs is reserved", "power reserved"),
        _r(
            "PartitionNodeLimit",
            C.CONFIGURATION,
            "it asks for more nodes than its partition allows",
            "over partition nodes",
            EDIT,
        ),
        _r(
            "PartitionTimeLimit",
            C.CONFIGURATION,
            "its time limit is over its partition's",
            "time over partition's",
            EDIT,
        ),
        _r(
            "PartitionConfig",
            C.CONFIGURATION,
            "it asks for what its partition is not set up for",
            "partition config",
            EDIT,
        ),
        _r("AccountNotAllowed", C.CONFIGURATION, "its account may not use its partition", "account not allowed", EDIT),
        _r("QOSNotAllowed", C.CONFIGURATION, "its QOS may not be used in its partition", "QOS not allowed", EDIT),
        _r("InvalidAccount", C.CONFIGURATION, "its account is not valid", "invalid account", CANCEL),
        _r("InvalidQOS", C.CONFIGURATION, "its QOS is not valid", "invalid QOS", EDIT),
        _r(
            "BadConstraints",
            C.CONFIGURATION,
            "its constraints cannot be satisfied by any node",
            "bad constraints",
            CANCEL,
        ),
        _r(
            "MaxMemPerLimit",
            C.CONFIGURATION,
            "it asks for more memory per CPU or node than allowed",
            "memory over limit",
            CANCEL,
        ),
        _r("DeadLine", C.CONFIGURATION, "it cannot finish before its deadline", "past deadline", CANCEL),
        _r("Licenses", C.RESOURCES, "the licenses it asks for are in use", "waits for licenses"),
        _r("BurstBufferResources", C.RESOURCES, "the burst buffer it asks for is in use", "waits for burst buffer"),
        _r("BurstBufferStageIn", C.RESOURCES, "its burst buffer is staging its files in", "staging in"),
        _r("BurstBufferOperation", C.LAUNCH_FAILURE, "a burst buffer operation failed", "burst buffer failed", ADMIN),
        _r("JobArrayTaskLimit", C.LIMITS, "its array runs at most its task limit (%N) at once", "array task limit"),
        _r("AccountingPolicy", C.LIMITS, "an accounting policy limit holds it", "accounting limit"),
        _r("AssociationJobLimit", C.LIMITS, "its association's job limit is reached", "association job limit"),
        _r("AssociationResourceLimit", C.LIMITS, "its association's resource limit is reached", "association limit"),
        _r("AssociationTimeLimit", C.LIMITS, "its association's time limit is reached", "association time limit", EDIT),
        _r("QOSJobLimit", C.LIMITS, "its QOS's job limit is reached", "QOS job limit"),
        _r("QOSResourceLimit", C.LIMITS, "its QOS's resource limit is reached", "QOS limit"),
        _r("QOSTimeLimit", C.LIMITS, "its QOS's time limit is reached", "QOS time limit", EDIT),
        _r("QOSUsageThreshold", C.LIMITS, "its QOS's usage threshold is reached", "QOS usage threshold"),
        _r("InactiveLimit", C.LIMITS, "it reached the system's inactive limit", "inactive limit"),
        _r("TimeLimit", C.LIMITS, "it has run out of time", "out of time"),
        _r("FedJobLock", C.UNKNOWN, "the federation holds it while clusters agree where it runs", "federation lock"),
        _r("Cleaning", C.LAUNCH_FAILURE, "it is being requeued and still cleaning up its last run", "cleaning up"),
        _r("Prolog", C.LAUNCH_FAILURE, "its prolog is still running", "prolog running"),
        _r(
            "JobLaunchFailure",
            C.LAUNCH_FAILURE,
            "it could not be launched (a file system, an invalid program)",
            "launch failed",
            ADMIN,
        ),
        _r("SystemFailure", C.LAUNCH_FAILURE, "Slurm, the file system or the network failed", "system failure", ADMIN),
        _r("NonZeroExitCode", C.FINISHED, "it ended with a non-zero exit code", "non-zero exit"),
        _r("OutOfMemory", C.FINISHED, "it ran out of memory", "out of memory"),
        _r("BlockMaxError", C.CONFIGURATION, "its block is over the error limit (BlueGene)", "block errors"),
        _r("BlockFreeAction", C.RESOURCES, "a block is being freed (BlueGene)", "block freeing"),
    ]
)

# The limit families: a scope, the kind of limit, the resource (TRES), its time form and per what.
LIMIT = re.compile(
    r"(?P<scope>QOS|Assoc)?(?P<kind>Grp|Max|Min)?"
    r"(?P<tres>Cpu|CPU|Memory|Mem|Node|GRES|Energy|License|BB|Billing|Unknown|SubmitJobs|SubmitJob|Jobs|WallDuration|Wall)"
    r"(?P<mins>RunMinutes|Minutes)?(?P<per>PerJob|PerNode|PerUser|PerAccount)?(?P<tail>Limit|NotSatisfied)?"
)
TRES_NAMES = {
    "Cpu": "CPU",
    "CPU": "CPU",
    "Memory": "memory",
    "Mem": "memory",
    "Node": "node",
    "GRES": "GPU (GRES)",
    "Energy": "energy",
    "License": "license",
    "BB": "burst buffer",
    "Billing": "billing",
    "Unknown": "TRES",
    "Jobs": "running jobs",
    "SubmitJob": "submitted jobs",
    "SubmitJobs": "submitted jobs",
    "Wall": "wall time",
    "WallDuration": "wall time",
}
# TRES key in ``scontrol show assoc_mgr`` for each family resource ("" when the limit is not a TRES).
TRES_KEYS = {"Cpu": "cpu", "CPU": "cpu", "Memory": "mem", "Mem": "mem", "Node": "node", "GRES": "gres/",
             "Energy": "energy", "License": "license/", "BB": "bb/", "Billing": "billing"}  # fmt: skip
# Every family name libslurm 22.05 carries (``strings libslurmfull.so``): the table's coverage test reads it.
FAMILY_CODES = """
QOSGrpCpuLimit QOSGrpCPUMinutesLimit QOSGrpCPURunMinutesLimit QOSGrpJobsLimit QOSGrpMemLimit QOSGrpNodeLimit
QOSGrpSubmitJobsLimit QOSGrpWallLimit QOSMaxCpuPerJobLimit QOSMaxCpuMinutesPerJobLimit QOSMaxNodePerJobLimit
QOSMaxWallDurationPerJobLimit QOSMaxCpuPerUserLimit QOSMaxJobsPerUserLimit QOSMaxNodePerUserLimit
QOSMaxSubmitJobPerUserLimit QOSMinCpuNotSatisfied AssocGrpCpuLimit AssocGrpCPUMinutesLimit AssocGrpCPURunMinutesLimit
AssocGrpJobsLimit AssocGrpMemLimit AssocGrpNodeLimit AssocGrpSubmitJobsLimit AssocGrpWallLimit AssocMaxJobsLimit
AssocMaxCpuPerJobLimit AssocMaxCpuMinutesPerJobLimit AssocMaxNodePerJobLimit AssocMaxSubmitJobLimit
AssocMaxWallDurationPerJobLimit AssocGrpUnknown AssocGrpUnknownMinutes AssocGrpUnknownRunMinutes AssocMaxUnknownPerJob
AssocMaxUnknownPerNode AssocMaxUnknownMinutesPerJob AssocMaxCpuPerNode AssocGrpMemMinutes AssocGrpMemRunMinutes
AssocMaxMemPerJob AssocMaxMemPerNode AssocMaxMemMinutesPerJob AssocGrpNodeMinutes AssocGrpNodeRunMinutes
AssocMaxNodeMinutesPerJob AssocGrpEnergy AssocGrpEnergyMinutes AssocGrpEnergyRunMinutes AssocMaxEnergyPerJob
AssocMaxEnergyPerNode AssocMaxEnergyMinutesPerJob AssocGrpGRES AssocGrpGRESMinutes AssocGrpGRESRunMinutes
AssocMaxGRESPerJob AssocMaxGRESPerNode AssocMaxGRESMinutesPerJob AssocGrpLicense AssocGrpLicenseMinutes
AssocGrpLicenseRunMinutes AssocMaxLicensePerJob AssocMaxLicenseMinutesPerJob AssocGrpBB AssocGrpBBMinutes
AssocGrpBBRunMinutes AssocMaxBBPerJob AssocMaxBBPerNode AssocMaxBBMinutesPerJob QOSGrpUnknown QOSGrpUnknownMinutes
QOSGrpUnknownRunMinutes QOSMaxUnknownPerJob QOSMaxUnknownPerNode QOSMaxUnknownPerUser QOSMaxUnknownMinutesPerJob
QOSMinUnknown QOSMaxCpuPerNode QOSGrpMemoryMinutes QOSGrpMemoryRunMinutes QOSMaxMemoryPerJob QOSMaxMemoryPerNode
QOSMaxMemoryPerUser QOSMaxMemoryMinutesPerJob QOSMinMemory QOSGrpNodeMinutes QOSGrpNodeRunMinutes
QOSMaxNodeMinutesPerJob QOSMinNode QOSGrpEnergy QOSGrpEnergyMinutes QOSGrpEnergyRunMinutes QOSMaxEnergyPerJob
QOSMaxEnergyPerNode QOSMaxEnergyPerUser QOSMaxEnergyMinutesPerJob QOSMinEnergy QOSGrpGRES QOSGrpGRESMinutes
QOSGrpGRESRunMinutes QOSMaxGRESPerJob QOSMaxGRESPerNode QOSMaxGRESPerUser QOSMaxGRESMinutesPerJob QOSMinGRES
QOSGrpLicense QOSGrpLicenseMinutes QOSGrpLicenseRunMinutes QOSMaxLicensePerJob QOSMaxLicensePerUser
QOSMaxLicenseMinutesPerJob QOSMinLicense QOSGrpBB QOSGrpBBMinutes QOSGrpBBRunMinutes QOSMaxBBPerJob QOSMaxBBPerNode
QOSMaxBBPerUser QOSMinBB MaxBBPerAccount MaxCpuPerAccount MaxEnergyPerAccount MaxGRESPerAccount MaxNodePerAccount
MaxLicensePerAccount MaxMemoryPerAccount MaxUnknownPerAccount MaxJobsPerAccount MaxSubmitJobsPerAccount
AssocGrpBilling AssocGrpBillingMinutes AssocGrpBillingRunMinutes AssocMaxBillingPerJob AssocMaxBillingPerNode
AssocMaxBillingMinutesPerJob QOSGrpBilling QOSGrpBillingMinutes QOSGrpBillingRunMinutes QOSMaxBillingPerJob
QOSMaxBillingPerNode QOSMaxBillingPerUser QOSMaxBillingMinutesPerJob MaxBillingPerAccount QOSMinBilling
""".split()


@dataclass(frozen=True)
class Limit:
    """A limit family name read by its grammar: ``QOSGrpGRES`` -> scope QOS, kind Grp, resource GRES."""

    code: str
    scope: str  # "QOS" or "association"
    kind: str  # "Grp" (a total), "Max" (a maximum), "Min" (a minimum)
    tres: str  # the family's resource word (GRES, Cpu, Jobs...)
    minutes: str  # "", "Minutes" or "RunMinutes"
    per: str  # "", "PerJob", "PerNode", "PerUser", "PerAccount"

    @property
    def what(self) -> str:
        thing = TRES_NAMES[self.tres] + (" minutes" if self.minutes == "Minutes" else "")
        thing += " running minutes" if self.minutes == "RunMinutes" else ""
        kind = {"Grp": "total", "Max": "maximum", "Min": "minimum"}[self.kind]
        per = {"PerJob": " per job", "PerNode": " per node", "PerUser": " per user", "PerAccount": " per account"}
        return f"{kind} {thing}{per.get(self.per, '')}"

    @property
    def assoc_mgr_key(self) -> str:
        """The field of ``scontrol show assoc_mgr`` that holds this limit (``GrpTRES``, ``MaxTRESPU``...)."""
        if self.tres in ("Jobs", "SubmitJob", "SubmitJobs", "Wall", "WallDuration"):
            base = {"Jobs": "Jobs", "SubmitJob": "SubmitJobs", "SubmitJobs": "SubmitJobs"}.get(self.tres, "Wall")
            if self.kind == "Grp":
                return f"Grp{base}"
            return {"PerUser": f"Max{base}PU", "PerAccount": f"Max{base}PA"}.get(
                self.per, f"Max{base}PJ" if base == "Wall" else f"Max{base}"
            )
        mins = {"Minutes": "Mins", "RunMinutes": "RunMins"}.get(self.minutes, "")
        if self.kind == "Grp":
            return f"GrpTRES{mins}"
        per = {"PerJob": "PJ", "PerNode": "PN", "PerUser": "PU", "PerAccount": "PA"}.get(self.per, "PJ")
        return f"{self.kind}TRES{mins}{per}"


def limit_of(code: str) -> Limit | None:
    """The limit a family name says, or None when ``code`` is not one."""
    match = LIMIT.fullmatch(code)
    if match is None or not (match["scope"] or match["per"] == "PerAccount"):
        return None
    if match["kind"] is None and match["per"] != "PerAccount":
        return None
    scope = "association" if match["scope"] == "Assoc" else "QOS"
    return Limit(code, scope, match["kind"] or "Max", match["tres"], match["mins"] or "", match["per"] or "")


@lru_cache(maxsize=512)
def reason(code: str) -> Reason:
    """The meaning of one reason code (``split`` it first); an unknown code is ``UNKNOWN`` with its name."""
    found = TABLE.get(code)
    if found is not None:
        return found
    limit = limit_of(code)
    if limit is not None:
        if limit.kind == "Min":
            return Reason(
                code,
                C.CONFIGURATION,
                f"it asks for less than its {limit.scope}'s {limit.what}",
                f"{limit.scope} minimum",
                EDIT,
            )
        sentence = f"its {limit.scope}'s {limit.what} limit is reached"
        short = f"{limit.scope} {TRES_NAMES[limit.tres].split(' (')[0]} limit"
        return Reason(code, C.LIMITS, sentence, short)
    return Reason(code, C.UNKNOWN, f"Slurm says {code!r}, a reason this console does not know", code)


def split(text: str) -> tuple[str, dict[str, str]]:
    """A reason as squeue or scontrol writes it -> (code, values), e.g. ``ReqNodeNotAvail,
    UnavailableNodes:g[2-3]`` -> ("ReqNodeNotAvail", {"UnavailableNodes": "g[2-3]"}); ``(Resources)``
    and ``Reason=Resources`` are read too."""
    text = text.strip()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    text = text.removeprefix("Reason=")
    code, _, rest = text.partition(",")
    values: dict[str, str] = {}
    for part in re.split(r",?\s+(?=[A-Za-z]+:)|,(?=[A-Za-z]+:)", rest.strip()) if rest.strip() else ():
        key, sep, value = part.partition(":")
        if sep:
            values[key.strip()] = value.strip()
        elif part.strip():
            values.setdefault("note", part.strip())
    return code.strip() or "None", values


@lru_cache(maxsize=1024)
def short_phrase(text: str) -> str:
    """The Queue's REASON phrase for a raw reason (pure and cached: no remote call), e.g.
    ``QOSGrpGRES`` -> "QOS GPU limit", ``ReqNodeNotAvail, UnavailableNodes:g[2-3]`` -> "nodes unavailable: g[2-3]";
    "" stays "" (a running job)."""
    if not text:
        return ""
    code, values = split(text)
    phrase = reason(code).short
    nodes = values.get("UnavailableNodes")
    return f"{phrase}: {nodes}" if nodes else phrase


# -- the values, from the commands' text ---------------------------------------------------------
_FIELD = re.compile(r"(?:^|\s)([A-Za-z/:_]+)=")


def fields(text: str) -> dict[str, str]:
    """``scontrol -o show job`` (or ``show node``) one record -> {key: value}. A value runs to the next
    ``Key=``; ``Reason=ReqNodeNotAvail, UnavailableNodes:g2`` and ``Command=a b`` keep their spaces."""
    text = text.strip()
    out: dict[str, str] = {}
    marks = list(_FIELD.finditer(text))
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        out.setdefault(mark.group(1), text[mark.end() : end].strip())
    return out


def records(text: str) -> list[dict[str, str]]:
    """``scontrol -o show ...`` of several records, one a line."""
    return [fields(line) for line in text.splitlines() if "=" in line]


_DEP = re.compile(r"(?P<type>after\w*|singleton|expand)(?::(?P<ids>[^(,?]+))?(?:\((?P<status>\w+)\))?")


def dependencies(text: str) -> list[tuple[str, str, str]]:
    """``Dependency=afterok:565(unfulfilled),afterany:7_2(unfulfilled)`` -> [(type, job id, status)]
    (``singleton`` has no id)."""
    if not text or text == "(null)":
        return []
    out = []
    for match in _DEP.finditer(text):
        ids = (match["ids"] or "").split(":")
        for job_id in ids:
            job_id = job_id.split("+")[0]  # afterok:5+10 (a delay in minutes)
            out.append((match["type"], job_id, match["status"] or ""))
    return out


def limit_values(text: str, key: str, tres: str) -> tuple[str, str] | None:
    """(limit, in use) of ``key`` (``GrpTRES``...) for ``tres`` (``gres/`` matches any GRES) in the
    ``scontrol show assoc_mgr`` text of one record, e.g. ``GrpTRES=...,gres/gpu=2(2)`` -> ("2", "2");
    None where it is not set (``N``) or not shown."""
    found = limit_entry(text, key, tres)
    return None if found is None else (found[1], found[2])


def limit_entry(text: str, key: str, tres: str) -> tuple[str, str, str] | None:
    """As ``limit_values``, with the TRES's own name first (``gres/gpu`` for ``gres/``; ``tres`` itself,
    "" for a limit that is not a TRES): ``GrpTRES=...,gres/gpu=2(2)`` -> ("gres/gpu", "2", "2")."""
    match = re.search(rf"\b{re.escape(key)}=(\S*)", text)
    if match is None:
        return None
    raw = match.group(1)
    for item in raw.split(",") if tres else [raw]:
        name, value = tres, item
        if tres:
            name, _, value = item.partition("=")
            if not (name == tres or (tres.endswith("/") and name.startswith(tres))):
                continue
        limit, _, used = value.partition("(")
        if limit and limit != "N":
            return name, limit, used.rstrip(")")
    return None


OWNED = ("User Limits", "Account Limits")  # the per-user and per-account parts of a QOS record


def owned_by(record: str, names: Collection[str]) -> str:
    """A QOS record of ``scontrol show assoc_mgr`` with only the per-user and per-account entries whose
    owner is among ``names`` (a user's name or uid, an account): an owner's line is ``name(uid)``, or
    the uid alone (22.05) or an account's name alone, and the limits under it are its own."""
    out: list[str] = []
    inside, keep = False, True
    for line in record.splitlines():
        text = line.strip()
        if text in OWNED:
            inside, keep = True, True
        elif inside and text and "=" not in text:
            name, _, uid = text.partition("(")
            keep = name in names or uid.rstrip(")") in names
        elif line.startswith("QOS="):
            inside, keep = False, True
        if keep:
            out.append(line)
    return "\n".join(out)


def over_alone(limit: Limit, value: str, asks: str) -> bool:
    """Whether the job alone asks for more than a maximum or total limit allows (it never starts under
    it, whatever ends): both counts as Slurm writes them, whole numbers only; not for a per-node limit
    (the job's count is its total) nor a minutes one."""
    if limit.kind == "Min" or limit.per == "PerNode" or limit.minutes or not (value.isdigit() and asks.isdigit()):
        return False
    return int(asks) > int(value)


def qos_record(text: str, qos: str) -> str:
    """The lines of QOS ``qos`` in ``scontrol show assoc_mgr flags=qos`` ("" when absent)."""
    match = re.search(rf"^QOS={re.escape(qos)}\(\d+\)\n(.*?)(?=^QOS=|\Z)", text, re.M | re.S)
    return match.group(0) if match else ""


def assoc_record(text: str, user: str, account: str) -> str:
    """The lines of the user's association (``UserName=user(uid)`` under ``Account=account``)."""
    for block in re.split(r"(?m)^(?=ClusterName=)", text):
        if re.search(rf"\bAccount={re.escape(account)}\b", block) and re.search(
            rf"\bUserName={re.escape(user)}\(", block
        ):
            return block
    return ""
