"""Why one Slurm job waits, with the values: read-only commands through the backend's transport
(``scontrol -o show job``; the job it depends on; ``squeue --start`` for backfill's estimate; ``sprio``,
or squeue's priorities where the priority plugin has no sprio, for the jobs ahead in the partition;
``scontrol show node`` for unavailable nodes and why; ``scontrol show assoc_mgr`` for a QoS or
association limit, its value and use; ``scontrol show partition`` for a partition's limits). A command
this Slurm lacks, or one that fails, leaves that value out and says so: never "no answer"."""

from __future__ import annotations

from datetime import datetime, timezone

from yanflow_tui.backends.slurm import reasons
from yanflow_tui.backends.slurm.transport import Transport
from yanflow_tui.errors import BackendError
from yanflow_tui.explain import Category, Explanation

RUNNING = ("RUNNING", "COMPLETING", "SUSPENDED", "STOPPED", "CONFIGURING", "SIGNALING", "STAGE_OUT", "RESIZING")
NO_ESTIMATE = "Slurm has no estimate yet (backfill gives one for jobs it can place, after its next cycle)"


def when(value: str) -> datetime | None:
    """A time as scontrol or squeue writes it: epoch seconds (the transport's SLURM_TIME_FORMAT=%s) or
    ISO; None for Unknown, N/A, None or 0."""
    value = (value or "").strip()
    if value.isdigit():
        return datetime.fromtimestamp(int(value), timezone.utc) if int(value) > 0 else None
    try:
        return datetime.fromisoformat(value).astimezone(timezone.utc)
    except ValueError:
        return None


