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
from yanflow_tui.backends.slurm.transport import Transport
from yanflow_tui.errors import BackendError
from yanflow_tui.model import JobSpec

Option = tuple[str, str]


def _count(raw: Mapping[str, Any], key: str) -> int:
    """A count of the record (plain, or 23.02+'s ``{"set", "infinite", "number"}``); 0 when unset."""
    return verbs.count(raw.get(key)) or 0


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
    it; ``verbs.options_from_squeue``), its comment left out (the new job carries the console's tag
    there). Each value exactly as recorded: each option is one argv word. Pure."""
    return _options(verbs.options_from_squeue(raw))


def accounting_options(raw: Mapping[str, Any]) -> list[Option]:
    """The options of a ``sacct --json`` record (a job slurmctld no longer holds), as ``verbs`` reads
    them for resubmit, its comment left out. Pure."""
    return _options(verbs.options_from_sacct(raw))


def _options(opts: verbs.Options) -> list[Option]:
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

    def same(raw: Mapping[str, Any]) -> bool:
        return str(raw.get("job_id")) == job_id

    in_squeue, raw = await verbs.job_record(transport, job_id, same, same)
    if in_squeue:
        return recorded_options(raw), refusal(job_id, raw)
    return accounting_options(raw), accounting_refusal(job_id, raw)


async def resubmission(transport: Transport, job_id: str, env: Mapping[str, str]) -> JobSpec:
    """Job ``job_id`` as a spec to submit again (``Backend.native_resubmission``). Reads only."""
    if not job_id.isdigit():
        raise BackendError(f"job {job_id} is a task of a job array or a step: give a plain job id to send again")
    options, refused = await _record(transport, job_id)
    if refused:
        raise BackendError(refused)
    script = await verbs.batch_script(transport, job_id)
    return spec_for(job_id, script, options, env)
