"""Slurm history: ``sacct --json`` of three data_parser versions, where a finished job's output went,
the history window, and, on the REAL site cluster (accounting through slurmdbd and MariaDB, jobs
purged 5 s after they end), a finished job's StdOut and StdErr after slurmctld has forgotten it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess

import pytest
from paths import DATA as TEST_DATA
from sitehelpers import SITE_CONF, SITE_CONFIG, SITE_JOBS, accounted, known_to_slurmctld, site_cluster
from waiting import wait_until

from yanflow_tui import cli
from yanflow_tui.backends.slurm import history
from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.errors import BackendError
from yanflow_tui.model import JobState

DATA = TEST_DATA / "slurm"


# -- sacct JSON, three versions -----------------------------------------------------------------------


def test_sacct_22_05_as_recorded():
    """``sacct --json`` of Slurm 22.05.8 (dbv0.0.38), recorded on the site cluster: a 2-task array with
    one h100 each, a 2-node job with 4 h100 per node that exited 3, and a cancelled job."""
    raws = {r.display_id: r for r in history.parse_sacct_json((DATA / "sacct-22.05.json").read_text())}
    assert set(raws) == {"3_0", "3_1", "4", "5"}
    task = raws["3_1"]
    assert (task.job_id, task.array_job_id, task.array_task, task.name) == ("3", "3", "1", "rec-array")
    assert task.gpus == 1 and task.nodes == ("hx-n1",) and task.workdir == "/tmp/yanflow-slurm-site/jobs"
    failed = raws["4"]
    assert failed.state == "FAILED" and failed.gpus == 8 and failed.nodes == ("hx-n2", "hx-n3")
    assert failed.exit_code is None  # 22.05 says return_code 0 ("SUCCESS") for exit 3: unknown, not 0
    assert failed.comment == "" and failed.cpus == 2 and failed.partition == "batch"
    assert raws["5"].state == "CANCELLED" and raws["5"].nodes == ("hx-c1",)
    assert raws["3_0"].job_id == "6"  # a task has a job id of its own; %j expands to it


def _v0_0_39_job() -> dict:
    """A job as Slurm 23.02's data_parser v0.0.39 writes it (``PARSER_ARRAY(JOB)`` in
    src/plugins/data_parser/v0.0.39/parsers.c at tag slurm-23-02-7-1): plain numbers, a string
    state, ``comment/job``, ``submit_line`` and ``script``, no stdout."""
    return {
        "account": "ml",
        "comment": {"administrator": None, "job": "yanflow:abc", "system": None},
        "allocation_nodes": 2,
        "array": {"job_id": 0, "limits": {"max": {"running": {"tasks": 0}}}, "task": None, "task_id": None},
        "cluster": "c",
        "derived_exit_code": {"status": "SUCCESS", "return_code": 0},
        "exit_code": {"status": "ERROR", "return_code": 2},
        "job_id": 812,
        "name": "train run",
        "nodes": "node[7-8]",
        "partition": "a100q",
        "qos": "normal",
        "required": {"CPUs": 16, "memory": 0},
        "state": {"current": "FAILED", "reason": "NonZeroExitCode"},
        "submit_line": "sbatch -e /scratch/%u/%x.err run.sbatch",
        "script": "#!/bin/bash\n#SBATCH --output=logs/%x-%j.log\n#SBATCH -N 2\nsrun train\n",
        "time": {
            "elapsed": 60,
            "eligible": 1700000000,
            "end": 1700000060,
            "start": 1700000000,
            "submission": 1699999990,
            "suspended": 0,
            "limit": 1440,
        },
        "tres": {
            "allocated": [
                {"type": "cpu", "name": None, "id": 1, "count": 16},
                {"type": "gres", "name": "gpu", "id": 1001, "count": 16},
            ]
        },
        "user": "alice",
        "working_directory": "/home/alice/proj",
    }


def test_sacct_v0_0_39_shape():
    (raw,) = history.parse_sacct_json(json.dumps({"jobs": [_v0_0_39_job()]}))
    assert (raw.display_id, raw.name, raw.user, raw.state) == ("812", "train run", "alice", "FAILED")
    assert raw.exit_code == 2 and raw.gpus == 16 and raw.nodes == ("node7", "node8")
    assert raw.comment == "yanflow:abc" and raw.time_limit == "1-00:00:00" and raw.cpus == 16
    # the submit line's -e overrides; the script's --output is relative to the working directory
    assert history.log_paths(raw) == ("/home/alice/proj/logs/train run-812.log", "/scratch/alice/train run.err")


def _v0_0_41_job() -> dict:
    """A job as Slurm 24.05's data_parser v0.0.41 writes it (``PARSER_ARRAY(JOB)`` in
    src/plugins/data_parser/v0.0.41/parsers.c at tag slurm-24-05-5-1): ``*_NO_VAL`` numbers as
    ``{"set", "infinite", "number"}``, the state a list of flags, the exit code's status a list, and
    ``stdout``/``stderr`` with their ``*_expanded`` forms."""
    number = lambda n: {"set": True, "infinite": False, "number": n}  # noqa: E731
    return {
        "account": "ml",
        "comment": {"administrator": "", "job": "", "system": ""},
        "array": {"job_id": 900, "limits": {"max": {"running": {"tasks": 0}}}, "task": "", "task_id": number(3)},
        "exit_code": {"status": ["ERROR"], "return_code": number(137), "signal": {"id": number(0), "name": ""}},
        "job_id": 904,
        "name": "sweep",
        "nodes": "gpu-a12",
        "partition": "h100",
        "required": {"CPUs": 8, "memory_per_cpu": {"set": False, "infinite": False, "number": 0}},
        "state": {"current": ["OUT_OF_MEMORY"], "reason": "OutOfMemory"},
        "stdout": "/out/%A_%a.out",
        "stdout_expanded": "/out/900_3.out",
        "stderr": "/out/%A_%a.err",
        "stderr_expanded": "/out/900_3.err",
        "submit_line": "sbatch --array=0-7 sweep.sh",
        "time": {
            "elapsed": 5,
            "eligible": 1700000000,
            "end": 1700000005,
            "start": 1700000000,
            "submission": 1699999999,
            "limit": {"set": True, "infinite": True, "number": 0},
        },
        "tres": {"allocated": [{"type": "gres", "name": "gpu:h100", "id": 1002, "count": 2}]},
        "user": "bob",
        "working_directory": "/home/bob",
    }


def test_sacct_v0_0_41_shape():
    (raw,) = history.parse_sacct_json(json.dumps({"jobs": [_v0_0_41_job()]}))
    assert (raw.display_id, raw.state, raw.exit_code, raw.gpus) == ("900_3", "OUT_OF_MEMORY", 137, 2)
    assert raw.time_limit == "UNLIMITED" and raw.comment == ""
    assert history.log_paths(raw) == ("/out/900_3.out", "/out/900_3.err")
    from yanflow_tui.backends.slurm.parse import normalise_state

    assert normalise_state(raw.state) is JobState.FAILED


def test_sacct_garbage_is_a_clear_error():
    with pytest.raises(BackendError, match="sacct --json printed something that is not JSON"):
        history.parse_sacct_json("sacct: error: Problem talking to the database")


# -- where output went ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "script, expected",
    [
        (
            "#!/bin/bash\n#SBATCH -o out-%j.txt\n#SBATCH -e err-%j.txt\necho\n",
            {"stdout": "out-%j.txt", "stderr": "err-%j.txt"},
        ),
        ("#!/bin/bash\n#SBATCH --output=a.log --error b.log\n", {"stdout": "a.log", "stderr": "b.log"}),
        ("#!/bin/sh\n#SBATCH -oa.log\n\n# a comment\n#SBATCH -eb.log\n", {"stdout": "a.log", "stderr": "b.log"}),
        # sbatch stops reading directives at the first command
        ("#!/bin/bash\necho hi\n#SBATCH -o late.log\n", {}),
        ('#!/bin/bash\n#SBATCH -o "my dir/%x.out"  # where it goes\n', {"stdout": "my dir/%x.out"}),
        ("#!/bin/bash\n#SBATCH --open-mode=append\n#SBATCH --export=ALL\n", {}),
    ],
)
def test_script_outputs_read_directives_like_sbatch(script, expected):
    assert history.script_outputs(script) == expected


def test_batch_script_from_sacct_output():
    assert (
        history.batch_script("Batch Script for 7\n" + "-" * 80 + "\n#!/bin/bash\necho hi\n") == "#!/bin/bash\necho hi\n"
    )
    assert history.batch_script("Batch Script for 7\n" + "-" * 80 + "\nNONE\n") == ""
    assert history.batch_script("") == ""


def test_history_windows():
    assert history.starttime(history.check_window("7d")) == "now-7days"
    assert history.starttime(history.check_window("12h")) == "now-12hours"
    assert history.starttime(history.check_window(" 2w ")) == "now-2weeks"
    assert history.describe_window("1d") == "the last 1 day"
    assert [history.widen(w) for w in ("12h", "1d", "7d", "2w", "365d")] == ["1d", "7d", "30d", "30d", "365d"]
    for bad in ("7", "d", "0d", "-1d", "7 days", "1y"):
        with pytest.raises(BackendError, match="history: expected a duration like 12h, 7d or 2w"):
            history.check_window(bad, "hpc")


def test_config_takes_history_and_reports_a_bad_one(tmp_path):
    from yanflow_tui.config import load_config

    path = tmp_path / "c.yaml"
    path.write_text("clusters:\n  - name: hpc\n    kind: slurm\n    history: 7d\n")
    backend = SlurmBackend(load_config(str(path)).clusters[0])
    assert backend.history_window == "7d"
    assert backend.widen_history() == "history: the last 30 days"
    path.write_text("clusters:\n  - name: hpc\n    kind: slurm\n    history: forever\n")
    with pytest.raises(BackendError, match="cluster 'hpc': history: expected a duration"):
        SlurmBackend(load_config(str(path)).clusters[0])


@contextlib.asynccontextmanager
async def site_backend():
    backend = SlurmBackend(site_cluster())
    try:
        yield backend
    finally:
        await backend.close()


# -- the real site cluster --------------------------------------------------------------------------------


def _sbatch_stdin(name: str, script: str) -> str:
    """sbatch a script on stdin, as a user at the site would, from the jobs folder."""
    result = subprocess.run(
        ["sbatch", "--parsable", "-J", name],
        input=script,
        capture_output=True,
        text=True,
        env=dict(os.environ, SLURM_CONF=str(SITE_CONF)),
        timeout=60,
        cwd=SITE_JOBS,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().split(";")[0]


def _purged_job(jobs: list[str], name: str, script: str) -> str:
    """Submit ``script``, and wait until it has ended and slurmctld has forgotten it."""
    job_id = _sbatch_stdin(name, script)
    jobs.append(job_id)
    _purged(job_id)
    return job_id


def _purged(job_id: str) -> None:
    """Wait until the job has ended and slurmctld has forgotten it (MinJobAge=5 on the site cluster)."""
    wait_until(
        lambda: not known_to_slurmctld(job_id) and accounted(job_id),
        timeout=90,
        what=f"job {job_id} purged from slurmctld",
    )


SCRIPT = """#!/bin/bash
#SBATCH -p batch
#SBATCH --gres=gpu:h100:1
#SBATCH -o {dir}/%x-%j.out
#SBATCH --error={dir}/%x-%j.err
for i in 1 2 3; do echo "out $i"; echo "err $i" >&2; done
"""


async def test_a_purged_jobs_stdout_and_stderr_open_as_two_logs(site_jobs):
    job_id = _purged_job(site_jobs, "hist-two", SCRIPT.format(dir=SITE_JOBS))
    async with site_backend() as backend:
        assert await backend.log_streams(job_id) == ("", "stderr")
        out = [line.text async for line in backend.stream_logs(job_id, follow=True)]
        err = [line.text async for line in backend.stream_logs(job_id, follow=True, stream="stderr")]
        assert out == ["out 1", "out 2", "out 3"] and err == ["err 1", "err 2", "err 3"]
        described = await backend.describe(job_id)
        assert f"{SITE_JOBS}/hist-two-{job_id}.out" in described  # expanded, not %x-%j
        assert f"{SITE_JOBS}/hist-two-{job_id}.err" in described
        job = await backend.get_job(job_id)
        assert job.state is JobState.COMPLETED


async def test_a_purged_jobs_shared_output_is_one_log_at_slurms_default_name(site_jobs):
    job_id = _purged_job(site_jobs, "hist-one", "#!/bin/bash\n#SBATCH -p serial\necho to-out; echo to-err >&2\n")
    async with site_backend() as backend:
        assert await backend.log_streams(job_id) == ("",)
        out = [line.text async for line in backend.stream_logs(job_id)]
        assert sorted(out) == ["to-err", "to-out"]  # slurm-%j.out in the submit directory
        assert (SITE_JOBS / f"slurm-{job_id}.out").is_file()


def test_cli_logs_of_a_purged_job_and_its_stderr(site_jobs, capsys):
    job_id = _purged_job(site_jobs, "hist-cli", SCRIPT.format(dir=SITE_JOBS))
    assert cli.main(["--config", str(SITE_CONFIG), "logs", job_id]) == 0
    assert capsys.readouterr().out.splitlines() == ["out 1", "out 2", "out 3"]
    assert cli.main(["--config", str(SITE_CONFIG), "logs", job_id, "--stream", "stderr"]) == 0
    assert capsys.readouterr().out.splitlines() == ["err 1", "err 2", "err 3"]
    assert cli.main(["--config", str(SITE_CONFIG), "logs", job_id, "--stream", "stdin"]) != 0
    assert "no separate 'stdin' log" in capsys.readouterr().err


async def test_history_lists_finished_jobs_within_the_window(site_jobs):
    job_id = _purged_job(site_jobs, "hist-list", "#!/bin/bash\n#SBATCH -p serial\n#SBATCH -o /dev/null\ntrue\n")
    async with site_backend() as backend:
        jobs = {j.id: j for j in await backend.list_jobs()}
        assert job_id in jobs and jobs[job_id].state is JobState.COMPLETED
        assert backend.notice == ""  # accounting is there: no "history needs accounting" note


async def test_console_opens_a_purged_jobs_stdout_and_stderr_panes_and_widens_history(home, site_jobs):
    from dataclasses import replace

    from uihelpers import log_lines, make_app
    from waiting import wait_for

    from yanflow_tui.screens.logs.screen import LogsScreen
    from yanflow_tui.screens.queue import JobTable

    job_id = _purged_job(site_jobs, "hist-ui", SCRIPT.format(dir=SITE_JOBS))
    cluster = replace(site_cluster(), refresh_seconds=0.5)
    app = make_app(cluster)
    async with app.run_test(size=(160, 45)) as pilot:
        key = f"{cluster.name}/{job_id}"
        await wait_for(
            pilot,
            lambda: key in app.screen.query_one(JobTable).row_keys,
            timeout=30,
            what="the finished job listed from accounting",
        )
        app.screen.query_one(JobTable).move_cursor_to_key(key)
        await pilot.press("l")
        await wait_for(
            pilot,
            lambda: (
                isinstance(app.screen, LogsScreen)
                and len(app.screen.panes) == 2
                and all(
                    log_lines(p) == [f"{w} {i}" for i in (1, 2, 3)] for p, w in zip(app.screen.panes, ("out", "err"))
                )
            ),
            timeout=30,
            what="a StdOut pane and a StdErr pane with the job's lines",
        )
        assert [p.stream for p in app.screen.panes] == ["", "stderr"]
        await pilot.press("1")
        backend = app.hub.backend(cluster.name)
        assert backend.history_window == "1d"
        await pilot.press("H")
        assert backend.history_window == "7d"
        await wait_for(
            pilot,
            lambda: any("history: the last 7 days" in n.message for n in app._notifications),
            what="the widened window said",
        )


# -- the samples run on a cluster unlike the one they were written beside -----------------------------


def test_each_slurm_runnable_sample_submits_and_runs_on_the_site_cluster(site_jobs, capsys):
    """The site cluster has other node names, h100 GPUs and other partitions than the test cluster:
    a sample pinned to either would fail here."""
    from sitehelpers import ROOT

    from yanflow_tui.spec import load_spec

    runnable = [
        p
        for p in sorted((ROOT / "sample_jobs").glob("*.yaml"))
        if SlurmBackend(site_cluster()).capabilities.job_kinds.__contains__(load_spec(p).kind)
        and not load_spec(p).image
    ]
    assert {p.stem for p in runnable} >= {"slurm-batch", "local-shell"}
    for path in runnable:
        assert cli.main(["--config", str(SITE_CONFIG), "submit", str(path)]) == 0, path
        job_id = capsys.readouterr().out.strip()
        site_jobs.append(job_id)
        wait_until(
            lambda job_id=job_id: (
                (accounted(job_id) or {}).get("state", {}).get("current")
                in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY")
            ),
            timeout=120,
            what=f"{path.name} (job {job_id}) to end",
        )
        record = accounted(job_id)
        assert record["state"]["current"] == "COMPLETED", (path.name, record["state"])
        assert cli.main(["--config", str(SITE_CONFIG), "logs", job_id]) == 0
        out = capsys.readouterr().out
        assert "done" in out.splitlines(), (path.name, out[-300:])


async def test_a_followed_log_reads_its_jobs_state_from_the_refresh_not_its_own_squeue(site_jobs):
    """While the console refreshes the queue, a followed log asks slurmctld nothing more to know when
    its job ends (22.05: each ``squeue -j`` is one more job query a minute per 2 s of polling)."""
    job_id = _sbatch_stdin(
        "follow-cheap",
        "#!/bin/bash\n#SBATCH -p serial\n#SBATCH -o %x-%j.out\nfor i in 1 2 3 4 5 6; do echo line $i; sleep 1; done\n",
    )
    site_jobs.append(job_id)
    async with site_backend() as backend:
        await backend.list_jobs()

        async def refresh():  # the console's refresh loop
            while True:
                await asyncio.sleep(1)  # its refresh interval: the scenario, not a wait for something
                await backend.list_jobs()

        refresher = asyncio.create_task(refresh())
        try:
            start = len(backend.transport.history)
            lines = [line.text async for line in backend.stream_logs(job_id, follow=True) if not line.status]
        finally:
            refresher.cancel()
        polls = [argv for argv in backend.transport.history[start:] if "-j" in argv and "squeue" in argv]
    assert lines == [f"line {i}" for i in range(1, 7)]
    assert polls == []
