"""Slurm output parsing: ``squeue``/``sinfo``/``sacct`` JSON and delimited ``-o``/``-O`` text into
the domain model, job-state normalisation, GRES and hostlist expansion, and ``%``-pattern expansion
of StdOut/StdErr paths. Pure functions, no I/O: what they keep between calls (node lists, GPU tuples,
details, a queue's lines and Jobs) lives in the ``ParseCaches`` their caller passes (``parsecache.py``,
one per backend, so per cluster); this module holds constants only."""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from itertools import chain, islice
from sys import intern
from typing import TYPE_CHECKING, Any, TypeVar

from yanflow_tui.backends.slurm.comment import facts_of
from yanflow_tui.backends.slurm.exitstatus import exit_status
from yanflow_tui.errors import BackendError
from yanflow_tui.model import TERMINAL_STATES, Gpu, GpuState, Job, JobKind, JobState, Node
from yanflow_tui.speed import collector_off, maker, quick_init

if TYPE_CHECKING:
    from yanflow_tui.backends.slurm.parsecache import ParseCaches

# A delimiter that cannot occur in names given on the command line (ASCII unit separator).
SEP = "\x1f"

# squeue -o fields; the job name (the only free text a user chooses) is LAST, so a name holding the
# delimiter still splits right. A newline in a name breaks the row count: the caller falls back to JSON.
SQUEUE_FIELDS = (
    ("job_id", "%A"),
    ("array_job_id", "%F"),
    ("array_task", "%K"),
    ("state", "%T"),
    ("reason", "%r"),
    ("user", "%u"),
    ("node_count", "%D"),
    ("nodes", "%N"),
    ("tres_per_node", "%b"),
    ("submit", "%V"),
    ("start", "%S"),
    ("end", "%e"),
    ("partition", "%P"),
    ("account", "%a"),
    ("qos", "%q"),
    ("time_limit", "%l"),
    ("cpus", "%C"),
    ("display_id", "%i"),
    ("name", "%j"),
)
SQUEUE_FORMAT = SEP.join(code for _, code in SQUEUE_FIELDS)

SINFO_FIELDS = ("NodeList", "StateLong", "Gres", "GresUsed", "Partition", "CPUsState", "Memory", "AllocMem", "Reason")
SINFO_FORMAT = ",".join(f"{f}:0{SEP}" if i < len(SINFO_FIELDS) - 1 else f"{f}:0" for i, f in enumerate(SINFO_FIELDS))

_STATES: dict[str, JobState] = {
    "PENDING": JobState.PENDING,
    "PD": JobState.PENDING,
    "REQUEUED": JobState.PENDING,
    "RQ": JobState.PENDING,
    "REQUEUE_HOLD": JobState.PENDING,
    "RH": JobState.PENDING,
    "REQUEUE_FED": JobState.PENDING,
    "RF": JobState.PENDING,
    "RESV_DEL_HOLD": JobState.PENDING,
    "RD": JobState.PENDING,
    "CONFIGURING": JobState.PENDING,
    "CF": JobState.PENDING,
    "RUNNING": JobState.RUNNING,
    "R": JobState.RUNNING,
    "SUSPENDED": JobState.RUNNING,
    "S": JobState.RUNNING,
    "STOPPED": JobState.RUNNING,
    "ST": JobState.RUNNING,
    "SIGNALING": JobState.RUNNING,
    "SI": JobState.RUNNING,
    "RESIZING": JobState.RUNNING,
    "RS": JobState.RUNNING,
    "STAGE_OUT": JobState.COMPLETING,
    "SO": JobState.COMPLETING,
    "COMPLETING": JobState.COMPLETING,
    "CG": JobState.COMPLETING,
    "COMPLETED": JobState.COMPLETED,
    "CD": JobState.COMPLETED,
    "FAILED": JobState.FAILED,
    "F": JobState.FAILED,
    "TIMEOUT": JobState.FAILED,
    "TO": JobState.FAILED,
    "NODE_FAIL": JobState.FAILED,
    "NF": JobState.FAILED,
    "OUT_OF_MEMORY": JobState.FAILED,
    "OOM": JobState.FAILED,
    "BOOT_FAIL": JobState.FAILED,
    "BF": JobState.FAILED,
    "DEADLINE": JobState.FAILED,
    "DL": JobState.FAILED,
    "PREEMPTED": JobState.CANCELLED,
    "PR": JobState.CANCELLED,
    "CANCELLED": JobState.CANCELLED,
    "CA": JobState.CANCELLED,
    "REVOKED": JobState.CANCELLED,
    "RV": JobState.CANCELLED,
    "SPECIAL_EXIT": JobState.FAILED,
    "SE": JobState.FAILED,
}


def normalise_state(raw: Any) -> JobState:
    """A Slurm state (``PD``, ``RUNNING``, ``CANCELLED by 0``, ``["RUNNING"]``...) as a ``JobState``."""
    if type(raw) is str:
        state = _STATES.get(raw)  # the usual word as it stands: one look-up
        if state is not None:
            return state
    return _normalise_state(raw)


def _normalise_state(raw: Any) -> JobState:
    if isinstance(raw, list):
        raw = raw[0] if raw else ""
    word = str(raw or "").strip().upper().split(" ")[0].split("+")[0].split(",")[0]
    return _STATES.get(word, JobState.UNKNOWN)


def _state_text(raw: Any) -> str:
    if isinstance(raw, list):
        return ",".join(str(x) for x in raw)
    return str(raw or "")


# -- hostlists and GRES ---------------------------------------------------------------------------


_PLAIN_HOSTS = frozenset("[](),")
_HOSTLIST_CACHE_MAX = 65_536  # node lists kept (ParseCaches.hostlists)
_HOST_BRACKET = re.compile(r"([^\[\]]*)\[([^\]]*)\](.*)")


def expand_hostlist(text: str, caches: ParseCaches | None = None) -> tuple[str, ...]:
    """``gpu[01-02,04],cpu01`` -> ``("gpu01", "gpu02", "gpu04", "cpu01")``. Names are interned and,
    with ``caches``, results kept (a queue repeats the same node lists poll after poll), so this is a
    lookup for a list already seen; without, worked out anew and nothing kept."""
    if not text:
        return ()
    if caches is not None:
        cached = caches.hostlists.get(text)
        if cached is not None:
            return cached
    out: tuple[str, ...] | None
    if "[" not in text and "(" not in text:
        if "," not in text:  # one name (the usual one-node job)
            name = text.strip()
            out = (intern(name),) if name and name not in ("(null)", "N/A") else ()
        else:
            out = tuple(intern(p) for p in (s.strip() for s in text.split(",")) if p and p not in ("(null)", "N/A"))
    else:
        out = _quick_hostlist(text, caches)
        if out is None:
            out = _numbered_hostlist(text, caches)
        if out is None:
            out = tuple(intern(name) for name in _expand_hostlist(text))
    if caches is not None:
        kept = caches.hostlists
        if len(kept) >= _HOSTLIST_CACHE_MAX:
            kept.clear()
        kept[text] = out
    return out


