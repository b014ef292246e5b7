"""The command line against the real Slurm test cluster, as a user's shell script would drive it:
``submit -`` with sbatch-style overrides, a wait with ``jobs --watch --until-done``, results collected
with ``--json`` (checked against the shipped schemas); the exit code and signal of every finished job;
``jobs``' filters and ``describe``. Jobs are named ``cliverbs-*`` and cancelled at teardown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest
from jobhelpers import run_cli
from jsoncontract import run_into_closed_pipe, validated
from slurmhelpers import DIR, slurm

from yanflow_tui.backends.slurm.exitstatus import exit_status, scontrol_codes
from yanflow_tui.cli.context import EXIT_PIPE

CONFIG = str(DIR / "yanflow.yaml")


@pytest.fixture
def tag(slurm_dir):
    """A unique ``cliverbs-*`` name prefix; every job of it is cancelled at teardown."""
    prefix = f"cliverbs-{uuid.uuid4().hex[:8]}"
    yield prefix
    listed = slurm("squeue", "-h", "-a", "-t", "all", "-o", "%A %j", check=False).splitlines()
    mine = sorted({job for job, _, name in (line.strip().partition(" ") for line in listed) if name.startswith(prefix)})
    if mine:  # by id: scancel's --name takes one name, so "a,b" matched no job and held ones were left
        slurm("scancel", *mine, check=False)


def cli(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "yanflow_tui", "--config", CONFIG, *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
        stdin=None if input is not None else subprocess.DEVNULL,
    )


def wait_done(*names: str) -> list[dict]:
    """``jobs --name NAMES --watch --until-done --json``: each line it printed, checked."""
    watch = cli("jobs", "--name", ",".join(names), "--watch", "--until-done", "--json", "--interval", "0.5")
    assert watch.returncode == 0, watch.stderr
    return [validated(line, "jobs") for line in watch.stdout.splitlines()]


def test_a_script_submits_from_stdin_waits_with_watch_and_collects_json(tag):
    spec = f"name: {tag}-run\nkind: slurm\ncommand: echo hello from $SLURM_JOB_ID\nslurm: {{partition: gpu}}\n"
    sent = cli("submit", "-", "--time", "7", "--gpus", "2", "--partition", "gpu", "--json", input=spec)
    assert sent.returncode == 0, sent.stderr
    job_id = validated(sent.stdout, "submit")["submit"]["id"]
    shown = slurm("scontrol", "-o", "show", "job", job_id)
    assert "TimeLimit=00:07:00" in shown and "Partition=gpu" in shown
    assert "gpu:2" in shown or "gres/gpu=2" in shown  # --gpus 2 on its one node
    lines = wait_done(f"{tag}-run")
    (job,) = lines[-1]["jobs"]
    assert (job["id"], job["state"], job["exit_code"], job["signal"]) == (job_id, "completed", 0, 0)
    collected = validated(cli("jobs", "--name", f"{tag}-run", "--json").stdout, "jobs")
    assert [j["id"] for j in collected["jobs"]] == [job_id] and collected["errors"] == []
    described = validated(cli("describe", job_id, "--json").stdout, "describe")
    detail = {f["label"]: f["value"] for f in described["job"]["detail"]}
    assert detail["Time limit"] == "0:07:00" and detail["Partition"] == "gpu"


def test_every_finished_job_has_its_exit_code_and_signal(tag):
    ids = {}
    for suffix, command in (("ok", "true"), ("three", "exit 3"), ("killed", "kill -9 $$")):
        out = slurm("sbatch", "--parsable", "-J", f"{tag}-{suffix}", "-p", "gpu", "--wrap", command)
        ids[suffix] = out.strip().split(";")[0]
    lines = wait_done(*(f"{tag}-{s}" for s in ids))
    final = {j["id"]: j for j in lines[-1]["jobs"]}
    got = {s: (final[i]["state"], final[i]["exit_code"], final[i]["signal"]) for s, i in ids.items()}
    assert got == {"ok": ("completed", 0, 0), "three": ("failed", 3, 0), "killed": ("failed", 0, 9)}
    table = cli("jobs", "--name", f"{tag}-three", "--columns", "id,exit")
    assert table.stdout.splitlines()[1].split() == [ids["three"], "3:0"]
    text = cli("describe", ids["killed"])
    assert "Exit code:" in text.stdout and "0 (signal 9)" in text.stdout


def test_filters_on_slurm(tag):
    held = slurm("sbatch", "--parsable", "-H", "-J", f"{tag}-held", "-p", "gpu", "--wrap", "true").strip()
    other = slurm("sbatch", "--parsable", "-H", "-J", f"{tag}-other", "-p", "cpu", "--wrap", "true").strip()

    def names(*args: str) -> list[str]:
        result = cli("jobs", "--filter", f"name:{tag}", *args, "-o", "name")
        assert result.returncode == 0, result.stderr
        return result.stdout.splitlines()

    assert names("--state", "PD", "--sort", "id") == [f"slurm-test/{held}", f"slurm-test/{other}"]
    assert names("--state", "running") == []
    assert names("--partition", "gpu") == [f"slurm-test/{held}"]
    assert names("--user", "root", "--name", f"{tag}-other") == [f"slurm-test/{other}"]
    assert names("--me") == names("--all-users") and len(names("--me")) == 2
    assert names("--user", "somebody-else") == []
    wide = cli("jobs", "--name", f"{tag}-held", "-o", "wide")
    header, row = wide.stdout.splitlines()
    assert row[header.index("PARTITION") :].split()[0] == "gpu"


def test_nodes_filters_and_a_closed_pipe(slurm_dir):
    doc = validated(cli("nodes", "--partition", "gpu", "--json").stdout, "nodes")
    assert doc["nodes"] and all("gpu" in n["partitions"] for n in doc["nodes"])
    assert all(n["gpus_total"] > 0 for n in doc["nodes"])
    for args in (("jobs",), ("nodes", "-o", "wide")):
        result = run_into_closed_pipe("--config", CONFIG, *args)
        assert (result.returncode, result.stderr) == (EXIT_PIPE, "")


def test_a_cluster_down_beside_the_slurm_one(slurm_dir, tmp_path, home):
    import yaml

    clusters = yaml.safe_load(open(CONFIG))["clusters"]
    down = {**clusters[0], "name": "down", "ssh": {**clusters[0]["ssh"], "port": 1}}  # nothing listens there
    config = tmp_path / "two.yaml"
    config.write_text(yaml.safe_dump({"clusters": [clusters[0], down]}))
    result = run_cli("--config", str(config), "jobs", "--json")
    assert result.returncode == 4, result.stderr
    doc = validated(result.stdout, "jobs")
    assert [e["cluster"] for e in doc["errors"]] == ["down"]
    assert "cluster 'down'" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "value, expected",
    [
        (768, (3, 0)),  # squeue/scontrol --json 22.05: the wait status
        (9, (0, 9)),
        (0, (0, 0)),
        ({"status": "FAILED", "return_code": 3}, (3, 0)),  # sacct 22.05
        ({"status": "SIGNALED", "return_code": 0, "signal": {"signal_id": 9, "name": "KILL"}}, (0, 9)),
        (
            {
                "status": ["SIGNALED"],
                "return_code": {"set": True, "number": 0},
                "signal": {"id": {"set": True, "number": 15}},
            },
            (0, 15),
        ),  # 23.02+
        (None, (None, None)),
    ],
)
def test_exit_status_from_each_shape(value, expected):
    assert exit_status(value) == expected


def test_scontrol_codes():
    text = (
        "JobId=12 JobName=a UserId=root(0) JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0 DerivedExitCode=0:0\n"
        "JobId=14 ArrayJobId=13 ArrayTaskId=1 JobName=b JobState=FAILED ExitCode=0:9\n"
        "JobId=15 JobName=c JobState=RUNNING ExitCode=0:0\n"
    )
    assert scontrol_codes(text) == {"12": (3, 0), "13_1": (0, 9), "15": (0, 0)}


def test_json_of_the_cli_is_one_object(slurm_dir):
    doc = json.loads(cli("jobs", "--json").stdout)
    assert set(doc) == {"schema_version", "jobs", "errors"}
