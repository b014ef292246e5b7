"""The first failure across a failed job's ranks: which rank and node failed first, when, and why.

Pure functions over each rank's evidence (``RankEvidence``: its log lines, its exit code or signal, the
out-of-memory killer, torchrun's error file, when it ended), gathered by ``failureevidence``. Each rank's
own first failure is the first of, in its log: a traceback (named by its exception line), an NCCL
timeout, a CUDA error, an out-of-memory line; else what the scheduler says (OOM killer, torchrun's
error file, a signal, an exit code). NCCL timeouts, a lost peer (gloo's "Connection closed by peer"), and
kills (SIGTERM/SIGKILL, torchrun's
``SignalException``, the launcher's ``ChildFailedError``) are what ranks do when another rank failed: an
NCCL timeout is the first failure only when it carries its own time and nothing failed before it; a kill
or the launcher's report only when nothing else failed at all. Among causes the earliest comes first; a
rank whose time is unknown comes after those whose time is known. No I/O."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone

# A prefix a launcher puts before each line of a rank: torchrun's ``[rank1]:`` / ``[default0]:``,
# srun's ``--label`` ``1: ``.
_PREFIX = re.compile(r"^(?:\[[A-Za-z_]*\d+\]:[ \t]?|\d+:[ \t])")
_TRACEBACK = re.compile(r"Traceback \(most recent call last\):")
_CHAINED = re.compile(r"^(?:During handling of the above exception|The above exception was the direct cause)")
_EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Warning)?\b(?::|$)")
_NCCL = re.compile(
    r"Watchdog caught collective operation timeout|NCCL[^\n]*(?:timed? ?out|timeout)|ProcessGroupNCCL[^\n]*[Tt]imeout"
    r"|NCCL communicator was aborted|Some NCCL operations have failed or timed out|DistBackendError",
)
# a rank that lost a peer in a collective (gloo says so; NCCL's own words are ``_NCCL``'s): a consequence
_PEER = re.compile(r"Connection closed by peer|Connection reset by peer|remote worker crash|peer closed the connection")
_CUDA = re.compile(
    r"CUDA error|CUDA out of memory|OutOfMemoryError|cudaError\w+|illegal memory access|device-side assert"
)
_OOM = re.compile(r"(?i)\bout of memory\b|oom-kill|OOMKilled|\bKilled process\b")
_KILLED = re.compile(r"SignalException|got signal: (?:15|9)\b|KeyboardInterrupt|\bTerminated\b")
# srun's own lines in a job's output: ``srun: error: g2: task 1: Exited with exit code 1``, ``... tasks 0,2: Killed``
SRUN_TASK = re.compile(r"srun: error: (\S+): tasks? ([\d,\-]+): (?:Exited with exit code (\d+)|(Killed|Terminated))")
_ISO = re.compile(r"(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,6}))?\d*(Z|[+-]\d{2}:?\d{2})?")
_GLOG = re.compile(r"\b[IWEF](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{1,6})\b")  # glog: E1206 12:00:05.123456

EXCEPTION, NCCL, CUDA, OOM, KILLED, SIGNAL, EXIT = "exception", "nccl", "cuda", "oom", "killed", "signal", "exit"
PEER = "peer"  # a collective that lost a peer (gloo's "Connection closed by peer"): what the others' crash does
LAUNCHER = "launcher"  # torchrun's own report that a worker failed (ChildFailedError), and the rank of its lines
CONSEQUENCES = frozenset({NCCL, PEER, KILLED, LAUNCHER})  # what a rank (or its launcher) does when another failed
KILL_SIGNALS = frozenset({"TERM", "KILL", "SIGTERM", "SIGKILL", "15", "9"})
_ORDER = {KILLED: 1, NCCL: 1, PEER: 1, LAUNCHER: 2}


@dataclass(frozen=True)
class RankEvidence:
    """What one rank (a task, a pod, a process) left behind. ``source``: its lines' ``LogLine.source``
    in the log pane ("" for the job's main log)."""

    rank: str
    node: str = ""
    source: str = ""
    lines: tuple[str, ...] = ()
    exit_code: int | None = None
    signal: str = ""  # "KILL", "TERM"... where the scheduler says the rank was signalled
    oom: bool = False  # the out-of-memory killer (Slurm's OUT_OF_MEMORY, Kubernetes' OOMKilled)
    reason: str = ""  # the scheduler's word for how it ended (OOMKilled, Error, OUT_OF_MEMORY)
    ended: datetime | None = None  # when the rank ended (a pod's finishedAt, a task's end, its file's mtime)
    error_file: str = ""  # torchrun's error file (TORCHELASTIC_ERROR_FILE), as JSON text
    # Where each of ``lines`` is in its source's log (``split_ranks``: a rank's lines out of a merged log);
    # empty: line i is line i.
    at: tuple[int, ...] = ()


@dataclass(frozen=True)
class RankFailure:
    """One rank's first failure: ``line`` indexes the rank's lines (None: not from its log)."""

    rank: str
    node: str
    source: str
    kind: str
    why: str  # the exception line, or the scheduler's words
    time: datetime | None
    time_from: str  # "the line", "the log before it", "torchrun's error file", "the rank's end"
    line: int | None = None
    exit_code: int | None = None

    @property
    def consequence_kind(self) -> bool:
        return self.kind in CONSEQUENCES

    def to_dict(self) -> dict:
        return {
            "rank": self.rank,
            "node": self.node,
            "log_source": self.source,
            "kind": self.kind,
            "why": self.why,
            "time": self.time.isoformat() if self.time else None,
            "time_from": self.time_from,
            "line": self.line,
            "exit_code": self.exit_code,
        }


@dataclass(frozen=True)
class FirstFailure:
    """The job's first failure, and every other rank's failure after it (its consequences)."""

    first: RankFailure
    consequences: tuple[RankFailure, ...] = ()
    ranks: int = 0  # ranks looked at
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict:
        return {
            "first": self.first.to_dict(),
            "consequences": [c.to_dict() for c in self.consequences],
            "ranks": self.ranks,
            "notes": list(self.notes),
        }

    def lines(self) -> list[str]:
        """The answer in a few plain lines (the detail's block, the CLI)."""
        f = self.first
        where = (f"rank {f.rank}" if f.rank.isdigit() else f"the {f.rank}") + (f" on {f.node}" if f.node else "")
        when = f" at {_when(f.time)} (from {f.time_from})" if f.time else " (time unknown)"
        out = [f"First failure: {where}{when}: {_KIND_WORDS[f.kind]}", f"  {f.why}"]
        if f.line is not None:
            out.append(f"  at line {f.line + 1} of {_log_name(f)}")
        if self.consequences:
            kinds: dict[str, list[str]] = {}
            for c in self.consequences:
                kinds.setdefault(_KIND_WORDS[c.kind], []).append(c.rank)
            parts = [_consequence(kind, r) for kind, r in kinds.items()]
            out.append(f"Then {len(self.consequences)} more failed as consequences ({'; '.join(parts)})")
        return out


def _log_name(f: RankFailure) -> str:
    """The log the failure's line is in, as the Logs view names it. One log can hold several ranks (a
    node's file holds every process torchrun starts there): "rank 1's log" beside "rank 2" would read as
    another rank's, so such a log is named by its node."""
    if not f.source:
        return "the main log"
    if f.source == f"rank {f.rank}" or not f.node:
        return f"{f.source}'s log"
    return f"{f.node}'s log ({f.source})"


def _consequence(kind: str, ranks: list[str]) -> str:
    """``kind: ranks 0, 1`` with the numbered ranks; the launcher (torchrun's agent, srun) by its name."""
    numbered = [r for r in ranks if r.isdigit()]
    named = [r for r in ranks if not r.isdigit()]
    who = [f"rank{'s' if len(numbered) > 1 else ''} {_ranks(numbered)}"] if numbered else []
    if named == [LAUNCHER] and kind == _KIND_WORDS[LAUNCHER] and not numbered:
        return kind
    who += [f"the {name}" for name in named]
    return f"{kind}: {', '.join(who)}"


_KIND_WORDS = {
    EXCEPTION: "an exception",
    NCCL: "an NCCL timeout",
    PEER: "a lost peer",
    CUDA: "a CUDA error",
    OOM: "out of memory",
    KILLED: "killed",
    SIGNAL: "a signal",
    EXIT: "a non-zero exit",
    LAUNCHER: "the launcher's report",
}


def _when(time: datetime) -> str:
    return time.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S") + " UTC"


def _ranks(ranks: list[str]) -> str:
    return ", ".join(ranks[:8]) + (f" and {len(ranks) - 8} more" if len(ranks) > 8 else "")


def strip_prefix(text: str) -> str:
    return _PREFIX.sub("", text, count=1)


def timestamp(text: str, year: int) -> datetime | None:
    """The time a log line carries (ISO 8601, or glog's ``E1206 12:00:05.123``, whose year is ``year``);
    without a zone it is taken as UTC."""
    m = _ISO.search(text)
    if m:
        y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
        micro = int((m.group(7) or "0").ljust(6, "0"))
        zone = m.group(8)
        tz = timezone.utc
        if zone and zone != "Z":
            sign = -1 if zone[0] == "-" else 1
            digits = zone[1:].replace(":", "")
            tz = timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))
        try:
            return datetime(y, mo, d, h, mi, s, micro, tzinfo=tz)
        except ValueError:
            return None
    m = _GLOG.search(text)
    if m:
        mo, d, h, mi, s = (int(g) for g in m.groups()[:5])
        try:
            return datetime(year, mo, d, h, mi, s, int(m.group(6).ljust(6, "0")), tzinfo=timezone.utc)
        except ValueError:
            return None
    return None