# The usual compressed form, ``gpu[0012-0015,0040],cpu0003``: items of a plain prefix, at most one
# bracket of decimal numbers and ranges, a plain suffix. Other forms go through _expand_hostlist.
_RANGE = r"[0-9]+(?:-[0-9]+)?"
_NUMBERED_ITEM = rf"([^\s,\[\]()]+)(?:\[({_RANGE}(?:,{_RANGE})*)\]([^\s,\[\]()]*))?"
_NUMBERED_LIST = re.compile(rf"{_NUMBERED_ITEM}(?:,{_NUMBERED_ITEM})*")
_NUMBERED_ITEMS = re.compile(_NUMBERED_ITEM)
# ParseCaches.numbered: (prefix, width, suffix) -> names by number, interned: a range is a slice of it
_NUMBERED_TOP = 1 << 16  # numbers above this are written out (a table that long would be waste)


def _numbered_names(caches: ParseCaches | None, prefix: str, width: int, suffix: str, last: int) -> list[str] | None:
    """The names of ``prefix``, ``width`` and ``suffix`` up to ``last`` at least, from ``caches``'
    tables (None past _NUMBERED_TOP, or with no caches: the caller writes them out)."""
    if last >= _NUMBERED_TOP or caches is None:
        return None
    numbered = caches.numbered
    names = numbered.get((prefix, width, suffix))
    if names is None:
        names = numbered[prefix, width, suffix] = []
    if len(names) <= last:
        names.extend(intern(f"{prefix}{n:0{width}d}{suffix}") for n in range(len(names), last + 1))
    return names


# ParseCaches.by_digits: prefix -> {number as written: name} (names interned), for _quick_hostlist's
# scattered lists
_BY_DIGITS_MAX = 4096


def _quick_hostlist(text: str, caches: ParseCaches | None = None) -> tuple[str, ...] | None:
    """``_numbered_hostlist`` without its regex, for the commonest forms: plain names and
    ``prefix[ranges]`` items with no suffix, ranges of ASCII digits. None for anything else (a
    suffix, whitespace, parentheses, an empty item...), which then goes the regex's way."""
    if not text.isprintable() or " " in text or "(" in text or ")" in text:
        return None
    out: list[str] = []
    parts = text.split("]")
    tail = parts.pop()
    first = True
    for part in parts:
        head, bracket, ranges = part.partition("[")
        if not bracket or not ranges or not ranges.isascii():
            return None
        names = head.split(",")
        if first:
            first = False
        elif names[0] or len(names) < 2:  # a suffix after the last bracket, or brackets back to back
            return None
        else:
            del names[0]
        prefix = names.pop()
        if not prefix:
            return None
        for name in names:
            if not name:
                return None
            if name != "N/A":
                out.append(intern(name))
        items = ranges.split(",")
        if "-" not in ranges:  # numbers alone (a scattered list): a lookup each, by the number as written
            if caches is None:
                if not all(map(str.isdigit, items)):
                    return None
                out += [intern(prefix + item) for item in items]
                continue
            by_digits = caches.by_digits
            table = by_digits.get(prefix)
            if table is None:
                if len(by_digits) >= _BY_DIGITS_MAX:
                    by_digits.clear()
                table = by_digits[prefix] = {}
            try:
                named = list(map(table.__getitem__, items))
            except KeyError:  # a number not met yet (the table holds valid ones only)
                if not all(map(str.isdigit, items)):
                    return None
                if len(table) >= _NUMBERED_TOP:
                    table.clear()
                for item in items:
                    if item not in table:
                        table[item] = intern(prefix + item)
                named = list(map(table.__getitem__, items))
            out += named
            continue
        for item in items:
            lo, dash, hi = item.partition("-")
            if not dash:
                if not lo.isdigit():
                    return None
                out.append(intern(prefix + lo))
                continue
            if not lo.isdigit() or not hi.isdigit():
                return None
            first_n, last_n = int(lo), int(hi)
            table_n = _numbered_names(caches, prefix, len(lo), "", last_n)
            if table_n is None:
                width = len(lo)
                out.extend(intern(f"{prefix}{n:0{width}d}") for n in range(first_n, last_n + 1))
            else:
                out.extend(table_n[first_n : last_n + 1])
    if tail:
        names = tail.split(",")
        if parts:
            if names[0]:
                return None
            del names[0]
        for name in names:
            if not name or "[" in name:
                return None
            if name != "N/A":
                out.append(intern(name))
    return tuple(out)


def _numbered_hostlist(text: str, caches: ParseCaches | None = None) -> tuple[str, ...] | None:
    """``expand_hostlist`` for the usual form (None for another): ranges sliced from the names of
    their prefix and width, made once, instead of a string formatted and interned per name."""
    if _NUMBERED_LIST.fullmatch(text) is None:
        return None
    out: list[str] = []
    for prefix, ranges, suffix in _NUMBERED_ITEMS.findall(text):
        if not ranges:
            if prefix != "N/A":
                out.append(intern(prefix))
            continue
        items = ranges.split(",")
        if len(items) > 1 and "-" not in ranges and len(set(map(len, items))) == 1:
            # numbers alone, all of one width (the usual scattered list): one lookup each
            numbers = list(map(int, items))
            names = _numbered_names(caches, prefix, len(items[0]), suffix, max(numbers))
            if names is not None:
                out.extend(map(names.__getitem__, numbers))
                continue
        for item in items:
            lo, _, hi = item.partition("-")
            first, last = int(lo), int(hi or lo)
            names = _numbered_names(caches, prefix, len(lo), suffix, last)
            if names is None:
                width = len(lo)
                out.extend(intern(f"{prefix}{n:0{width}d}{suffix}") for n in range(first, last + 1))
                continue
            if hi:
                out.extend(names[first : last + 1])
            else:
                out.append(names[first])
    return tuple(out)


def _expand_hostlist(text: str) -> list[str]:
    out: list[str] = []
    for part in _split_top(text):
        match = _HOST_BRACKET.fullmatch(part)
        if not match:
            if part and part not in ("(null)", "N/A"):
                out.append(part)
            continue
        prefix, ranges, suffix = match.groups()
        # a name made from this group is final unless the rest holds more brackets (or odd characters)
        final = _PLAIN_HOSTS.isdisjoint(prefix) and _PLAIN_HOSTS.isdisjoint(suffix)
        for item in ranges.split(","):
            lo, _, hi = item.partition("-")
            if hi and lo.isdigit() and hi.isdigit():
                width = len(lo)
                if final:
                    out.extend(f"{prefix}{n:0{width}d}{suffix}" for n in range(int(lo), int(hi) + 1))
                else:
                    for n in range(int(lo), int(hi) + 1):
                        out.extend(_expand_hostlist(f"{prefix}{n:0{width}d}{suffix}"))
            elif final and item.isdigit():
                out.append(f"{prefix}{item}{suffix}")
            else:
                out.extend(_expand_hostlist(f"{prefix}{item}{suffix}"))
    return out