class Explainer:
    """One explanation's reads, in the order the reason needs them."""

    def __init__(self, transport: Transport, cluster: str, job_id: str) -> None:
        self.transport = transport
        self.cluster = cluster
        self.job_id = job_id
        self.notes: list[str] = []  # commands that gave nothing, said in the details

    async def text(self, argv: list[str]) -> str:
        """The command's output; "" (with a note) where it failed or this Slurm lacks it."""
        try:
            result = await self.transport.run(argv)
        except BackendError as exc:
            self.notes.append(f"{argv[0]} {argv[1] if len(argv) > 1 else ''}: {exc}".strip())
            return ""
        if not result.ok:
            self.notes.append(f"{' '.join(argv[:3])}: {result.error()}")
            return ""
        return result.stdout

    async def job(self) -> dict[str, str]:
        text = await self.text(["scontrol", "-o", "show", "job", "--", self.job_id])
        lines = reasons.records(text)
        if not lines:
            said = self.notes[-1] if self.notes else "scontrol knows no such job"
            raise BackendError(f"no job {self.job_id!r} on cluster {self.cluster!r} ({said})")
        for record in lines:  # an array's id lists every task: the one asked for, else the first
            if (
                record.get("JobId") == self.job_id
                or f"{record.get('ArrayJobId')}_{record.get('ArrayTaskId')}" == self.job_id
            ):
                return record
        return lines[0]

    async def explain(self) -> Explanation:
        job = await self.job()
        state = job.get("JobState", "UNKNOWN")
        if state in RUNNING:
            started = when(job.get("StartTime", ""))
            return self.make(
                job,
                state,
                Category.RUNNING,
                f"it is running on {job.get('NodeList') or 'its nodes'} since {_show(started)}",
                short="",
                why="it has started",
                start=started,
            )
        if state != "PENDING":
            exit_code = job.get("ExitCode", "")
            said = f"it ended {state}" + (f" (exit code {exit_code})" if exit_code else "")
            if job.get("Reason") not in ("", "None"):
                said += f": {reasons.reason(reasons.split(job['Reason'])[0]).sentence}"
            return self.make(job, state, Category.FINISHED, said, short="", why="it has ended")
        code, values = reasons.split(job.get("Reason", "None"))
        meaning = reasons.reason(code)
        build = {
            Category.DEPENDENCY: self._dependency,
            Category.HELD: self._held,
            Category.BEGIN_TIME: self._begin,
            Category.NODE_STATE: self._nodes,
            Category.LIMITS: self._limits,
            Category.CONFIGURATION: self._configuration,
        }.get(meaning.category, self._queue)
        return await build(job, meaning, values)

    def make(
        self,
        job: dict[str, str],
        state: str,
        category: Category,
        sentence: str,
        action: str = "",
        short: str | None = None,
        start: datetime | None = None,
        why: str = "",
        details: tuple[tuple[str, str], ...] = (),
        code: str = "",
    ) -> Explanation:
        notes = tuple(("Fallback", note) for note in self.notes)
        return Explanation(
            job_id=self.job_id,
            cluster=self.cluster,
            state=state,
            category=category,
            reason=sentence[:1].upper() + sentence[1:] + ("" if sentence.endswith(".") else "."),
            action=action.replace("JOB", self.job_id),
            expected_start=start,
            expected_start_why=why,
            short=short if short is not None else reasons.short_phrase(job.get("Reason", "")),
            code=code or job.get("Reason", ""),
            details=details + notes,
        )

    async def estimate(self, job: dict[str, str]) -> tuple[datetime | None, str]:
        """Backfill's expected start (``squeue --start``, else scontrol's StartTime), with why."""
        text = await self.text(["squeue", "-h", "--start", "-j", self.job_id, "-o", "%S|%Y"])
        start_text, _, nodes = text.strip().partition("|")
        start = when(start_text) or when(job.get("StartTime", ""))
        if start is None:
            return None, NO_ESTIMATE
        nodes = nodes.strip()
        where = f" on {nodes}" if nodes and nodes not in ("(null)", "N/A") else ""
        return start, f"backfill's estimate{where} (squeue --start); it moves as jobs end early or others come first"

    async def ahead(self, job: dict[str, str]) -> tuple[int, str]:
        """(jobs pending ahead of this one in its partition, how it was counted)."""
        partition = job.get("Partition", "")
        mine = _int(job.get("Priority", ""))
        text = await self.text(["sprio", "-h", "-p", partition, "-o", "%i|%Y"]) if partition else ""
        how = "sprio"
        if not text.strip():  # priority/basic has no sprio: squeue's priorities of the partition's pending jobs
            how = "squeue priorities"
            argv = ["squeue", "-h", "-t", "PD", "-o", "%i|%Q"] + (["-p", partition] if partition else [])
            text = await self.text(argv)
        ahead = 0
        for line in text.splitlines():
            other, _, priority = line.strip().partition("|")
            if other.strip() != self.job_id and _int(priority) > mine:
                ahead += 1
        return ahead, how

    async def _queue(self, job: dict[str, str], meaning: reasons.Reason, values: dict[str, str]) -> Explanation:
        start, why = await self.estimate(job)
        ahead, how = await self.ahead(job)
        partition = job.get("Partition", "?")
        asks = job.get("TRES") or job.get("ReqTRES") or ""
        sentence = meaning.sentence
        if meaning.category is Category.RESOURCES:
            sentence += f" (it asks for {asks.replace(',billing=1', '')} in partition {partition}"
            sentence += f" on {job['ReqNodeList']})" if job.get("ReqNodeList", "(null)") != "(null)" else ")"
        sentence += f"; {ahead} job{'s' if ahead != 1 else ''} of higher priority ahead in partition {partition}"
        short = meaning.short + (f", {ahead} ahead" if ahead else "")
        details = (("Jobs ahead", f"{ahead} ({how})"),)
        return self.make(job, "PENDING", meaning.category, sentence, meaning.action, short, start, why, details)

    async def _dependency(self, job: dict[str, str], meaning: reasons.Reason, values: dict[str, str]) -> Explanation:
        deps = reasons.dependencies(job.get("Dependency", ""))
        said = []
        ends: list[datetime] = []
        for kind, other, status in deps:
            if not other:
                said.append(f"{kind} (the user's other jobs of the same name end first)")
                continue
            found = (await self.text(["squeue", "-h", "-t", "all", "-j", other, "-o", "%T|%e"])).strip().splitlines()
            now, _, end = found[0].partition("|") if found else ("no longer known to slurmctld", "", "")
            said.append(f"job {other} ({kind}{', ' + status if status else ''}), which is {now}")
            if when(end) is not None and now in ("RUNNING", "PENDING"):
                ends.append(when(end))  # type: ignore[arg-type]
        sentence = f"{meaning.sentence}: " + "; ".join(said) if said else meaning.sentence
        start = None
        why = "it starts once the job it depends on ends as required"
        if ends and len(ends) == len([d for d in deps if d[1]]):
            start = max(ends)
            why = "no earlier than the end of the job it depends on (its time limit); then as resources allow"
        if meaning.code == "DependencyNeverSatisfied":
            start, why = None, "never: the dependency cannot be met"
        return self.make(job, "PENDING", Category.DEPENDENCY, sentence, meaning.action, None, start, why)

    async def _held(self, job: dict[str, str], meaning: reasons.Reason, values: dict[str, str]) -> Explanation:
        return self.make(
            job, "PENDING", Category.HELD, meaning.sentence, meaning.action, None, None, "not while it is held"
        )

    async def _begin(self, job: dict[str, str], meaning: reasons.Reason, values: dict[str, str]) -> Explanation:
        begin = when(job.get("EligibleTime", "")) or when(job.get("StartTime", ""))
        sentence = f"{meaning.sentence} ({_show(begin)})"
        why = "its begin time (--begin); later if it must then wait for resources"
        action = "wait for it; to start sooner, cancel it with c and submit it again without --begin"
        return self.make(job, "PENDING", Category.BEGIN_TIME, sentence, action, None, begin, why)

    async def _nodes(self, job: dict[str, str], meaning: reasons.Reason, values: dict[str, str]) -> Explanation:
        names = values.get("UnavailableNodes") or job.get("ReqNodeList", "")
        said = []
        if names and names != "(null)":
            for node in reasons.records(await self.text(["scontrol", "-o", "show", "node", names])):
                why = node.get("Reason", "")
                said.append(f"{node.get('NodeName')} {node.get('State', '?')}" + (f" ({why})" if why else ""))
        if meaning.code in ("PartitionDown", "PartitionInactive"):
            part = reasons.fields(await self.text(["scontrol", "-o", "show", "partition", job.get("Partition", "")]))
            said.append(f"partition {job.get('Partition')} State={part.get('State', '?')}")
        sentence = meaning.sentence + (": " + ", ".join(said) if said else (f": {names}" if names else ""))
        start, why = await self.estimate(job)
        return self.make(job, "PENDING", Category.NODE_STATE, sentence, meaning.action, None, start, why)

    async def _limits(self, job: dict[str, str], meaning: reasons.Reason, values: dict[str, str]) -> Explanation:
        limit = reasons.limit_of(meaning.code)
        sentence, over = meaning.sentence, False
        if limit is not None:
            sentence, over = await self._limit_values(job, limit, sentence)
        if over:  # it asks for more than the limit allows: nothing that ends makes room
            scope = "QOS" if limit is not None and limit.scope == "QOS" else "account or association"
            action = f"ask for less, or move it to another {scope}: " + reasons.EDIT
            why = "never while it asks for more than the limit allows"
            return self.make(job, "PENDING", Category.LIMITS, sentence, action, None, None, why)
        start, why = await self.estimate(job)
        if start is None:
            why = "once the limit has room: when jobs counted against it end"
        return self.make(job, "PENDING", Category.LIMITS, sentence, meaning.action, None, start, why)

    async def _limit_values(self, job: dict[str, str], limit: reasons.Limit, sentence: str) -> tuple[str, bool]:
        """The sentence with the limit's value, its use and the job's ask (from ``scontrol show
        assoc_mgr``: a QOS's per-user and per-account figures are the job's user's and account's), and
        whether the job alone asks for more than the limit allows."""
        qos = job.get("QOS", "")
        key = limit.assoc_mgr_key
        tres = reasons.TRES_KEYS.get(limit.tres, "")
        user, _, uid = job.get("UserId", "").partition("(")
        account = job.get("Account", "")
        if limit.scope == "QOS":
            sentence = sentence.replace("its QOS's", f"QOS {qos}'s")
            text = await self.text(["scontrol", "show", "assoc_mgr", "flags=qos", f"qos={qos}"])
            record = reasons.owned_by(reasons.qos_record(text, qos), {user, uid.rstrip(")"), account} - {""})
        else:
            sentence = sentence.replace("its association's", f"association {user}/{account}'s")
            text = await self.text(
                ["scontrol", "show", "assoc_mgr", "flags=assoc", f"users={user}", f"accounts={account}"]
            )
            record = reasons.assoc_record(text, user, account)
        found = reasons.limit_entry(record, key, tres) if record else None
        if found is None:
            return f"{sentence} (its value is not shown here: scontrol show assoc_mgr has no {key} for it)", False
        name, value, used = found
        asks = _asked(job.get("TRES", ""), name or tres)
        what = f"{key} {name or limit.tres}"
        said = f"{sentence}: {what} is {value}, {used or '?'} in use" + (f", this job asks for {asks}" if asks else "")
        if reasons.over_alone(limit, value, asks):
            head = sentence.replace(" is reached", " is below what this job alone asks for")
            return (
                f"{head}: {what} is {value}, {used or '?'} in use, this job asks for {asks}, so it never starts",
                True,
            )
        return said, False

    async def _configuration(self, job: dict[str, str], meaning: reasons.Reason, values: dict[str, str]) -> Explanation:
        sentence = meaning.sentence
        partition = job.get("Partition", "")
        if meaning.code in ("PartitionTimeLimit", "PartitionNodeLimit") and partition:
            part = reasons.fields(await self.text(["scontrol", "-o", "show", "partition", partition]))
            time = meaning.code == "PartitionTimeLimit"
            asked, allowed = ("TimeLimit", "MaxTime") if time else ("NumNodes", "MaxNodes")
            sentence += f": it asks for {job.get(asked, '?')}, partition {partition} allows {part.get(allowed, '?')}"
        return self.make(
            job, "PENDING", meaning.category, sentence, meaning.action, None, None, "not until the request is changed"
        )


def _asked(tres: str, key: str) -> str:
    for item in tres.split(","):
        name, _, value = item.partition("=")
        if key and (name == key or (key.endswith("/") and name.startswith(key))):
            return value
    return ""


def _int(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        return 0


def _show(value: datetime | None) -> str:
    return value.astimezone().strftime("%Y-%m-%d %H:%M:%S") if value else "an unknown time"


async def explain(transport: Transport, cluster: str, job_id: str) -> Explanation:
    """The explanation of ``job_id``: read-only commands only."""
    return await Explainer(transport, cluster, job_id).explain()