def error_file_failure(text: str) -> tuple[str, datetime | None] | None:
    """torchrun's error file (``{"message": {"message": "...", "extraInfo": {"timestamp": "..."}}}``,
    or a plain ``message`` string): its exception line and time."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    message = data.get("message") if isinstance(data, dict) else None
    stamp = None
    if isinstance(message, dict):
        extra = message.get("extraInfo") or {}
        stamp = extra.get("timestamp") if isinstance(extra, dict) else None
        message = message.get("message")
    if not isinstance(message, str) or not message.strip():
        return None
    lines = [line for line in message.splitlines() if line.strip()]
    exception = next((line for line in reversed(lines) if _EXCEPTION.match(line)), lines[-1])
    try:
        time = datetime.fromtimestamp(int(stamp), timezone.utc) if stamp is not None else None
    except (TypeError, ValueError, OverflowError):
        time = None
    return exception.strip(), time


def _exception_line(lines: Sequence[str], start: int) -> int:
    """The index of the exception line that ends the traceback starting at ``start``."""
    for i in range(start + 1, min(len(lines), start + 2000)):
        text = strip_prefix(lines[i])
        if not text.strip() or text[:1] in (" ", "\t") or _TRACEBACK.search(text) or _CHAINED.match(text):
            continue
        if text.startswith("^") or text.startswith("~"):
            continue
        return i
    return start


def _kind_of(text: str) -> str:
    if "ChildFailedError" in text:
        return LAUNCHER
    if _KILLED.search(text):
        return KILLED
    if _NCCL.search(text):
        return NCCL
    if _PEER.search(text):
        return PEER
    if _CUDA.search(text):
        return CUDA
    if _OOM.search(text):
        return OOM
    return EXCEPTION


def _log_event(lines: Sequence[str]) -> tuple[int, str] | None:
    """The rank's first failure line in its log, and its kind."""
    for i, raw in enumerate(lines):
        text = strip_prefix(raw)
        if _TRACEBACK.search(text):
            at = _exception_line(lines, i)
            return at, _kind_of(strip_prefix(lines[at]))
        if _NCCL.search(text):
            return i, NCCL
        if _CUDA.search(text):
            return i, CUDA
        if _OOM.search(text) and "srun: error" not in text:
            return i, OOM
    return None