def _split_top(text: str) -> list[str]:
    if "[" not in text and "(" not in text:
        return [p.strip() for p in text.split(",") if p.strip()]
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def expand_ranges(text: str) -> list[int]:
    """``0-3,6`` -> ``[0, 1, 2, 3, 6]``; ``N/A`` or junk -> ``[]``."""
    out: list[int] = []
    for item in (text or "").split(","):
        lo, _, hi = item.strip().partition("-")
        if lo.isdigit() and (not hi or hi.isdigit()):
            out.extend(range(int(lo), int(hi or lo) + 1))
    return out


@dataclass(frozen=True)
class Gres:
    """GPUs in one GRES string: total count, type, and the indices named by ``(IDX:...)``."""

    count: int = 0
    gpu_type: str | None = None
    indices: tuple[int, ...] = ()


_GRES_ITEM = re.compile(r"^(?:gres[:/])?gpu(?::([^:(]+))?(?::(\d+))?(?:\((?:S:[^)]*?)?(?:IDX:([^)]*))?[^)]*\))?$")


def parse_gres(text: str | None) -> Gres:
    """``gpu:a100:8``, ``gpu:a100:3(IDX:0-2)``, ``gres:gpu:4``, ``gpu:8(S:0-1)``... summed over items."""
    count, gpu_type, indices = 0, None, []
    for item in _split_top(text or ""):
        match = _GRES_ITEM.match(item.strip())
        if not match:
            continue
        kind, number, idx = match.groups()
        if kind is not None and kind.isdigit() and number is None:
            kind, number = None, kind
        count += int(number) if number is not None else 1
        gpu_type = gpu_type or kind
        if idx:
            indices.extend(expand_ranges(idx))
    return Gres(count, gpu_type, tuple(indices))


# -- sinfo ----------------------------------------------------------------------------------------

# Flags that keep a node's free resources from new jobs, by the state word the grid shows
# (22.05's JSON says "idle" with the flag ["PLANNED"] where sinfo's text says "planned").
_HOLDING_FLAGS = (
    ("MAINT", "maint"),
    ("RESERVED", "reserved"),
    ("PLANNED", "planned"),
    ("POWERED_DOWN", "powered_down"),
    ("POWERING_DOWN", "powered_down"),
    ("POWER_DOWN", "powered_down"),
    ("POWERING_UP", "powering_up"),
    ("REBOOT_REQUESTED", "reboot"),
    ("REBOOT_ISSUED", "reboot"),
)
_STATE_WORDS = (
    "idle",
    "mixed",
    "allocated",
    "down",
    "completing",
    "future",
    "fail",
    "reserved",
    "planned",
    "maint",
    "inval",
    "powered_down",
    "power_down",
    "powering_up",
    "reboot",
    "blocked",
    "unknown",
)
# States whose free GPUs no new job can take now, and why, for the grid's status line.
HELD_STATES = {
    "drain": "drained",
    "draining": "draining: takes no new jobs",
    "down": "down",
    "fail": "failed",
    "failing": "failing",
    "future": "not in service yet",
    "inval": "invalid node configuration",
    "maint": "in a maintenance reservation",
    "reserved": "in a reservation",
    "planned": "held by the scheduler for a pending job",
    "powered_down": "powered down",
    "power_down": "powered down",
    "powering_up": "powering up",
    "reboot": "rebooting",
    "blocked": "blocked",
    "unknown": "state unknown",
}


def node_state_text(state: str, flags: Iterable[str] = ()) -> str:
    """Slurm's base state plus flags as one word: idle/mixed/allocated/completing, or a state that
    holds the node's free resources (see ``HELD_STATES``)."""
    words = (state or "").lower().split("+")  # sinfo's text can say "idle+planned"
    base = words[0].strip().rstrip("*~#!%$@^-") or "unknown"
    flags = {str(f).upper() for f in flags} | {w.strip().upper() for w in words[1:]}
    if "DRAIN" in flags:
        return "drain" if base in ("idle", "down") else "draining"
    if base.startswith("drain"):
        return "drain" if base in ("drain", "drained") else "draining"
    if base in ("alloc",):
        base = "allocated"
    if base in ("mix",):
        base = "mixed"
    if base in ("down", "fail", "failing") or "NOT_RESPONDING" in flags and base != "completing":
        return "down" if base != "fail" and base != "failing" else base
    for flag, word in _HOLDING_FLAGS:
        if flag in flags:
            return word
    for word in _STATE_WORDS:
        if base.startswith(word):
            return "powered_down" if word == "power_down" else word
    return base or "unknown"


# A node's GPUs by what they are made from (count, type, indices in use, held and why): nodes alike
# share one tuple of (frozen) Gpus, not eight Gpus each (5,000 nodes: 40,000 Gpus, 4 MB, per sinfo):
# ParseCaches.gpus.
_GPUS_MAX = 4096


def _node(
    caches: ParseCaches,
    cluster: str,
    name: str,
    state: str,
    partitions: tuple[str, ...],
    gres: Gres,
    used: Gres,
    cpus: int,
    cpus_alloc: int,
    mem: int,
    mem_alloc: int,
    reason: str,
) -> Node:
    unusable = state in HELD_STATES
    used_idx = frozenset(used.indices)
    if not used_idx and used.count:  # counts without indices: mark the first N
        used_idx = frozenset(range(used.count))
    held = (reason or HELD_STATES[state]) if unusable else ""
    key = (gres.count, gres.gpu_type, used_idx, unusable, held)
    kept = caches.gpus
    gpus = kept.get(key)
    if gpus is None:
        gpus = tuple(
            Gpu(
                i,
                GpuState.ALLOCATED if i in used_idx else (GpuState.UNAVAILABLE if unusable else GpuState.FREE),
                name=gres.gpu_type,
                reason=held if i not in used_idx else "",
            )
            for i in range(gres.count)
        )
        if len(kept) >= _GPUS_MAX:
            kept.clear()
        kept[key] = gpus
    return Node(
        cluster,
        name,
        state,
        partitions,
        cpus,
        cpus_alloc,
        mem,
        mem_alloc,
        gres.gpu_type,
        gres.count,
        min(used.count, gres.count) if gres.count else used.count,
        gpus,
        reason,
    )


def _int(value: Any, default: int = 0) -> int:
    if isinstance(value, dict):  # newer Slurm: {"set": true, "number": 5}
        value = value.get("number") if value.get("set", True) else None
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def format_minutes(value: Any) -> str:
    """A time limit in minutes as Slurm prints it: ``3:00:00``, ``1-00:00:00``; ``UNLIMITED``."""
    if isinstance(value, dict) and value.get("infinite"):
        return "UNLIMITED"
    if value is None or isinstance(value, dict) and not value.get("set", True):
        return ""
    minutes = _int(value, -1)
    if minutes < 0:
        return ""
    days, rest = divmod(minutes, 24 * 60)
    hours, mins = divmod(rest, 60)
    return f"{days}-{hours:02d}:{mins:02d}:00" if days else f"{hours}:{mins:02d}:00"


def _limit(value: Any) -> str:
    """squeue JSON's limit (minutes) as squeue's text prints it; sacct's is formatted already."""
    return value if isinstance(value, str) else format_minutes(value)


