"""seff's figures for Slurm jobs: from a recorded ``sacct --json`` (22.05, with its steps) and
``sstat`` lines; and on the REAL site cluster (slurmdbd accounting), where the figures of a finished
job must equal seff's arithmetic on the numbers plain ``sacct -P`` prints for it."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from sitehelpers import SITE_CONFIG, known_to_slurmctld, site_cluster, site_sbatch, site_slurm
from waiting import wait_until

from yanflow_tui import cli
from yanflow_tui.backends.slurm import verbs
from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.efficiency import Efficiency

DATA = Path(__file__).resolve().parents[2] / "data" / "slurm"


def site_efficiency(job_id: str) -> Efficiency:
    """The job's figures as a fresh SlurmBackend for the site cluster gives them."""
    eff = site_efficiency_or_none(job_id)
    assert eff is not None, f"no figures for job {job_id}"
    return eff


def site_efficiency_or_none(job_id: str) -> Efficiency | None:
    """The job's figures, or None while accounting does not know the job yet (slurmdbd learns of a
    job a moment after slurmctld, longer on a loaded machine)."""

    async def figures():
        backend = SlurmBackend(site_cluster())
        try:
            return (await backend.efficiency([job_id])).get(job_id)
        finally:
            await backend.close()

    return asyncio.run(figures())


def test_recorded_sacct_json_gives_seffs_figures():
    raw = json.loads((DATA / "sacct-steps-22.05.json").read_text())["jobs"][0]
    eff = verbs.efficiency_from_sacct(raw)
    assert eff is not None and not eff.running
    step = raw["steps"][0]["time"]["total"]  # one step (batch): 26 s 584901 us
    assert eff.cpu_seconds == step["seconds"] + int(step["microseconds"] / 1e6 + 0.5) == 27
    assert (eff.cores, eff.nodes, eff.elapsed_seconds) == (2, 1, 36)
    assert eff.memory_used_kb == 99115008 / 1024 == 96792  # tres_usage_in_tot mem, bytes
    assert eff.memory_kb == 300 * 1024 and eff.time_limit_seconds == 240
    assert dict(eff.lines())["CPU Efficiency"] == "37.50% of 00:01:12 core-walltime"


def test_a_pending_record_has_no_figures():
    raw = json.loads((DATA / "sacct-steps-22.05.json").read_text())["jobs"][0]
    assert verbs.efficiency_from_sacct({**raw, "state": {"current": "PENDING"}}) is None


def test_sstat_lines_sum_cpu_over_steps_and_take_the_largest_memory():
    text = (
        "313.batch|cpu=00:00:22,energy=0,fs/disk=1690223,mem=96792K,pages=0,vmem=101084K\n"
        "313.0|cpu=01:00:01.600,mem=1.5G\n"
        "314.batch|cpu=2-00:00:00,mem=0\n"
    )
    assert verbs.sstat_usage(text) == {"313": (22 + 3602, 1.5 * 1024 * 1024), "314": (2 * 86400, 0.0)}


def test_resubmit_options_from_records_and_more_after_a_timeout():
    raw = json.loads((DATA / "sacct-steps-22.05.json").read_text())["jobs"][0]
    opts = verbs.options_from_sacct({**raw, "state": {"current": "TIMEOUT"}})
    assert opts.time_minutes == 4 and opts.mem == 300 and opts.pairs["partition"] == "batch"
    assert verbs.apply_args(opts, {"more": "yes"}, "313") == "time 8 min"
    argv = opts.argv("abc123abc123")
    assert "--time=8" in argv and "--mem=300M" in argv and "--comment=yanflow:abc123abc123" in argv
    squeue = {
        "job_state": "OUT_OF_MEMORY", "name": "x y", "partition": "gpu", "node_count": 2, "tasks": 2, "cpus": 8,
        "tres_per_node": "gres:gpu:a100:4", "memory_per_node": 2048, "time_limit": {"set": True, "number": 30},
        "current_working_directory": "/w", "comment": "mine",
    }  # fmt: skip
    opts = verbs.options_from_squeue(squeue)
    assert verbs.apply_args(opts, {"more": "yes"}, "5") == "memory 4096M"
    assert opts.argv("t" * 12)[2:] == [
        "--job-name=x y", "--partition=gpu", "--chdir=/w", "--nodes=2", "--ntasks=2", "--cpus-per-task=4",
        "--gres=gpu:a100:4", "--time=30", "--mem=4096M", "--comment=mine",
    ]  # fmt: skip


