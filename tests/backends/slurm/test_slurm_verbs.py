"""Slurm's job verbs (resubmit, hold/release, requeue, edit, signal) against the REAL loopback cluster
over SSH: each must change what ``scontrol show job`` shows, and each is refused by the read-only gate
before any command runs."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from slurmhelpers import slurm, ssh_cluster
from waiting import wait_until

from yanflow_tui import cli
from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.backends.slurm.verbs import ACTIONS
from yanflow_tui.errors import BackendError, ReadOnlyError


def shown(job_id: str) -> dict[str, str]:
    """``scontrol show job -o`` as key -> value (values without spaces are all we compare)."""
    line = slurm("scontrol", "-o", "show", "job", job_id)
    return dict(re.findall(r"(\S+?)=(\S*)", line))


def sbatch(*options: str, seconds: int = 120) -> str:
    out = slurm(
        "sbatch", "--parsable", "-p", "cpu", "--mem=100M", "-o", "/dev/null", *options, f"--wrap=sleep {seconds}"
    )
    return out.strip().split(";")[0]


@pytest.fixture
async def backend(slurm_dir):
    b = SlurmBackend(ssh_cluster())
    yield b
    await b.close()


async def test_hold_then_release_a_pending_job(backend, slurm_jobs):
    job_id = slurm_jobs.add(sbatch("--begin=now+1hour", "-t", "00:05:00"))
    assert shown(job_id)["Reason"] == "BeginTime"
    await backend.perform(job_id, "hold")
    assert shown(job_id)["Reason"].startswith("JobHeld") and shown(job_id)["Priority"] == "0"
    await backend.perform(job_id, "release")
    assert shown(job_id)["Reason"].startswith("JobHeld") is False and shown(job_id)["Priority"] != "0"


async def test_edit_a_pending_jobs_time_limit_partition_and_qos_checked_first(backend, slurm_jobs):
    job_id = slurm_jobs.add(sbatch("--begin=now+1hour", "-t", "00:05:00"))
    said = await backend.perform(job_id, "edit", {"time": "00:17:00"})
    assert shown(job_id)["TimeLimit"] == "00:17:00" and "TimeLimit=00:17:00" in said
    await backend.perform(job_id, "edit", {"partition": "gpu"})
    assert shown(job_id)["Partition"] == "gpu"
    before = len(backend.transport.history)
    for bad in ({"time": "1 hour"}, {"partition": "gpu JobId=1"}, {"qos": "-x"}, {}):
        with pytest.raises(BackendError, match="not a|give a new"):
            await backend.perform(job_id, "edit", bad)
    assert len(backend.transport.history) == before  # refused before any command
    with pytest.raises(BackendError, match="edit .* failed"):  # Slurm's own refusal, said clearly
        await backend.perform(job_id, "edit", {"partition": "no-such-partition"})
    assert shown(job_id)["TimeLimit"] == "00:17:00"


async def test_requeue_a_running_job(backend, slurm_jobs):
    job_id = slurm_jobs.add(sbatch("-t", "00:05:00"))
    wait_until(lambda: shown(job_id)["JobState"] == "RUNNING", 30, "running")
    await backend.perform(job_id, "requeue")
    wait_until(lambda: shown(job_id)["Restarts"] == "1", 20, "requeued")
    assert shown(job_id)["JobState"] in ("PENDING", "REQUEUED", "RUNNING", "CONFIGURING", "COMPLETING")


async def test_signal_term_ends_the_job_with_that_signal(backend, slurm_jobs):
    job_id = slurm_jobs.add(sbatch("-t", "00:05:00"))
    wait_until(lambda: shown(job_id)["JobState"] == "RUNNING", 30, "running")
    with pytest.raises(BackendError, match="not a signal offered"):
        await backend.perform(job_id, "signal", {"signal": "SEGV; rm"})
    assert "sent SIGTERM" in await backend.perform(job_id, "signal", {"signal": "term"})
    wait_until(lambda: shown(job_id)["JobState"] != "RUNNING", 20, "signalled")
    assert shown(job_id)["ExitCode"] == "0:15"


async def test_signal_stop_stops_a_running_job(backend, slurm_jobs):
    job_id = slurm_jobs.add(sbatch("-t", "00:05:00"))
    wait_until(lambda: shown(job_id)["JobState"] == "RUNNING", 30, "running")
    await backend.perform(job_id, "signal", {"signal": "STOP"})
    wait_until(lambda: shown(job_id)["JobState"] == "STOPPED", 20, "stopped")


async def test_resubmit_sends_the_same_script_with_the_same_options(backend, slurm_jobs):
    job_id = slurm_jobs.add(sbatch("--begin=now+1hour", "-t", "00:07:00", "-J", "yf-again", "-c", "2", "--mem=300M"))
    said = await backend.perform(job_id, "resubmit")
    new_id = slurm_jobs.add(said.split(" as ")[1].split()[0])
    old, new = shown(job_id), shown(new_id)
    for key in ("JobName", "Partition", "TimeLimit", "NumCPUs", "MinMemoryNode", "WorkDir", "StdOut"):
        assert new[key] == old[key], key
    assert slurm("scontrol", "write", "batch_script", new_id, "-") == slurm(
        "scontrol", "write", "batch_script", job_id, "-"
    )
    assert new["JobState"] == "PENDING" and new["Reason"] != "BeginTime"  # --begin is not carried over


async def test_resubmit_with_a_longer_time_and_more_refused_unless_it_ran_out(backend, slurm_jobs):
    job_id = slurm_jobs.add(sbatch("--begin=now+1hour", "-t", "00:05:00", "-J", "yf-longer"))
    said = await backend.perform(job_id, "resubmit", {"time": "00:20:00"})
    new_id = slurm_jobs.add(said.split(" as ")[1].split()[0])
    assert shown(new_id)["TimeLimit"] == "00:20:00" and shown(new_id)["JobName"] == "yf-longer"
    sbatches = [a for a in backend.transport.history if a[0] == "sbatch"]
    with pytest.raises(
        BackendError, match=f"only for a job that ended by TIMEOUT .*; job {job_id} is PENDING: nothing done"
    ):
        await backend.perform(job_id, "resubmit", {"more": "yes"})
    assert [a for a in backend.transport.history if a[0] == "sbatch"] == sbatches  # nothing sent


def test_cli_verbs_change_what_scontrol_shows(slurm_dir, slurm_jobs, capsys):
    job_id = slurm_jobs.add(sbatch("--begin=now+1hour", "-t", "00:05:00"))
    config = ["--config", str(slurm_dir / "yanflow.yaml")]
    assert cli.main([*config, "hold", job_id]) == 0
    assert shown(job_id)["Reason"].startswith("JobHeld")
    assert cli.main([*config, "release", job_id]) == 0
    assert shown(job_id)["Reason"].startswith("JobHeld") is False
    assert cli.main([*config, "edit", job_id, "--time", "00:09:00"]) == 0
    assert shown(job_id)["TimeLimit"] == "00:09:00"
    capsys.readouterr()
    assert cli.main([*config, "resubmit", job_id, "--time", "00:11:00"]) == 0
    new_id = re.search(r"as (\d+)", capsys.readouterr().err).group(1)
    slurm_jobs.add(new_id)
    assert shown(new_id)["TimeLimit"] == "00:11:00"
    assert cli.main([*config, "edit", job_id, "--time", "soon"]) == 1
    assert "not a Slurm time limit" in capsys.readouterr().err


@pytest.mark.parametrize("verb", ACTIONS)
async def test_read_only_refuses_every_verb_before_any_command(slurm_dir, verb):
    b = SlurmBackend(replace(ssh_cluster(), read_only=True))
    try:
        with pytest.raises(ReadOnlyError, match=f"read-only: {verb} refused"):
            await b.perform("1", verb, {"signal": "TERM"} if verb == "signal" else None)
        assert b.transport.history == []
    finally:
        await b.close()


@pytest.mark.parametrize("verb", ACTIONS)
def test_read_only_cli_refuses_every_verb(slurm_dir, slurm_jobs, capsys, verb):
    job_id = slurm_jobs.add(sbatch("--begin=now+1hour", "-t", "00:05:00"))
    argv = ["--config", str(slurm_dir / "yanflow.yaml"), "--read-only", verb, job_id]
    argv += {"edit": ["--time", "00:09:00"], "signal": ["--signal", "KILL"]}.get(verb, [])
    assert cli.main(argv) == 1
    assert f"read-only: {verb} refused" in capsys.readouterr().err
    assert shown(job_id)["TimeLimit"] == "00:05:00" and shown(job_id)["Reason"] == "BeginTime"


def test_the_job_file_has_the_recorded_options_after_the_shebang_and_the_script_s_own_lines_after_them():
    """Pure: what ``M`` loads into the form. A yanflow tag is left out (the new job gets its own); an
    option the script sets otherwise (the command line overrode it) comes after the script's lines."""
    from yanflow_tui.backends.slurm.verbs import Options, with_options

    opts = Options()
    opts.pairs = {"job-name": "train", "partition": "batch", "comment": "yanflow:OLD", "output": "/tmp/a b.out"}
    opts.time_minutes, opts.mem = 10, 100
    script = "#!/bin/bash\n#SBATCH -p gpu\n#SBATCH --job-name=train\necho body\n"
    assert with_options(script, opts) == (
        "#!/bin/bash\n"
        '#SBATCH --output="/tmp/a b.out"\n#SBATCH --time=10\n#SBATCH --mem=100M\n'
        "#SBATCH -p gpu\n#SBATCH --job-name=train\n"
        "#SBATCH --partition=batch\n"
        "echo body\n"
    )
    opts.pairs["comment"] = "mine"
    wrapped = with_options("#!/bin/sh\n# This script was created by sbatch --wrap.\n\nsleep 300", opts)
    assert wrapped.startswith("#!/bin/sh\n#SBATCH --job-name=train\n") and "#SBATCH --comment=mine\n" in wrapped
    assert wrapped.endswith("# This script was created by sbatch --wrap.\n\nsleep 300\n")