_NO_REASON = frozenset(("none", "None", "(null)", ""))


def _reason(value: Any) -> str:
    text = str(value or "")
    return "" if text in _NO_REASON else text


def json_failure(data: dict, items: str, what: str) -> None:
    """Raise when Slurm's JSON reports errors and holds no ``items``: 22.05's squeue/sinfo/sacct
    ``--json`` exit 0 with ``{"errors": [...]}`` and no data when slurmctld cannot be reached."""
    errors = [e for e in data.get("errors") or [] if isinstance(e, dict)]
    if errors and not data.get(items):
        text = "; ".join(" ".join(str(e.get(k)) for k in ("description", "error") if e.get(k)) for e in errors)
        raise BackendError(f"{what} failed: {text or 'Slurm reported an error'}")


def parse_sinfo_json(data: dict, cluster: str, caches: ParseCaches) -> list[Node]:
    json_failure(data, "nodes", "sinfo --json")
    nodes = []
    for raw in data.get("nodes") or []:
        state = raw.get("state", "unknown")
        flags = raw.get("state_flags") or []
        if isinstance(state, list):  # Slurm >= 23: ["IDLE", "DRAIN"]
            flags, state = list(state[1:]) + list(flags), (state[0] if state else "unknown")
        parts = raw.get("partitions") or []
        nodes.append(
            _node(
                caches,
                cluster,
                str(raw.get("name", "")),
                node_state_text(str(state), flags),
                tuple(str(p) for p in parts),
                parse_gres(raw.get("gres")),
                parse_gres(raw.get("gres_used")),
                _int(raw.get("cpus")),
                _int(raw.get("alloc_cpus")),
                _int(raw.get("real_memory")),
                _int(raw.get("alloc_memory")),
                _reason(raw.get("reason")),
            )
        )
    return _merge_nodes(nodes)


def parse_sinfo_text(text: str, cluster: str, caches: ParseCaches) -> list[Node]:
    """Rows of ``sinfo -h -N -O SINFO_FORMAT`` (one row per node and partition)."""
    nodes = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cols = line.split(SEP, len(SINFO_FIELDS) - 1)
        if len(cols) != len(SINFO_FIELDS):
            raise BackendError(f"unexpected sinfo row: {line[:80]!r}")
        name, state, gres, used, part, cpus, mem, mem_alloc, reason = cols
        alloc, _idle, _other, total = (cpus.split("/") + ["0"] * 4)[:4]
        nodes.append(
            _node(
                caches,
                cluster,
                name.strip(),
                node_state_text(state.strip()),
                (part.strip().rstrip("*"),),
                parse_gres(gres),
                parse_gres(used),
                _int(total),
                _int(alloc),
                _int(mem),
                _int(mem_alloc),
                _reason(reason.strip()),
            )
        )
    return _merge_nodes(nodes)


def _merge_nodes(nodes: list[Node]) -> list[Node]:
    """One Node per name (sinfo -N repeats a node per partition)."""
    seen: dict[str, Node] = {}
    for node in nodes:
        prev = seen.get(node.name)
        if prev is None:
            seen[node.name] = node
        else:
            parts = prev.partitions + tuple(p for p in node.partitions if p not in prev.partitions)
            seen[node.name] = replace(prev, partitions=parts)
    return list(seen.values())


# -- squeue ---------------------------------------------------------------------------------------


@quick_init()
@dataclass(frozen=True, slots=True)
class RawJob:
    """One squeue record, before array grouping."""

    job_id: str  # the Slurm job id (numeric)
    array_job_id: str  # "" unless an array member
    array_task: str  # "4", or "0,3" / "0-9%2" for the pending remainder, "" otherwise
    name: str
    user: str
    state: str
    reason: str
    nodes: tuple[str, ...]
    gpus: int
    gpu_indices: tuple[int, ...]
    submit: datetime | None
    start: datetime | None
    end: datetime | None
    partition: str = ""
    account: str = ""
    qos: str = ""
    time_limit: str = ""
    cpus: int = 0
    comment: str = ""
    command: str = ""
    stdout: str = ""
    stderr: str = ""
    workdir: str = ""
    exit_code: int | None = None
    submit_line: str = ""  # sacct (23.02+): the sbatch command line
    script: str = ""  # sacct: the batch script, where the site stores scripts
    signal: int | None = None  # the signal that ended it (``exitstatus``), with ``exit_code``

    @property
    def display_id(self) -> str:
        if self.array_job_id and self.array_task:
            if self.array_task.isdigit():
                return f"{self.array_job_id}_{self.array_task}"
            return f"{self.array_job_id}_[{self.array_task}]"
        return self.job_id


_make_raw = maker(RawJob)


_stamp = datetime.fromtimestamp
_UTC = timezone.utc  # a module name: the attribute lookup costs per job


def _time(value: Any) -> datetime | None:
    number = int(value) if type(value) is str and value.isdigit() else _int(value, 0)
    if number <= 0:
        return None
    try:
        return _stamp(number, _UTC)  # positional: a keyword argument costs as much again
    except (OverflowError, OSError, ValueError):
        return None


def _gpus_from_tres(tres: str, node_count: int) -> int:
    """GPUs from ``tres_per_node`` (``gres:gpu:a100:4``, ``gres/gpu:4``), times the node count."""
    gres = parse_gres(tres.replace("gres/", "gres:"))
    return gres.count * max(1, node_count) if gres.count else 0


def _job_gpus(raw: dict) -> tuple[int, tuple[int, ...]]:
    detail = raw.get("gres_detail") or []
    if detail:
        parsed = [parse_gres(d) for d in detail]
        indices = tuple(i for g in parsed for i in g.indices)
        return sum(g.count for g in parsed), indices
    node_count = _int(raw.get("node_count"), 1)
    gpus = _gpus_from_tres(str(raw.get("tres_per_node") or ""), node_count)
    if not gpus:
        gpus = parse_gres(str(raw.get("tres_per_job") or "").replace("gres/", "gres:")).count
    if not gpus:
        match = re.search(r"gres/gpu=(\d+)", str(raw.get("tres_alloc_str") or raw.get("tres_req_str") or ""))
        gpus = int(match.group(1)) if match else 0
    return gpus, ()


NO_NODES = "None assigned"  # sacct's NodeList of a job that never ran