def _time_at(lines: Sequence[str], index: int, year: int) -> tuple[datetime | None, str]:
    own = timestamp(lines[index], year)
    if own is not None:
        return own, "the line"
    for i in range(index - 1, max(-1, index - 5000), -1):
        found = timestamp(lines[i], year)
        if found is not None:
            return found, "the log before it"
    return None, ""


def rank_failure(ev: RankEvidence, year: int) -> RankFailure | None:
    """``ev``'s own first failure, or None where it shows none (it ended well, or said nothing)."""
    found = _log_event(ev.lines)
    from_file = error_file_failure(ev.error_file) if ev.error_file else None
    if ev.rank == LAUNCHER:  # the launcher ends as its workers did: its exit and end say nothing more
        ev = replace(ev, exit_code=None, signal="", oom=False, reason="", error_file="")
    killed_by_signal = ev.signal.upper() in KILL_SIGNALS or ev.exit_code in (137, 143, -9, -15)
    if found is not None:
        index, kind = found
        time, time_from = _time_at(ev.lines, index, year)
        if time is None and from_file is not None and from_file[1] is not None:
            time, time_from = from_file[1], "torchrun's error file"
        if time is None and ev.ended is not None:
            time, time_from = ev.ended, "the rank's end"
        if kind in (EXCEPTION, CUDA) and ev.oom:
            kind = OOM
        why = strip_prefix(ev.lines[index]).strip()
        line = ev.at[index] if ev.at else index
        return RankFailure(ev.rank, ev.node, ev.source, kind, why, time, time_from, line, ev.exit_code)
    ended, end_from = ev.ended, "the rank's end" if ev.ended else ""
    if ev.oom or ev.reason.upper() in ("OOMKILLED", "OUT_OF_MEMORY"):
        why = f"killed by the out-of-memory killer ({ev.reason or 'OOM'})"
        return RankFailure(ev.rank, ev.node, ev.source, OOM, why, ended, end_from, None, ev.exit_code)
    if from_file is not None:
        time, time_from = from_file[1], "torchrun's error file"
        if time is None:
            time, time_from = ended, end_from
        return RankFailure(ev.rank, ev.node, ev.source, EXCEPTION, from_file[0], time, time_from, None, ev.exit_code)
    if killed_by_signal:
        why = f"killed by signal {ev.signal}" if ev.signal else f"killed (exit code {ev.exit_code})"
        return RankFailure(ev.rank, ev.node, ev.source, KILLED, why, ended, end_from, None, ev.exit_code)
    if ev.signal:
        why = f"ended by signal {ev.signal}"
        return RankFailure(ev.rank, ev.node, ev.source, SIGNAL, why, ended, end_from, None, ev.exit_code)
    if ev.exit_code:
        why = f"exited with code {ev.exit_code}" + (f" ({ev.reason})" if ev.reason else "")
        return RankFailure(ev.rank, ev.node, ev.source, EXIT, why, ended, end_from, None, ev.exit_code)
    return None