def test_typed_values_are_checked():
    assert verbs.minutes("1-02:03:04") == 1440 + 120 + 3 + 1 and verbs.minutes("90") == 90
    assert verbs.minutes("UNLIMITED") is None and verbs.mem_mb("4G") == 4096
    assert verbs.format_minutes(2) == "00:02:00" and verbs.format_minutes(1440 + 90) == "1-01:30:00"
    assert verbs.minutes(verbs.format_minutes(4321)) == 4321
    for bad in ("1 hour", "01:00:00; rm", "-5"):
        try:
            verbs.check_time(bad)
        except Exception as exc:
            assert "not a Slurm time limit" in str(exc)
        else:
            raise AssertionError(bad)


def test_site_finished_job_matches_seffs_arithmetic_on_sacct_numbers(site_dir, site_jobs, capsys):
    job_id = site_sbatch(
        site_jobs, "-p", "batch", "-c", "2", "--mem=200M", "-t", "00:03:00", "-o", "/dev/null",
        "--wrap=python3 -c 'import time; t = time.time()\nwhile time.time() - t < 3: pass'",
    )  # fmt: skip
    wait_until(lambda: not known_to_slurmctld(job_id), 60, "finished and purged")
    fields = "JobID,State,Elapsed,TotalCPU,AllocCPUS,AllocTRES,MaxRSS,Timelimit"

    def accounted() -> list[dict[str, str]]:
        text = site_slurm("sacct", "-j", job_id, "-n", "-P", "-o", fields)
        return [dict(zip(fields.split(","), line.split("|"))) for line in text.splitlines()]

    wait_until(lambda: any(r["JobID"] == f"{job_id}.batch" for r in accounted()), 30, "steps accounted")
    rows = accounted()
    job = rows[0]
    # seff's arithmetic on sacct's own numbers: cput is the steps' CPU time rounded once
    cput = int(seconds(job["TotalCPU"]) + 0.5)
    cores = int(job["AllocCPUS"]) or 1
    elapsed = int(seconds(job["Elapsed"]))
    alloc_kb = int(re.search(r"mem=(\d+)M", job["AllocTRES"]).group(1)) * 1024
    used_kb = max((kib(r["MaxRSS"]) for r in rows[1:]), default=0)

    eff = site_efficiency(job_id)
    assert (eff.cpu_seconds, eff.cores, eff.elapsed_seconds, eff.memory_kb) == (cput, cores, elapsed, alloc_kb)
    assert eff.memory_used_kb == used_kb
    assert f"{eff.cpu_percent:.2f}" == f"{(cput / (elapsed * cores) * 100 if elapsed else 0.0):.2f}"
    assert eff.time_limit_seconds == 180 and cput >= 1  # the job did burn CPU: the test can tell

    assert cli.main(["--config", str(SITE_CONFIG), "jobs", "--json"]) == 0
    listed = {j["id"]: j for j in json.loads(capsys.readouterr().out)["jobs"]}
    assert listed[job_id]["efficiency"]["cpu_seconds"] == cput
    assert listed[job_id]["efficiency"]["cpu_efficiency_percent"] == round(eff.cpu_percent, 2)


def seconds(text: str) -> float:
    """sacct's ``[D-][HH:]MM:SS[.fff]``."""
    days, _, rest = text.rpartition("-")
    total = 0.0
    for part in rest.split(":"):
        total = total * 60 + float(part)
    return total + (int(days) * 86400 if days else 0)


def kib(text: str) -> float:
    if not text:
        return 0.0
    units = {"K": 1, "M": 1024, "G": 1024**2}
    return float(text[:-1]) * units[text[-1]] if text[-1] in units else float(text) / 1024


def test_site_running_job_figures_come_from_sstat(site_dir, site_jobs):
    job_id = site_sbatch(
        site_jobs, "-p", "batch", "--mem=200M", "-t", "00:02:00", "-o", "/dev/null",
        "--wrap=python3 -c 'import time; t = time.time()\nwhile time.time() - t < 60: pass'",
    )  # fmt: skip

    def sampled() -> str:
        text = site_slurm("sstat", "-a", "-n", "-P", "-o", "JobID,TRESUsageInTot", "-j", job_id, check=False)
        return text if re.search(r"cpu=00:00:0[1-9]", text) else ""

    text = wait_until(sampled, 40, "sstat has a sample")

    eff = wait_until(lambda: site_efficiency_or_none(job_id), 40, "accounting knows the running job")
    assert eff.running and eff.state == "RUNNING"
    assert eff.cpu_seconds >= verbs.sstat_usage(text)[job_id][0] >= 1  # sacct has no CPU time yet: sstat's
    assert eff.memory_kb == 200 * 1024 and eff.time_limit_seconds == 120
    assert "sstat" in dict(eff.lines())["Efficiency note"]