def raw_from_json(raw: dict, caches: ParseCaches | None = None) -> RawJob:
    array_job = _int(raw.get("array_job_id"))
    task = raw.get("array_task_id")
    task_text = str(_int(task)) if task is not None and _int(task, -1) >= 0 else ""
    if not task_text:
        task_text = str(raw.get("array_task_string") or "")
    gpus, indices = _job_gpus(raw)
    nodes_text = str(raw.get("nodes") or "")
    if nodes_text == NO_NODES:  # sacct: a job that ended before it started
        nodes_text = ""
    exit_code, signal = exit_status(raw.get("exit_code"))
    return RawJob(
        job_id=str(_int(raw.get("job_id"))),
        array_job_id=str(array_job) if array_job else "",
        array_task=task_text if array_job else "",
        name=str(raw.get("name") or ""),
        user=intern(str(raw.get("user_name") or raw.get("user") or raw.get("user_id") or "")),
        # interned (to_job's maker takes the strings as given)
        state=intern(
            _state_text(raw.get("job_state") if "job_state" in raw else (raw.get("state") or {}).get("current"))
        ),
        reason=intern(
            _reason(raw.get("state_reason") if "state_reason" in raw else (raw.get("state") or {}).get("reason"))
        ),
        nodes=expand_hostlist(nodes_text, caches),
        gpus=gpus,
        gpu_indices=indices,
        submit=_time(raw.get("submit_time") if "submit_time" in raw else (raw.get("time") or {}).get("submission")),
        start=_time(raw.get("start_time") if "start_time" in raw else (raw.get("time") or {}).get("start")),
        end=_time(raw.get("end_time") if "end_time" in raw else (raw.get("time") or {}).get("end")),
        partition=str(raw.get("partition") or ""),
        account=str(raw.get("account") or ""),
        qos=str(raw.get("qos") or ""),
        time_limit=_limit(raw.get("time_limit")),
        cpus=_int(raw.get("cpus")),
        comment=str(raw.get("comment") or ""),
        command=str(raw.get("command") or ""),
        stdout=str(raw.get("standard_output") or ""),
        stderr=str(raw.get("standard_error") or ""),
        workdir=str(raw.get("current_working_directory") or raw.get("working_directory") or ""),
        exit_code=exit_code,
        signal=signal,
    )


def parse_squeue_json(text: str | bytes | dict, caches: ParseCaches | None = None) -> list[RawJob]:
    data = text if isinstance(text, dict) else _loads(text, "squeue --json")
    json_failure(data, "jobs", "squeue --json")
    return [raw_from_json(j, caches) for j in data.get("jobs") or []]