def _sort_key(f: RankFailure) -> tuple:
    """Causes by time; then what follows another's failure. An NCCL timeout that carries its own time is
    a cause when it comes first (a rank hung with no word of its own); a kill or the launcher's report never
    is while something else failed."""
    far = datetime.max.replace(tzinfo=timezone.utc)
    rank = int(f.rank) if f.rank.isdigit() else 1 << 30
    late = f.kind in CONSEQUENCES and not (f.kind == NCCL and f.time_from == "the line")
    return (late, f.time is None, f.time or far, _ORDER.get(f.kind, 0), rank, f.rank)


_RANK_PREFIX = re.compile(r"^\[(?:rank|default)(\d+)\]:")


def split_ranks(ev: RankEvidence) -> list[RankEvidence]:
    """A log that merges several ranks' lines under torchrun's prefixes (``[rank1]:``, ``[default1]:``)
    as one evidence per rank (its lines, where each is in the log), plus the unprefixed rest (the
    launcher's own lines) as ``ev`` itself; a log with fewer than two such ranks is ``ev`` alone."""
    by_rank: dict[str, tuple[list[str], list[int]]] = {}
    rest: tuple[list[str], list[int]] = ([], [])
    for i, line in enumerate(ev.lines):
        m = _RANK_PREFIX.match(line)
        lines, at = by_rank.setdefault(m.group(1), ([], [])) if m else rest
        lines.append(line)
        at.append(ev.at[i] if ev.at else i)
    if len(by_rank) < 2:
        return [ev]
    ranks = [
        replace(ev, rank=rank, lines=tuple(lines), at=tuple(at), exit_code=None, signal="", oom=False, error_file="")
        for rank, (lines, at) in sorted(by_rank.items(), key=lambda item: int(item[0]))
    ]
    return [*ranks, replace(ev, rank=LAUNCHER, lines=tuple(rest[0]), at=tuple(rest[1]))]


def srun_tasks(lines: Iterable[str]) -> dict[str, tuple[str, int | None, str]]:
    """What srun said of its tasks in a job's output: task id -> (node, exit code, "KILL"/"TERM"/"")."""
    out: dict[str, tuple[str, int | None, str]] = {}
    for line in lines:
        m = SRUN_TASK.search(line)
        if not m:
            continue
        node, tasks, code, signalled = m.groups()
        signal = {"Killed": "KILL", "Terminated": "TERM"}.get(signalled or "", "")
        for part in tasks.split(","):
            low, _, high = part.partition("-")
            if low.isdigit() and (not high or high.isdigit()):
                for task in range(int(low), int(high or low) + 1):
                    out[str(task)] = (node, int(code) if code else None, signal)
    return out


def with_srun_tasks(evidence: Sequence[RankEvidence], main_lines: Sequence[str]) -> list[RankEvidence]:
    """``evidence`` with what srun's lines in the main log say of each task (its node, exit code, signal)
    filled in where the rank's own evidence says nothing."""
    tasks = srun_tasks(main_lines)
    out = []
    for ev in evidence:
        said = tasks.get(ev.rank)
        if said is not None:
            node, code, signal = said
            ev = replace(
                ev,
                node=ev.node or node,
                exit_code=ev.exit_code if ev.exit_code is not None else code,
                signal=ev.signal or signal,
            )
        out.append(ev)
    return out


def first_failure(evidence: Sequence[RankEvidence], year: int | None = None) -> FirstFailure | None:
    """The first failure across ``evidence``'s ranks (None: no rank shows one). ``year``: for log
    timestamps without one (glog's), the year the job ended; default: this year."""
    if year is None:
        ends = [ev.ended for ev in evidence if ev.ended is not None]
        year = (max(ends) if ends else datetime.now(timezone.utc)).year
    failures = [f for ev in evidence if (f := rank_failure(ev, year)) is not None]
    if not failures:
        return None
    failures.sort(key=_sort_key)
    notes = []
    if failures[0].time is None:
        notes.append("no rank's failure has a time: the first is the lowest rank that failed")
    return FirstFailure(failures[0], tuple(failures[1:]), len(evidence), tuple(notes))
