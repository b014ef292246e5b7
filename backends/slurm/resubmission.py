"""A job this console did not submit (sbatch'ed by hand), given back to submit again as Slurm holds it
(``Backend.native_resubmission``, what ``resume`` sends when no spec was kept): its batch script as
slurmctld kept it (``scontrol write batch_script ID -``, accounting's copy for a job slurmctld forgot), read
as an sbatch script of the user's (``nativefile``), with the options the job ran with as ``--key=value``
sbatch arguments (``NativeFile.recorded``: argv words, never a shell line) and the environment to add
(sbatch ``--export=ALL,NAME=value``, ``script.render_native``). The options are read from slurmctld's record
of the job (22.05's ``scontrol show job`` has no JSON: the same record comes from ``squeue --json``), else
from accounting. A job array or a heterogeneous job is refused: one script cannot send it again as it ran.
The mapping from a record to options is pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from yanflow_tui.backends.slurm import nativefile, verbs
from yanflow_tui.backends.slurm.parse import _int, _loads
from yanflow_tui.backends.slurm.transport import Transport
from yanflow_tui.errors import BackendError
from yanflow_tui.model import JobSpec

Option = tuple[str, str]
# Text options of the record, in the order sbatch's manual lists them: option -> squeue --json field.
_TEXT = (
    ("job-name", "name"),
    ("partition", "partition"),
    ("account", "account"),
    ("qos", "qos"),
    ("constraint", "features"),
    ("chdir", "current_working_directory"),
)
_NO_VALUE = ("", "(null)", "N/A")


def _count(raw: Mapping[str, Any], key: str) -> int:
    """A count of the record (plain, or 23.02+'s ``{"set", "infinite", "number"}``); 0 when unset."""
    value = raw.get(key)
    if isinstance(value, dict):
        value = value.get("number") if value.get("set", True) and not value.get("infinite") else 0
    return max(0, _int(value, 0))


def _gres(text: str, prefix: str = "") -> str:
    """A TRES request as sbatch takes it: ``gres:gpu:a100:1,gres:shard:2`` -> ``gpu:a100:1,shard:2``;
    with ``prefix`` (``gpu:``), only those entries, the prefix dropped (``--gpus`` takes ``a100:4``)."""
    items = [item.strip().removeprefix("gres:").removeprefix("gres/") for item in text.split(",") if item.strip()]
    if prefix:
        items = [item.removeprefix(prefix) for item in items if item.startswith(prefix)]
    return ",".join(items)


def refusal(job_id: str, raw: Mapping[str, Any]) -> str:
    """Why the job cannot be sent again as one script ("" when it can)."""
    array = _count(raw, "array_job_id")
    if array or str(raw.get("array_task_string") or "") or raw.get("array_task_id") not in (None, "", 0):
        return (
            f"job {job_id} is a task of job array {array or job_id}: sending its script again would run the "
            "whole array anew; submit the array yourself (sbatch --array=...) with YANFLOW_RESUME_FROM set"
        )
    if _count(raw, "het_job_id") or str(raw.get("het_job_id_set") or ""):
        return (
            f"job {job_id} is a component of a heterogeneous job: one script cannot send its components "
            "again as they ran; submit it yourself with YANFLOW_RESUME_FROM set"
        )
    return ""


def recorded_options(raw: Mapping[str, Any]) -> list[Option]:
    """The sbatch options of a slurmctld record (``squeue --json``'s job, as ``scontrol show job`` shows
    it): name, partition, account, QOS, constraint, workdir, nodes, tasks and tasks per node, CPUs per
    task, the time limit, GPUs and other GRES (per node, per job, per task), memory per node or per CPU,
    and the output and error paths where the job named its own. Each value exactly as recorded (a name
    with quotes, spaces or a newline too: each option is one argv word). Pure."""
    out: list[Option] = []
    for option, key in _TEXT:
        value = str(raw.get(key) or "")
        if value not in _NO_VALUE:
            out.append((option, value))
    nodes, tasks, per_node = _count(raw, "node_count"), _count(raw, "tasks"), _count(raw, "tasks_per_node")
    if nodes:
        out.append(("nodes", str(nodes)))
    if tasks:
        out.append(("ntasks", str(tasks)))
    if per_node:
        out.append(("ntasks-per-node", str(per_node)))
    cpus = _cpus_per_task(raw, tasks, per_node)
    if cpus:
        out.append(("cpus-per-task", str(cpus)))
    limit = raw.get("time_limit")
    if _count(raw, "time_limit") and not (isinstance(limit, dict) and limit.get("infinite")):
        out.append(("time", verbs.format_minutes(_count(raw, "time_limit"))))
    for option, key, prefix in (
        ("gres", "tres_per_node", ""),
        ("gpus", "tres_per_job", "gpu:"),
        ("gpus-per-task", "tres_per_task", "gpu:"),
    ):
        value = _gres(str(raw.get(key) or ""), prefix)
        if value:
            out.append((option, value))
    per_cpu, per_node_mb = _count(raw, "memory_per_cpu"), _count(raw, "memory_per_node")
    if per_cpu:
        out.append(("mem-per-cpu", f"{per_cpu}M"))
    elif per_node_mb:
        out.append(("mem", f"{per_node_mb}M"))
    job_id = str(raw.get("job_id") or "")
    for option, key in (("output", "standard_output"), ("error", "standard_error")):
        path = str(raw.get(key) or "")
        # the job's own path (a pattern as given: %j stays %j); one naming this job is Slurm's expanded default
        if path and not (job_id and job_id in path):
            out.append((option, path))
    return out


def _cpus_per_task(raw: Mapping[str, Any], tasks: int, per_node: int) -> int:
    """CPUs per task: as recorded, else (22.05's JSON leaves it out) the minimum per node over the tasks per
    node, else the CPUs over the tasks where they divide."""
    recorded = _count(raw, "cpus_per_task")
    if recorded:
        return recorded
    per_node_cpus = _count(raw, "minimum_cpus_per_node")
    if per_node and per_node_cpus > per_node and per_node_cpus % per_node == 0:
        return per_node_cpus // per_node
    cpus = _count(raw, "cpus")
    if tasks and cpus > tasks and cpus % tasks == 0:
        return cpus // tasks
    return 0


def accounting_options(raw: Mapping[str, Any]) -> list[Option]:
    """The options of a ``sacct --json`` record (a job slurmctld no longer holds), as ``verbs`` reads
    them for resubmit, its comment left out (the new job carries the console's tag there). Pure."""
    opts = verbs.options_from_sacct(raw)
    out = [(key, value) for key, value in opts.pairs.items() if value and key != "comment"]
    if opts.time_minutes is not None:
        out.append(("time", verbs.format_minutes(opts.time_minutes)))
    if opts.mem:
        out.append(("mem-per-cpu" if opts.mem_per_cpu else "mem", f"{opts.mem}M"))
    return out


def accounting_refusal(job_id: str, raw: Mapping[str, Any]) -> str:
    """``refusal`` for a ``sacct --json`` record."""
    array, het = raw.get("array") or {}, raw.get("het") or {}
    return refusal(
        job_id,
        {
            "array_job_id": array.get("job_id") if isinstance(array, dict) else 0,
            "het_job_id": het.get("job_id") if isinstance(het, dict) else 0,
        },
    )


def spec_for(job_id: str, script: str, options: list[Option], env: Mapping[str, str]) -> JobSpec:
    """The batch script as an sbatch script of the user's (its own directives read as the spec's
    fields), sent as it is with ``options`` on sbatch's command line and ``env`` exported. Pure."""
    spec = nativefile.read_sbatch(script, f"job-{job_id}.sbatch")
    assert spec.native is not None
    native = replace(spec.native, recorded=tuple(options))
    return replace(spec, native=native, env={**spec.env, **env})


async def _record(transport: Transport, job_id: str) -> tuple[list[Option], str]:
    """(the job's options, why it cannot be sent again or ""): slurmctld's record, else accounting's."""
    result = await transport.run(["squeue", "-a", "-t", "all", "-j", job_id, "--json"])
    if result.ok:  # 22.05 answers with every job whatever -j says: the job is picked out here
        for raw in _loads(result.stdout, "squeue --json").get("jobs") or []:
            if str(raw.get("job_id")) == job_id:
                return recorded_options(raw), refusal(job_id, raw)
    result = await transport.run([*verbs.SACCT_JSON, "-X", "-j", job_id])
    if result.ok:
        for raw in _loads(result.stdout, "sacct --json").get("jobs") or []:
            if str(raw.get("job_id")) == job_id:
                return accounting_options(raw), accounting_refusal(job_id, raw)
    raise BackendError(f"no job {job_id}: neither slurmctld nor accounting knows it")


async def resubmission(transport: Transport, job_id: str, env: Mapping[str, str]) -> JobSpec:
    """Job ``job_id`` as a spec to submit again (``Backend.native_resubmission``). Reads only."""
    if not job_id.isdigit():
        raise BackendError(f"job {job_id} is a task of a job array or a step: give a plain job id to send again")
    options, refused = await _record(transport, job_id)
    if refused:
        raise BackendError(refused)
    script = await verbs.batch_script(transport, job_id)
    return spec_for(job_id, script, options, env)