def _loads(text: str | bytes, what: str) -> dict:
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BackendError(f"{what} printed something that is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise BackendError(f"{what} printed unexpected JSON")
    return data


class AmbiguousRows(BackendError):
    """The ``-o`` text cannot be split safely (a newline in a job name); use JSON instead."""


# The order a row is unpacked in (_squeue_jobs; the tests' reference parser; tests check it against
# SQUEUE_FIELDS).
TEXT_ORDER = (
    "job_id",
    "array_job_id",
    "array_task",
    "state",
    "reason",
    "user",
    "node_count",
    "nodes",
    "tres_per_node",
    "submit",
    "start",
    "end",
    "partition",
    "account",
    "qos",
    "time_limit",
    "cpus",
    "display_id",
    "name",
)
_NO_VALUE = frozenset(("N/A", "", "(null)"))
_NO_TASK = frozenset(("", "N/A", "0"))


# How many more entries than its latest answer build_jobs' table of Jobs (two generations) holds
# before it turns over: the newer becomes the older, what is left in the older goes.
_ROWS_SLACK = 4096


# -- domain jobs ----------------------------------------------------------------------------------


_DETAILS_MAX = 65_536  # details kept (ParseCaches.details: the same details, one tuple; a queue repeats them)


def to_job(raw: RawJob, cluster: str, parent: str = "", caches: ParseCaches | None = None) -> Job:
    """The Job of one RawJob; with ``caches``, its details shared with other Jobs' (kept there)."""
    state = _STATES.get(raw.state) or normalise_state(raw.state)
    # A pending job's start time is when Slurm expects to start it, not a start.
    expected = _local(raw.start, caches) if raw.start and state is JobState.PENDING else ""
    values = (
        expected,
        raw.partition,
        raw.account,
        raw.qos,
        raw.time_limit,
        raw.cpus,  # made text only for new details
        raw.workdir,
        raw.stdout,
        raw.stderr,
        raw.comment,
    )
    kept = caches.details if caches is not None else None
    details = kept.get(values) if kept is not None else None
    if details is None:
        details = tuple([(k, v if type(v) is str else str(v)) for k, v in zip(_DETAIL_LABELS, values) if v])
        if kept is not None:
            if len(kept) >= _DETAILS_MAX:
                kept.clear()
            kept[values] = details
    terminal = state in TERMINAL_STATES
    return _make_job(
        raw.display_id,
        cluster,
        raw.name,
        raw.user,
        state,
        raw.state,
        raw.reason,
        raw.nodes,
        raw.gpus,
        raw.submit,
        None if state is JobState.PENDING else raw.start,
        raw.end if terminal else None,
        JobKind.SLURM,
        raw.exit_code if terminal else None,
        raw.command,
        raw.gpu_indices,
        parent,
        details,
        intern(facts_of(raw.comment).get("image", "")) if raw.comment else "",
        1 if not raw.array_task or raw.array_task.isdigit() else task_count(raw.array_task),
        raw.signal if terminal else None,
    )


def task_count(tasks: str) -> int:
    """How many array tasks ``tasks`` names: "4" one, "0,3" two, "0-5" six, "0-9%2" ten (``%``: how
    many run at once), "1-9:2" five (``:``: a step). Text it cannot read counts as one."""
    count = 0
    for part in tasks.split("%", 1)[0].split(","):
        bounds, _, step = part.partition(":")
        first, _, last = bounds.partition("-")
        try:
            low, high = int(first), int(last or first)
            count += max(0, (high - low) // max(1, int(step or 1)) + 1)
        except ValueError:
            count += 1
    return max(1, count)


_make_job = maker(Job, interned=False)  # cluster, user, state, reason: interned by the parsers
_DETAIL_LABELS = (
    "Expected start",
    "Partition",
    "Account",
    "QOS",
    "Time limit",
    "CPUs",
    "Work dir",
    "StdOut",
    "StdErr",
    "Comment",
)


def _local(value: datetime, caches: ParseCaches | None) -> str:
    """``value`` as local time text (kept in ``caches.local``)."""
    if caches is None:
        return value.astimezone().strftime("%Y-%m-%d %H:%M:%S")
    kept = caches.local
    text = kept.get(value)
    if text is None:
        if len(kept) >= _DETAILS_MAX:
            kept.clear()
        text = kept[value] = value.astimezone().strftime("%Y-%m-%d %H:%M:%S")
    return text


_AGGREGATE = (
    JobState.RUNNING,
    JobState.COMPLETING,
    JobState.PENDING,
    JobState.FAILED,
    JobState.CANCELLED,
    JobState.COMPLETED,
    JobState.UNKNOWN,
)


# ParseCaches.jobs: the Job made from a RawJob (by its id: the entry holds the RawJob, so the id stays
# its own), for the cluster and parent it was made for: a RawJob kept by its maker (the tests' reference
# parser keeps its rows) comes again next poll. Two generations (jobs, jobs_old), turned over by
# build_jobs (RawJobs from JSON are new each time, and go with a turn). ParseCaches.groups: an array's
# jobs by (cluster, array id), with the RawJobs they were made from; turned over with jobs.


def _cached_job(raw: RawJob, cluster: str, parent: str, caches: ParseCaches) -> Job:
    key = id(raw)
    jobs = caches.jobs
    entry = jobs.get(key)
    if entry is None:
        entry = caches.jobs_old.get(key)
        if entry is not None:
            jobs[key] = entry
    if entry is None or entry[0] is not raw or entry[1] != cluster or entry[2] != parent:
        entry = jobs[key] = (raw, cluster, parent, to_job(raw, cluster, parent, caches))
    return entry[3]


def build_jobs(raws: Iterable[RawJob], cluster: str, caches: ParseCaches) -> list[Job]:
    """Domain jobs; each array becomes a group Job (``parent=""``) followed by its tasks as children.
    A RawJob met in a recent call (the same object) gives the same Job as then (``caches.jobs``)."""
    raws = list(raws)
    with collector_off(keep=True):
        jobs = _build_jobs(raws, cluster, caches)
        if len(caches.jobs) > len(raws) + len(raws) // 8 + _ROWS_SLACK:
            caches.jobs_old, caches.jobs = caches.jobs, {}
            caches.groups_old, caches.groups = caches.groups, {}
    return jobs


def _build_jobs(raws: list[RawJob], cluster: str, caches: ParseCaches) -> list[Job]:
    arrays: dict[str, list[RawJob]] = {}
    for raw in raws:
        if raw.array_job_id:
            arrays.setdefault(raw.array_job_id, []).append(raw)
    jobs: list[Job] = []
    append = jobs.append
    emitted: set[str] = set()
    known, older, jobs_of = caches.jobs.get, caches.jobs_old.get, caches.jobs
    groups, groups_old = caches.groups, caches.groups_old
    for raw in raws:
        if not raw.array_job_id:
            key = id(raw)
            entry = known(key)
            if entry is None:
                entry = older(key)
                if entry is not None:
                    jobs_of[key] = entry
            if entry is not None and entry[0] is raw and entry[1] == cluster and not entry[2]:
                append(entry[3])
            else:
                job = to_job(raw, cluster, "", caches)
                jobs_of[key] = (raw, cluster, "", job)
                append(job)
            continue
        group = raw.array_job_id
        if group in emitted:
            continue
        emitted.add(group)
        members = arrays[group]
        made = groups.get((cluster, group)) or groups_old.get((cluster, group))
        if made is None or made[0] != members:  # the same RawJobs (mostly by identity), the same jobs
            made = (members, _array_jobs(group, members, cluster, caches))
        groups[cluster, group] = made
        jobs.extend(made[1])
    return jobs


def _array_jobs(group: str, members: list[RawJob], cluster: str, caches: ParseCaches) -> list[Job]:
    """An array's group Job, then its tasks (the running ones a row each, the pending remainder)."""
    children = [_cached_job(m, cluster, group, caches) for m in members]
    states = {c.state for c in children}
    state = next((s for s in _AGGREGATE if s in states), JobState.UNKNOWN)
    first = min(members, key=lambda m: (m.job_id != group, m.job_id))
    nodes = tuple(dict.fromkeys(chain.from_iterable(m.nodes for m in members)))
    head = Job(
        id=group,
        cluster=cluster,
        name=first.name,
        user=first.user,
        state=state,
        raw_state="ARRAY",
        reason=next((c.reason for c in children if c.reason), ""),
        nodes=nodes,
        gpus=sum(c.gpus for c in children if c.state is JobState.RUNNING),
        submit_time=min((m.submit for m in members if m.submit), default=None),
        start_time=min((m.start for m in members if m.start), default=None),
        kind=JobKind.SLURM,
        details=_array_details(children, first.partition),
    )
    return [head, *children]


# -- squeue text straight to Jobs -----------------------------------------------------------------


# An array task's line, parsed: (job, group, job_id, start, partition), what its group's head is made
# from beside the task's Job (the RawJob's id, its start even while pending, its partition). A plain
# tuple, so that a cached line tells a task from a plain Job by its type.
_Member = tuple[Job, str, str, datetime | None, str]


# ParseCaches.lines and .arrays: per cluster, what each line of its latest squeue text made: its Job,
# or an array task's _Member; and each array's Jobs by its id, with the _Members they were made from.
# Made anew by each parse
# from the lines of its text (those met in the last one taken out of it), so they hold one text's
# lines: lines of jobs gone go with the next poll, and a line is kept once (a second generation would
# keep the older text's equal string beside it: up to twice the lines, 25 MB more at 100,000 jobs).
# The text is split a stretch at a time, so that the last text's lines are let go (taken out) while
# this one's are made, instead of both sets being held at once (100,000 lines, 4 polls: 149 -> 127 MB
# held, peak 199 -> 178 MB). A line is kept under its ``hash()`` (an int, not the line: 100,000 lines,
# 19 MB -> 3 MB), as quick to look up: a 64-bit SipHash under the process's secret key, so a changed
# line is mistaken for a kept one with odds of about 3 in 10**11 per poll of 100,000 lines (5,000
# changed: 5,000 x 100,000 / 2**64), its job then shown as that line's until it changes again.
# (ParseCaches.parsed: cluster -> the number of the parse whose lines it holds; .parses numbers them.)


_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class QueueDelta:
    """What a parse's Jobs differ by from those of the cluster's parse numbered ``since`` (0: none
    known, so nothing is said): the Jobs not given then (new, or a new version: the lines new, the
    heads of the arrays whose lines changed), and the ids given then and no more. Exact while the ids
    of each parse are unique; a line given twice (never seen from squeue) says nothing."""

    since: int
    number: int
    put: tuple[Job, ...] = ()
    gone: tuple[str, ...] = ()


def squeue_jobs(text: str | bytes, cluster: str, caches: ParseCaches) -> list[Job]:
    """The squeue text's Jobs in one pass, with no RawJob between (the tests' reference parser makes
    RawJobs, then ``build_jobs``; the Jobs are equal): each
    line straight to its Job, an array's tasks to their group Job and children, the same Jobs equal
    (and in the same order) as that path gives. What the backend runs each refresh. A line met in
    this cluster's last parse gives the same Job as then, and an array whose lines are all the same,
    the same Jobs; a new line's repeated values (times, node lists, GPU counts) are worked out once
    per text, its details once per set of detail columns (kept between parses). ``text`` may be the
    bytes squeue printed: split into lines as bytes, each new line decoded alone (bad bytes replaced,
    as the whole text decoded would have them), so that no decoded copy of the whole is made. What is
    kept between parses is in ``caches``."""
    return squeue_answer(text, cluster, caches)[0]


def squeue_answer(text: str | bytes, cluster: str, caches: ParseCaches) -> tuple[list[Job], QueueDelta]:
    """``squeue_jobs`` and what its Jobs differ by from this cluster's previous parse (``QueueDelta``),
    found from the lines alone: those parsed anew, and those of the last text left over (no pass over
    the Jobs). ``squeue_steps`` run to its end at once."""
    return run_steps(squeue_steps(text, cluster, caches))


def run_steps(steps: Generator[None, None, _T]) -> _T:
    """What ``steps`` (``squeue_steps``) returns, run to the end at once."""
    while True:
        try:
            next(steps)
        except StopIteration as end:
            return end.value


def squeue_steps(
    text: str | bytes, cluster: str, caches: ParseCaches
) -> Generator[None, None, tuple[list[Job], QueueDelta]]:
    """``squeue_answer`` a step at a time: it yields after each stretch of lines (``_STRETCH``) and
    each array made, where its caller may let other work run (the backend: its event loop, so that a
    key is not held up by a 100,000-line parse), and returns the answer. The cluster's cache in
    ``caches`` (its lines, arrays and parse number) is taken at the first step and put back at the last, each in one
    step: a parse of the same cluster in between finds none (it parses every line anew and says
    nothing, ``since`` 0); a parse stopped midway (an exception, or closed: its caller was cancelled)
    puts back what it took joined with what it made, numbered by no parse, so the next says nothing
    (unless a parse begun meanwhile put back its own, which is kept)."""
    lines, arrays_of, parsed = caches.lines, caches.arrays, caches.parsed
    number = next(caches.parses)
    since = parsed.pop(cluster, 0)
    kept = lines.pop(cluster, None) or {}
    before = arrays_of.pop(cluster, None) or {}
    rows: dict[Any, Job | _Member] = {}
    fresh: list[Job | _Member] = []
    arrays: dict[str, tuple[list[_Member], list[Job]]] = {}
    with collector_off(keep=True):
        try:
            jobs, groups, twice = yield from _squeue_jobs(text, cluster, kept, rows, fresh, caches)
            if groups:
                jobs = yield from _with_arrays(jobs, groups, cluster, before, arrays)
            delta = QueueDelta(0, number)  # (a line twice: the next parse says nothing either)
            if since and not twice:
                delta = yield from _delta(since, number, fresh, kept, before, arrays)
        except BaseException:  # (AmbiguousRows; GeneratorExit, when the caller closes it midway)
            if cluster not in lines:
                kept.update(rows)  # what this text took out of the cache, back for the next poll
                lines[cluster], arrays_of[cluster] = kept, before  # (lines of two texts: numbered by no parse)
            raise
        lines[cluster], arrays_of[cluster] = rows, arrays
        if twice:
            parsed.pop(cluster, None)
        else:
            parsed[cluster] = number
    return jobs, delta


_DELTA_STEP = 8192  # lines a step of _delta goes through


def _delta(
    since: int,
    number: int,
    fresh: list[Job | _Member],
    kept: dict[Any, Job | _Member],
    before: dict[str, tuple[list[_Member], list[Job]]],
    arrays: dict[str, tuple[list[_Member], list[Job]]],
) -> Generator[None, None, QueueDelta]:
    """The parse's ``QueueDelta``, from what its lines parsed anew made (``fresh``), the lines of the last
    text left over (``kept``) and the arrays then and now; a step per _DELTA_STEP lines."""
    put: list[Job] = []
    for start in range(0, len(fresh), _DELTA_STEP):
        put += [made if isinstance(made, Job) else made[0] for made in fresh[start : start + _DELTA_STEP]]
        yield
    put += [made[1][0] for group, made in arrays.items() if before.get(group) is not made]  # new heads
    gone: set[str] = set()
    left = iter(kept.values())
    while part := list(islice(left, _DELTA_STEP)):
        gone.update([made.id if isinstance(made, Job) else made[0].id for made in part])
        yield
    gone.update(group for group in before if group not in arrays)
    for start in range(0, len(put) if gone else 0, _DELTA_STEP):
        gone.difference_update([job.id for job in put[start : start + _DELTA_STEP]])
        yield
    return QueueDelta(since, number, tuple(put), tuple(gone))


def _squeue_jobs(
    text: str | bytes,
    cluster: str,
    kept: dict[Any, Job | _Member],
    rows: dict[Any, Job | _Member],
    fresh: list[Job | _Member],
    caches: ParseCaches,
) -> Generator[None, None, tuple[list[Any], dict[str, list[_Member]], bool]]:
    """The Jobs of the lines in order, an array's id (a str) where its first task stands; the tasks
    of each array; and whether a line came twice. What each line made goes into ``rows``, and what a
    line parsed anew made into ``fresh`` too; a line in ``kept`` is taken out of it, not parsed again.
    Yields between two stretches of the text (``squeue_steps``)."""
    jobs: list[Any] = []
    append = jobs.append
    groups: dict[str, list[_Member]] = {}
    width = len(SQUEUE_FIELDS)
    times: dict[str, Any] = {"N/A": None, "NONE": None, "0": None, "": None, "Unknown": None}
    times_get = times.get
    gpus_of: dict[tuple[str, str], int] = {}
    details_get = caches.text_details.get
    states: dict[str, tuple[str, JobState, bool]] = {}
    hosts_get = caches.hostlists.get
    kept_pop, rows_get, fresh_append = kept.pop, rows.get, fresh.append
    make, slurm, pending_state = _make_job, JobKind.SLURM, JobState.PENDING
    twice = False
    binary = isinstance(text, bytes)
    line: Any
    for line in _stretches(text, paused=True):
        hashed = hash(line)  # what the line is kept under (see ParseCaches.lines)
        made = kept_pop(hashed, None)
        if made is None:
            if not line:
                if line is None:  # between two stretches (tested on the empty lines' path: no cost a line)
                    yield
                continue
            made = rows_get(hashed)  # a line twice in one text (never seen from squeue)
            if made is not None:
                twice = True
        if made is None:
            cols = (line.decode(errors="replace") if binary else line).split(SEP, width - 1)
            if len(cols) != width or not cols[0].isdigit():
                raise AmbiguousRows(f"ambiguous squeue row: {SEP.join(cols)[:80]!r}")
            (
                job_id,
                array_job_id,
                array_task,
                state_text,
                reason,
                user,
                node_count,
                nodes,
                tres,
                submit,
                start,
                end,
                partition,
                account,
                qos,
                time_limit,
                cpus,
                _display,
                name,
            ) = cols
            known_state = states.get(state_text)
            if known_state is None:
                state = normalise_state(state_text)
                known_state = states[state_text] = (intern(state_text), state, state in TERMINAL_STATES)
            raw_state, state, terminal = known_state
            gpus = gpus_of.get((tres, node_count))
            if gpus is None:
                gpus = gpus_of[tres, node_count] = (
                    0 if tres in ("N/A", "(null)") else _gpus_from_tres(tres, _int(node_count, 1))
                )
            submitted = times_get(submit, times)
            if submitted is times:
                submitted = times[submit] = _time(submit)
            started = times_get(start, times)
            if started is times:
                started = times[start] = _time(start)
            if terminal:
                ended = times_get(end, times)
                if ended is times:
                    ended = times[end] = _time(end)
            else:
                ended = None
            pending = state is pending_state
            key = (start if pending else "", partition, account, qos, time_limit, cpus)
            details = details_get(key)
            if details is None:
                details = _text_details(key, started if pending else None, caches)
            if nodes:
                hosts = hosts_get(nodes)
                if hosts is None:
                    hosts = expand_hostlist(nodes, caches)
            else:
                hosts = ()
            # %F is the job's own id for a plain job; only %K (task id or range) marks an array member.
            if array_task not in _NO_VALUE and array_job_id not in _NO_TASK:
                task = array_task[1:-1] if array_task.startswith("[") and array_task.endswith("]") else array_task
                in_row = 1  # tasks this row stands for
                if not task:
                    shown = job_id
                elif task.isdigit():
                    shown = f"{array_job_id}_{task}"
                else:
                    shown = f"{array_job_id}_[{task}]"
                    in_row = task_count(task)
                parent = intern(array_job_id)  # one string per array, not one per task (52,000 of 100,000: 3 MB)
            else:
                shown, parent, in_row = job_id, "", 1
            job = make(
                shown,
                cluster,
                intern(name) if len(name) < 64 else name,
                intern(user),
                state,
                raw_state,
                "" if reason in _NO_REASON else intern(reason),
                hosts,
                gpus,
                submitted,
                None if pending else started,
                ended,
                slurm,
                None,
                "",
                (),
                parent,
                details,
                "",
                in_row,
            )
            made = (job, parent, job_id, started, intern(partition)) if parent else job
            fresh_append(made)
        rows[hashed] = made
        if type(made) is tuple:
            group = made[1]
            tasks = groups.get(group)
            if tasks is None:
                groups[group] = [made]
                append(group)
            else:
                tasks.append(made)
        else:
            append(made)
    return jobs, groups, twice


_STRETCH = 1 << 16  # characters of text split at a time


def _stretches(text: Any, paused: bool = False) -> Iterator[Any]:
    """The lines of ``text`` (str or bytes, split at ``\\n``), split a stretch of about _STRETCH
    characters at a time; with ``paused``, None between two stretches."""
    newline = b"\n" if isinstance(text, bytes) else "\n"
    if len(text) <= _STRETCH:
        yield from text.split(newline)
        return
    start, size = 0, len(text)
    while start < size:
        end = text.find(newline, start + _STRETCH)
        if end < 0:
            end = size
        yield from text[start:end].split(newline)
        start = end + 1
        if paused:
            yield None


def _text_details(key: tuple[str, ...], start: datetime | None, caches: ParseCaches) -> tuple[tuple[str, str], ...]:
    """The details ``to_job`` gives the RawJob of a line whose detail columns are ``key`` (the pending
    start, partition, account, QOS, limit, CPUs), and whose expected ``start`` (pending jobs) is this;
    kept in ``caches.text_details``, by the line's text."""
    _, partition, account, qos, time_limit, cpus = key
    details: list[tuple[str, str]] = [("Expected start", _local(start, caches))] if start else []
    if partition:
        details.append(("Partition", intern(partition)))
    if account not in _NO_REASON:
        details.append(("Account", intern(account)))
    if qos not in _NO_REASON:
        details.append(("QOS", intern(qos)))
    if time_limit:
        details.append(("Time limit", intern(time_limit)))
    count = int(cpus) if cpus.isdigit() else _int(cpus)
    if count:
        details.append(("CPUs", str(count)))
    kept = caches.text_details
    if len(kept) >= _DETAILS_MAX:
        kept.clear()
    made = tuple(details)
    # kept under the words interned: the key's own strings (split from its line) would stay, a set
    # per pending job (each its own start): 15,000 of 100,000 jobs, 4 MB
    kept[(key[0], intern(partition), intern(account), intern(qos), intern(time_limit), intern(cpus))] = made
    return made


def _with_arrays(
    jobs: list[Any],
    groups: dict[str, list[_Member]],
    cluster: str,
    kept: dict[str, tuple[list[_Member], list[Job]]],
    arrays: dict[str, tuple[list[_Member], list[Job]]],
) -> Generator[None, None, list[Job]]:
    """``jobs`` with each array's id replaced by its group Job and tasks (those of the last parse,
    in ``kept``, where its lines were all the same), each array's put in ``arrays``. Yields after
    each array made anew (``squeue_steps``)."""
    out: list[Job] = []
    append, extend = out.append, out.extend
    for job in jobs:
        if type(job) is not str:
            append(job)
            continue
        tasks = groups[job]
        made = kept.get(job)
        if made is None or made[0] != tasks:  # the same lines give the same _Members: compared by identity
            made = (tasks, _array_of_tasks(job, tasks, cluster))
            yield
        arrays[job] = made
        extend(made[1])
    return out


def _array_of_tasks(group: str, tasks: list[_Member], cluster: str) -> list[Job]:
    """``_array_jobs`` for tasks parsed straight to Jobs: the group Job, then the tasks' Jobs."""
    children = [t[0] for t in tasks]
    states = {c.state for c in children}
    state = next((s for s in _AGGREGATE if s in states), JobState.UNKNOWN)
    first = min(tasks, key=lambda t: (t[2] != group, t[2]))
    head = Job(
        id=group,
        cluster=cluster,
        name=first[0].name,
        user=first[0].user,
        state=state,
        raw_state="ARRAY",
        reason=next((c.reason for c in children if c.reason), ""),
        nodes=tuple(dict.fromkeys(chain.from_iterable(c.nodes for c in children))),
        gpus=sum(c.gpus for c in children if c.state is JobState.RUNNING),
        submit_time=min((c.submit_time for c in children if c.submit_time), default=None),
        start_time=min((t[3] for t in tasks if t[3]), default=None),
        kind=JobKind.SLURM,
        details=_array_details(children, first[4]),
    )
    return [head, *children]


def _array_details(children: list[Job], partition: str) -> tuple[tuple[str, str], ...]:
    """An array group's details: its tasks (a pending remainder's row holds several) and rows."""
    rows = f"{len(children)} row" + ("s" if len(children) != 1 else "")
    return (("Array tasks", f"{sum(c.tasks for c in children)} in {rows}"), ("Partition", partition))


# -- StdOut/StdErr patterns -----------------------------------------------------------------------


def expand_output_path(pattern: str, raw: RawJob, node: str = "", workdir: str = "") -> str:
    """Expand ``%j %x %A %a %N %u %%`` (and ``%J``, ``%s``=batch, ``%t``=0, ``%n``=0, zero padding like
    ``%4a``) the way sbatch does; relative paths are taken from the job's working directory."""
    array_job = raw.array_job_id or raw.job_id
    task = raw.array_task if raw.array_task.isdigit() else ""
    values = {
        "j": raw.job_id,
        "J": raw.job_id,
        "x": raw.name,
        "A": array_job,
        "a": task or "4294967294",
        "N": node or (raw.nodes[0] if raw.nodes else ""),
        "n": "0",
        "t": "0",
        "u": raw.user,
        "s": "batch",
    }

    def sub(match: re.Match) -> str:
        pad, key = match.group(1), match.group(2)
        if key == "%":
            return "%"
        value = values.get(key)
        if value is None:
            return match.group(0)
        return value.zfill(int(pad)) if pad and value.isdigit() else value

    path = re.sub(r"%(\d*)([%jJxAaNntus])", sub, pattern)
    base = workdir or raw.workdir
    if path and not path.startswith("/") and base:
        path = base.rstrip("/") + "/" + path
    return path
