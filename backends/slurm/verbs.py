"""Slurm's job verbs beyond cancel: resubmit (the same job, or with more time or memory after TIMEOUT /
OUT_OF_MEMORY), hold, release, requeue, edit (``scontrol update`` of a pending job's time limit,
partition or QOS), signal (``scancel --signal``); and seff's efficiency figures from sacct and sstat.

A resubmit sends the job's own batch script (``scontrol write batch_script ID -``, or ``sacct -B`` for a
job slurmctld has forgotten) on stdin, with the job's recorded options on sbatch's command line (they
override the script's ``#SBATCH`` lines, as they did when it was first submitted). Every value typed by
a user is checked against a narrow grammar before it goes into an argv list; nothing goes through a
shell. The pure parts (options from a record, validation, efficiency from sacct) have no I/O.

``job_file`` gives the job back as an sbatch script for the Submit form: its batch script with the
recorded options as ``#SBATCH`` lines (``with_options``), and the larger time or memory as form values."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from yanflow_tui.backends.base import SIGNALS, new_submit_tag
from yanflow_tui.backends.slurm import history, nativefile
from yanflow_tui.backends.slurm.comment import retagged
from yanflow_tui.backends.slurm.parse import _int, _loads, normalise_state
from yanflow_tui.backends.slurm.transport import Transport
from yanflow_tui.efficiency import Efficiency, cpu_seconds
from yanflow_tui.errors import BackendError, SpecError

ACTIONS = ("resubmit", "hold", "release", "requeue", "edit", "signal")
# sacct's JSON breaks under the SLURM_TIME_FORMAT=%s every command gets (22.05), so it runs without it.
SACCT_JSON = ("env", "-u", "SLURM_TIME_FORMAT", "sacct", "--json")
_TIME = re.compile(r"(\d+-)?\d+(:\d+){0,2}|UNLIMITED|INFINITE", re.IGNORECASE)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_MEM = re.compile(r"(\d+)([KMGT]?)", re.IGNORECASE)
MEM_PER_CPU = 0x8000000000000000  # Slurm's flag bit on a per-CPU memory request
EDIT_KEYS = {"time": "TimeLimit", "partition": "Partition", "qos": "QOS"}


# -- validation (no I/O) -----------------------------------------------------------------------------


def check_time(value: str) -> str:
    """A Slurm time limit (``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH[:MM[:SS]]``, ``UNLIMITED``)."""
    value = (value or "").strip()
    if not _TIME.fullmatch(value):
        raise BackendError(
            f"not a Slurm time limit: {value!r} (e.g. 30, 01:30:00, 2-00:00:00 or UNLIMITED; minutes when one number)"
        )
    return value


def check_name(what: str, value: str) -> str:
    value = (value or "").strip()
    if not _NAME.fullmatch(value):
        raise BackendError(f"not a {what} name: {value!r} (letters, digits, '_', '.' and '-')")
    return value


def mem_mb(value: str) -> int:
    """``4G``, ``500M``, ``1024`` (MB) as MB."""
    match = _MEM.fullmatch((value or "").strip())
    if not match or not int(match.group(1)):
        raise BackendError(f"not a memory size: {value!r} (e.g. 4G or 500M)")
    scale = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024 * 1024}[match.group(2).upper()]
    return max(1, int(int(match.group(1)) * scale))


def check_signal(value: str) -> str:
    name = (value or "").strip().upper().removeprefix("SIG")
    if name not in SIGNALS:
        raise BackendError(f"not a signal offered: {value!r} (one of {', '.join(SIGNALS)})")
    return name


def minutes(limit: str) -> int | None:
    """A time limit as minutes (None: unlimited), the way sbatch reads ``--time``."""
    limit = check_time(limit)
    if limit.upper() in ("UNLIMITED", "INFINITE"):
        return None
    days, _, rest = limit.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    if days:  # D-HH, D-HH:MM, D-HH:MM:SS
        parts += [0] * (3 - len(parts))
        h, m, s = parts
        return int(days) * 1440 + h * 60 + m + (1 if s else 0)
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2:  # MM:SS
        return parts[0] + (1 if parts[1] else 0)
    h, m, s = parts
    return h * 60 + m + (1 if s else 0)


# -- the job's recorded options -----------------------------------------------------------------------


def count(value: Any) -> int | None:
    """A JSON count (plain, or 23.02+'s ``{"set", "infinite", "number"}``); None when unset or infinite."""
    if isinstance(value, dict) and (value.get("infinite") or not value.get("set", True)):
        return None
    number = _int(value, -1)
    return None if number < 0 else number


def _tres(items: Any, kind: str) -> list[tuple[str, int]]:
    """(name, count) of each ``kind`` entry in a sacct TRES list."""
    out = []
    for item in items or []:
        if isinstance(item, dict) and item.get("type") == kind:
            out.append((str(item.get("name") or ""), _int(item.get("count"), 0)))
    return out


class Options:
    """What sbatch needs to run the job again as it ran: ``--key=value`` pairs, with the state it
    ended in, its time limit (minutes, None: none) and memory per node or per CPU (MB)."""

    def __init__(self) -> None:
        self.pairs: dict[str, str] = {}
        self.state = ""
        self.time_minutes: int | None = None
        self.mem: int = 0
        self.mem_per_cpu = False

    def argv(self, tag: str) -> list[str]:
        pairs = dict(self.pairs)
        if self.time_minutes is not None:
            pairs["time"] = str(self.time_minutes)
        if self.mem:
            pairs["mem-per-cpu" if self.mem_per_cpu else "mem"] = f"{self.mem}M"
        comment = pairs.pop("comment", "")
        pairs["comment"] = retagged(comment, tag)
        return ["sbatch", "--parsable", *(f"--{key}={value}" for key, value in pairs.items() if value)]


# Text options of slurmctld's record, in the order sbatch's manual lists them: option -> squeue --json field.
_SQUEUE_TEXT = (
    ("job-name", "name"),
    ("partition", "partition"),
    ("account", "account"),
    ("qos", "qos"),
    ("constraint", "features"),
    ("chdir", "current_working_directory"),
    ("comment", "comment"),
)
_NO_VALUE = ("", "(null)", "N/A")
# GRES options: option -> squeue --json field, and the only entries it takes (``--gpus`` takes ``a100:4``).
_SQUEUE_GRES = (
    ("gres", "tres_per_node", ""),
    ("gpus", "tres_per_job", "gpu:"),
    ("gpus-per-task", "tres_per_task", "gpu:"),
)


def options_from_squeue(raw: Mapping[str, Any]) -> Options:
    """A ``squeue --json`` record's options (slurmctld's record, as ``scontrol show job`` shows it): name,
    partition, account, QOS, constraint, workdir, comment, nodes, tasks and tasks per node, CPUs per task,
    GPUs and other GRES (per node, per job, per task), and the output and error paths where the job named
    its own; the time limit and the memory per node or per CPU beside. Each value exactly as recorded (a
    name with quotes, spaces or a newline too: each option becomes one argv word). Pure."""
    opts = Options()
    state = raw.get("job_state")
    opts.state = str(state[0] if isinstance(state, list) and state else state or "")
    for key, field in _SQUEUE_TEXT:
        value = str(raw.get(field) or "")
        if value not in _NO_VALUE:
            opts.pairs[key] = value
    nodes, tasks, per_node = (count(raw.get(key)) or 0 for key in ("node_count", "tasks", "tasks_per_node"))
    for key, number in (("nodes", nodes), ("ntasks", tasks), ("ntasks-per-node", per_node)):
        if number:
            opts.pairs[key] = str(number)
    per_task = _cpus_per_task(raw, tasks, per_node)
    if per_task:
        opts.pairs["cpus-per-task"] = str(per_task)
    for key, field, prefix in _SQUEUE_GRES:
        value = _gres(str(raw.get(field) or ""), prefix)
        if value:
            opts.pairs[key] = value
    job_id = str(raw.get("job_id") or "")
    for key, field in (("output", "standard_output"), ("error", "standard_error")):
        path = str(raw.get(field) or "")
        # the job's own path (a pattern as given: %j stays %j); one naming this job is Slurm's expanded default
        if path and (not job_id or job_id not in path):
            opts.pairs[key] = path
    opts.time_minutes = count(raw.get("time_limit")) or None
    per_cpu, per_node_mb = count(raw.get("memory_per_cpu")), count(raw.get("memory_per_node"))
    if per_cpu:
        opts.mem, opts.mem_per_cpu = per_cpu, True
    elif per_node_mb:
        opts.mem = per_node_mb
    return opts


def _cpus_per_task(raw: Mapping[str, Any], tasks: int, per_node: int) -> int:
    """CPUs per task: as recorded, else (22.05's JSON leaves it out) the minimum per node over the tasks per
    node, else the CPUs over the tasks where they divide."""
    recorded = count(raw.get("cpus_per_task"))
    if recorded:
        return recorded
    per_node_cpus = count(raw.get("minimum_cpus_per_node")) or 0
    if per_node and per_node_cpus > per_node and per_node_cpus % per_node == 0:
        return per_node_cpus // per_node
    cpus = count(raw.get("cpus")) or 0
    if tasks and cpus > tasks and cpus % tasks == 0:
        return cpus // tasks
    return 0


def _gres(text: str, prefix: str = "") -> str:
    """A TRES request as sbatch takes it: ``gres:gpu:a100:1,gres:shard:2`` -> ``gpu:a100:1,shard:2``;
    with ``prefix`` (``gpu:``), only those entries, the prefix dropped."""
    items = [item.strip().removeprefix("gres:").removeprefix("gres/") for item in text.split(",") if item.strip()]
    if prefix:
        items = [item.removeprefix(prefix) for item in items if item.startswith(prefix)]
    return ",".join(items)


def options_from_sacct(raw: Mapping[str, Any]) -> Options:
    """A ``sacct --json`` record's options (a job slurmctld no longer holds)."""
    opts = Options()
    state = raw.get("state") or {}
    current = state.get("current") if isinstance(state, dict) else state
    opts.state = str(current[0] if isinstance(current, list) and current else current or "")
    for key, field in (
        ("job-name", "name"),
        ("partition", "partition"),
        ("account", "account"),
        ("qos", "qos"),
        ("chdir", "working_directory"),
    ):
        if raw.get(field):
            opts.pairs[key] = str(raw[field])
    comment = raw.get("comment")
    comment = comment.get("job") if isinstance(comment, dict) else comment
    if comment:
        opts.pairs["comment"] = str(comment)
    for key in ("stdout", "stderr"):  # 23.02+: the patterns as given (%j...)
        if raw.get(key):
            opts.pairs["output" if key == "stdout" else "error"] = str(raw[key])
    tres = raw.get("tres") or {}
    requested = tres.get("requested") if isinstance(tres, dict) else None
    nodes = next((n for _, n in _tres(requested, "node")), 0) or _int(raw.get("allocation_nodes"), 0) or 1
    opts.pairs["nodes"] = str(nodes)
    cpus = next((n for _, n in _tres(requested, "cpu")), 0)
    if cpus:
        opts.pairs["mincpus"] = str(max(1, cpus // nodes))
    gpus = [(name, n) for name, n in _tres(requested, "gres") if name.split(":")[0] == "gpu" and n]
    if gpus:
        name, gpu_count = max(gpus, key=lambda g: len(g[0]))  # gpu:a100 over plain gpu
        opts.pairs["gres"] = f"{name}:{max(1, gpu_count // nodes)}"
    time = raw.get("time") or {}
    opts.time_minutes = count(time.get("limit")) if isinstance(time, dict) else None
    memory = (raw.get("required") or {}).get("memory")
    value = _int(memory, 0)
    if value & MEM_PER_CPU:
        opts.mem, opts.mem_per_cpu = value & ~MEM_PER_CPU, True
    else:
        mem = next((n for _, n in _tres(requested, "mem")), 0)
        opts.mem = max(1, mem // nodes) if mem else 0
    return opts


def apply_args(opts: Options, args: Mapping[str, str], job_id: str) -> str:
    """Apply resubmit's ``more`` / ``time`` / ``mem`` to ``opts``; says what changed ("" if nothing)."""
    said = []
    if args.get("more"):
        state = opts.state.upper()
        if state.startswith("TIMEOUT") and opts.time_minutes:
            opts.time_minutes *= 2
            said.append(f"time {opts.time_minutes} min")
        elif state.startswith("OUT_OF_MEMORY") and opts.mem:
            opts.mem *= 2
            said.append(f"memory {opts.mem}M" + (" per CPU" if opts.mem_per_cpu else ""))
        elif not (args.get("time") or args.get("mem")):
            if not state:
                now = "is in an unknown state"
            elif normalise_state(state).terminal:
                now = f"ended {state}"
            else:
                now = f"is {state}"
            raise BackendError(
                "more time/memory is only for a job that ended by TIMEOUT (the time limit doubled) or "
                f"OUT_OF_MEMORY (the memory doubled); job {job_id} {now}: nothing done"
            )
    if args.get("time"):
        opts.time_minutes = minutes(args["time"])
        said.append(f"time {args['time']}")
    if args.get("mem"):
        opts.mem = mem_mb(args["mem"])
        said.append(f"memory {opts.mem}M" + (" per CPU" if opts.mem_per_cpu else ""))
    return ", ".join(said)


# -- efficiency (seff) ------------------------------------------------------------------------------


def _tres_text(text: str, key: str) -> str:
    for part in (text or "").split(","):
        name, _, value = part.partition("=")
        if name == key:
            return value
    return ""


def _clock_seconds(text: str) -> int:
    """sstat's ``[D-][HH:]MM:SS[.fff]`` as whole seconds."""
    days, _, rest = text.rpartition("-")
    parts = [float(p) for p in rest.split(":") if p] or [0.0]
    seconds = 0.0
    for part in parts:
        seconds = seconds * 60 + part
    return int((int(days) if days else 0) * 86400 + seconds + 0.5)


def _kib(text: str) -> float:
    """sstat's ``76556K`` / ``1.5G`` / bytes as KiB."""
    match = re.fullmatch(r"([0-9.]+)([KMGTP]?)", text or "")
    if not match:
        return 0.0
    exp = " KMGTP".index(match.group(2) or " ")
    return float(match.group(1)) * 1024**exp / 1024


def sstat_usage(text: str) -> dict[str, tuple[int, float]]:
    """``sstat -a -n -P -o JobID,TRESUsageInTot`` lines: job id -> (CPU seconds summed over its
    steps, the largest step's memory in KiB), as seff sums the steps."""
    out: dict[str, tuple[int, float]] = {}
    for line in text.splitlines():
        step, _, tres = line.strip().partition("|")
        if not step:
            continue
        job = step.split(".")[0]
        cpu, mem = out.get(job, (0, 0.0))
        out[job] = (cpu + _clock_seconds(_tres_text(tres, "cpu") or "0"), max(mem, _kib(_tres_text(tres, "mem"))))
    return out


def efficiency_from_sacct(raw: Mapping[str, Any]) -> Efficiency | None:
    """seff's figures from one ``sacct --json`` record (with its steps); None for a job not started."""
    state = raw.get("state") or {}
    current = state.get("current") if isinstance(state, dict) else state
    word = str(current[0] if isinstance(current, list) and current else current or "")
    if word.upper().startswith("PENDING"):
        return None
    tres = raw.get("tres") or {}
    allocated = tres.get("allocated") if isinstance(tres, dict) else None
    cores = next((n for _, n in _tres(allocated, "cpu")), 0) or 1
    nodes = _int(raw.get("allocation_nodes"), 0) or next((n for _, n in _tres(allocated, "node")), 0) or 1
    steps, mem = [], 0.0
    for step in raw.get("steps") or []:
        total = (step.get("time") or {}).get("total") or {}
        steps.append((_int(total.get("seconds"), 0), _int(total.get("microseconds"), 0)))
        usage = ((step.get("tres") or {}).get("requested") or {}).get("total")  # tres_usage_in_tot
        step_mem = next((n for _, n in _tres(usage, "mem")), 0) / 1024  # bytes -> KiB
        mem = max(mem, step_mem)
    time = raw.get("time") or {}
    limit = count(time.get("limit"))
    memory = _int((raw.get("required") or {}).get("memory"), 0)
    return Efficiency(
        state=word,
        cores=cores,
        nodes=nodes,
        cpu_seconds=cpu_seconds(steps),
        elapsed_seconds=_int(time.get("elapsed"), 0),
        memory_used_kb=mem,
        memory_kb=next((n for _, n in _tres(allocated, "mem")), 0) * 1024.0,
        memory_per_cpu=bool(memory & MEM_PER_CPU),
        time_limit_seconds=limit * 60 if limit else None,
        running=word.upper().startswith("RUNNING"),
    )


def with_live_usage(eff: Efficiency, usage: tuple[int, float] | None) -> Efficiency:
    """A running job's figures with sstat's CPU time and memory (sacct has none until a step ends)."""
    if usage is None:
        return eff
    return replace(eff, cpu_seconds=max(eff.cpu_seconds, usage[0]), memory_used_kb=max(eff.memory_used_kb, usage[1]))


# -- the verbs (I/O through the transport) ----------------------------------------------------------


async def job_record(
    transport: Transport,
    job_id: str,
    held: Callable[[Mapping[str, Any]], bool],
    accounted: Callable[[Mapping[str, Any]], bool] = lambda raw: True,
) -> tuple[bool, Mapping[str, Any]]:
    """(True, slurmctld's record) while it holds the job (the first ``squeue --json`` job that is ``held``:
    22.05 answers with every job whatever -j says), else (False, accounting's: the first ``sacct --json``
    job that is ``accounted``). Reads only."""
    result = await transport.run(["squeue", "-a", "-t", "all", "-j", job_id, "--json"])
    if result.ok:
        for raw in _loads(result.stdout, "squeue --json").get("jobs") or []:
            if held(raw):
                return True, raw
    result = await transport.run([*SACCT_JSON, "-X", "-j", job_id])
    if result.ok:
        for raw in _loads(result.stdout, "sacct --json").get("jobs") or []:
            if accounted(raw):
                return False, raw
    raise BackendError(f"no job {job_id}: neither slurmctld nor accounting knows it")


async def _record(transport: Transport, job_id: str) -> Options:
    """The job's options: from slurmctld (squeue JSON) while it holds the job, else from accounting."""
    base, _, task = job_id.partition("_")

    def held(raw: Mapping[str, Any]) -> bool:
        array = str(raw.get("array_job_id") or "")
        return (str(raw.get("job_id")) == base and not task and array in ("", "0", base)) or (
            bool(task) and array == base and str(raw.get("array_task_id")) == task
        )

    in_squeue, raw = await job_record(transport, job_id, held)
    return options_from_squeue(raw) if in_squeue else options_from_sacct(raw)


def format_minutes(total: int) -> str:
    """Minutes as sbatch's ``[D-]HH:MM:00``."""
    days, rest = divmod(total, 1440)
    return (f"{days}-" if days else "") + f"{rest // 60:02d}:{rest % 60:02d}:00"


async def suggest(transport: Transport, job_id: str, args: Mapping[str, str]) -> dict[str, str]:
    """resubmit's time and memory for the new job, after ``apply_args`` (``more`` doubles what ran
    out), for the console to offer prefilled; ``{}`` for the other verbs."""
    opts = await _record(transport, job_id)
    apply_args(opts, args, job_id)
    out = {}
    if opts.time_minutes is not None:
        out["time"] = format_minutes(opts.time_minutes)
    if opts.mem:
        out["mem"] = f"{opts.mem}M"
    return out


async def edit_values(transport: Transport, job_id: str) -> dict[str, str]:
    """edit's fields as the job has them now (``EDIT_KEYS``: time limit, partition, QOS), for the
    console to offer prefilled; a field the job has no value for is left out."""
    opts = await _record(transport, job_id)
    now = {key: opts.pairs.get(key, "") for key in EDIT_KEYS}
    if opts.time_minutes is not None:
        now["time"] = format_minutes(opts.time_minutes)
    return {key: value for key, value in now.items() if value}


async def batch_script(transport: Transport, job_id: str) -> str:
    """The script the job was submitted with: slurmctld's copy, else accounting's (where stored)."""
    result = await transport.run(["scontrol", "write", "batch_script", job_id, "-"])
    if result.ok and result.stdout.strip():
        return result.stdout
    found = await transport.run(["sacct", "-j", job_id, "--batch-script"])
    script = history.batch_script(found.stdout) if found.ok else ""
    if not script:
        why = result.error() if not result.ok else "it has none (not a batch job?)"
        raise BackendError(f"cannot read job {job_id}'s batch script: {why}; accounting keeps none either")
    return script


def _directive(key: str, value: str) -> str:
    quoted = f'"{value}"' if any(c.isspace() for c in value) and '"' not in value else value
    return f"#SBATCH --{key}={quoted}"


def with_options(script: str, opts: Options) -> str:
    """``script`` with ``opts`` (a yanflow tag in the comment left out: the new job gets its own) as
    ``#SBATCH`` lines right after the ``#!`` line, the script's own lines after them. An option the
    script sets to another value (the command line overrode it when the job was submitted) goes after
    the script's last directive instead, where sbatch takes it over the script's."""
    pairs = dict(opts.pairs)
    if opts.time_minutes is not None:
        pairs["time"] = str(opts.time_minutes)
    if opts.mem:
        pairs["mem-per-cpu" if opts.mem_per_cpu else "mem"] = f"{opts.mem}M"
    if pairs.get("comment", "").startswith("yanflow:"):
        del pairs["comment"]
    try:
        own = {name: value for _, name, value in nativefile.sbatch_options(script, "<batch script>")}
    except SpecError:
        own = {}
    first = [_directive(k, v) for k, v in pairs.items() if v and k not in own]
    late = [_directive(k, v) for k, v in pairs.items() if v and k in own and own[k] != v]
    lines = script.splitlines(keepends=True)
    shebang = 1 if lines and lines[0].startswith("#!") else 0
    last = nativefile.sbatch_header(script)[1] if own else shebang
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    head, middle, body = lines[:shebang], lines[shebang:last], lines[last:]
    return "".join(head + [f"{line}\n" for line in first] + middle + [f"{line}\n" for line in late] + body)


async def job_file(transport: Transport, job_id: str, args: Mapping[str, str]) -> tuple[str, str, dict[str, str]]:
    """The job as an sbatch script to submit again from the form (``Backend.job_file``): its script
    with the options it ran with, and the form's time limit and memory per node after ``apply_args``
    (``more`` doubles what ran out). Memory per CPU has no form field: its new value is in the script."""
    opts = await _record(transport, job_id)
    larger = copy.deepcopy(opts)
    apply_args(larger, args, job_id)
    script = await batch_script(transport, job_id)
    if opts.mem_per_cpu:
        opts.mem = larger.mem
    values = {}
    if larger.time_minutes is not None:
        values["slurm.time"] = format_minutes(larger.time_minutes)
    if larger.mem and not larger.mem_per_cpu:
        values["resources.memory"] = f"{larger.mem}M"
    name = f"job-{job_id}.sbatch"
    return name, with_options(script, opts), values


async def resubmit(transport: Transport, job_id: str, args: Mapping[str, str]) -> str:
    opts = await _record(transport, job_id)
    changed = apply_args(opts, args, job_id)
    script = await batch_script(transport, job_id)
    result = await transport.run(opts.argv(new_submit_tag()), stdin_data=script)
    new_id = result.stdout.strip().split(";")[0] if result.ok else ""
    if not new_id.isdigit():
        raise BackendError(f"resubmit of {job_id} failed: {result.error() if not result.ok else result.stdout}")
    return f"resubmitted {job_id} as {new_id}" + (f" ({changed})" if changed else "")


async def _scontrol(transport: Transport, argv: Sequence[str], what: str) -> None:
    result = await transport.run(["scontrol", *argv])
    if not result.ok:
        raise BackendError(f"{what} failed: {result.error()}")


async def perform(transport: Transport, job_id: str, action: str, args: Mapping[str, str]) -> str:
    if action == "resubmit":
        return await resubmit(transport, job_id, args)
    if action in ("hold", "release", "requeue"):
        await _scontrol(transport, [action, job_id], f"{action} {job_id}")
        return ""
    if action == "edit":
        pairs = []
        for key, value in args.items():
            if not value:
                continue
            value = check_time(value) if key == "time" else check_name(key, value)
            pairs.append(f"{EDIT_KEYS[key]}={value}")
        if not pairs:
            raise BackendError("edit: give a new time limit, partition or QOS")
        await _scontrol(transport, ["update", f"JobId={job_id}", *pairs], f"edit {job_id}")
        return "set " + ", ".join(pairs)
    if action == "signal":
        signal = check_signal(args.get("signal", ""))
        result = await transport.run(["scancel", "--full", f"--signal={signal}", "--", job_id])
        if not result.ok:
            raise BackendError(f"signal {signal} to {job_id} failed: {result.error()}")
        return f"sent SIG{signal} to {job_id}"
    raise BackendError(f"Slurm has no verb {action!r}")


def check_args(action: str, args: Mapping[str, str]) -> None:
    """Validate typed values before any I/O."""
    if action == "resubmit":
        if args.get("time"):
            check_time(args["time"])
        if args.get("mem"):
            mem_mb(args["mem"])
    elif action == "edit":
        for key, value in args.items():
            if value:
                check_time(value) if key == "time" else check_name(key, value)
    elif action == "signal":
        check_signal(args.get("signal", ""))


async def efficiency(transport: Transport, job_ids: Sequence[str]) -> dict[str, Efficiency]:
    """seff's figures for ``job_ids`` (one sacct query; one sstat for those running)."""
    if not job_ids:
        return {}
    result = await transport.run([*SACCT_JSON, "-j", ",".join(job_ids)])
    if not result.ok:
        raise BackendError(f"efficiency needs accounting: sacct failed: {result.error()}")
    out: dict[str, Efficiency] = {}
    for raw in _loads(result.stdout, "sacct --json").get("jobs") or []:
        array = raw.get("array") or {}
        task = array.get("task_id") if isinstance(array, dict) else None
        task_id = count(task)
        job_id = f"{_int(array.get('job_id'), 0)}_{task_id}" if task_id is not None else str(raw.get("job_id"))
        eff = efficiency_from_sacct(raw)
        if eff is not None and job_id in job_ids:
            out[job_id] = eff
        elif eff is not None and str(raw.get("job_id")) in job_ids:
            out[str(raw.get("job_id"))] = eff
    running = [job_id for job_id, eff in out.items() if eff.running]
    if running:
        live = await transport.run(["sstat", "-a", "-n", "-P", "-o", "JobID,TRESUsageInTot", "-j", ",".join(running)])
        usage = sstat_usage(live.stdout) if live.ok else {}
        for job_id in running:
            out[job_id] = with_live_usage(out[job_id], usage.get(job_id.split("_")[0]))
    return out
