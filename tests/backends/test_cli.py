"""The headless CLI, end to end in subprocesses (``python -m yanflow_tui``) against the local backend."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from jobhelpers import run_cli
from waiting import wait_until

from yanflow_tui import cli, locations
from yanflow_tui.backends.local.store import LocalStore
from yanflow_tui.cli import context, parser
from yanflow_tui.sanitize import clean_streams

JOB_KEYS = {"id", "cluster", "name", "user", "state", "nodes", "gpus"}
NODE_KEYS = {"name", "cluster", "state", "gpus_total", "gpus_used", "gpu_type"}


def write_spec(tmp_path: Path, data: dict, name: str = "job.yaml") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def submit(tmp_path: Path, command: str, **extra) -> str:
    result = run_cli("submit", str(write_spec(tmp_path, {"name": "cli-job", "command": command, **extra})))
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip()
    assert job_id.isdigit(), result.stdout
    return job_id


def jobs_json() -> list[dict]:
    result = run_cli("jobs", "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema_version"] == 1 and doc["errors"] == []
    return doc["jobs"]


def assert_one_clear_line(result, *fragments: str) -> None:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("yanflow-tui: error: ")
    for fragment in fragments:
        assert fragment in lines[0]


def test_jobs_json_fields(env, tmp_path):
    assert jobs_json() == []
    job_id = submit(tmp_path, "echo hi")
    wait_until(lambda: jobs_json()[0]["state"] == "completed", what="the job to complete")
    (job,) = jobs_json()
    assert JOB_KEYS <= set(job)
    assert job["id"] == job_id
    assert job["cluster"] == "local"
    assert job["name"] == "cli-job"
    assert job["user"]
    assert job["state"] == "completed"
    assert isinstance(job["nodes"], list) and len(job["nodes"]) == 1
    assert job["gpus"] == 0
    assert job["exit_code"] == 0


def test_jobs_table(env, tmp_path):
    submit(tmp_path, "echo hi")
    result = run_cli("jobs")
    assert result.returncode == 0, result.stderr
    header, row = result.stdout.splitlines()
    assert header.split() == ["CLUSTER", "ID", "NAME", "USER", "STATE", "GPUS", "NODES", "REASON"]
    assert row.split()[:3] == ["local", "1", "cli-job"]


def test_nodes_json_fields(env):
    result = run_cli("nodes", "--json")
    assert result.returncode == 0, result.stderr
    (node,) = json.loads(result.stdout)["nodes"]
    assert NODE_KEYS <= set(node)
    assert node["cluster"] == "local"
    assert node["state"] == "up"
    assert node["gpus_total"] == 2
    assert node["gpus_used"] == 0
    assert node["gpu_type"] == "NVIDIA A100-SXM4-80GB"
    assert [g["index"] for g in node["gpus"]] == [0, 1]
    assert node["gpus"][0]["memory_total_mb"] == 81920


def test_nodes_table(env):
    result = run_cli("nodes")
    assert result.returncode == 0, result.stderr
    header, row = result.stdout.splitlines()
    assert header.split()[:4] == ["CLUSTER", "NODE", "STATE", "GPUS"]
    assert row.split()[0] == "local" and "0/2" in row.split()


def test_nodes_without_driver(home, fake_nvml):
    fake_nvml.set(driver=False)
    result = run_cli("nodes", "--json")
    assert result.returncode == 0, result.stderr
    (node,) = json.loads(result.stdout)["nodes"]
    assert node["gpus_total"] == 0 and "NVML" in node["reason"]


def test_submit_dry_run_prints_native_form_and_submits_nothing(env, tmp_path):
    path = write_spec(
        tmp_path, {"name": "dry", "command": "python train.py", "env": {"SEED": "1"}, "resources": {"gpus": 1}}
    )
    result = run_cli("submit", "--dry-run", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("# local job on ")
    assert "/bin/sh -c 'python train.py'" in result.stdout
    assert "SEED=1" in result.stdout
    assert "CUDA_VISIBLE_DEVICES=" in result.stdout
    assert jobs_json() == []
    assert LocalStore(locations.state_dir() / "local.db").all() == []


def test_submit_dry_run_still_checks_the_spec(env, tmp_path):
    path = write_spec(tmp_path, {"name": "dry", "command": "x", "mounts": ["/data:/data"]})
    assert_one_clear_line(run_cli("submit", "--dry-run", str(path)), "only into a container")


def test_logs_and_follow(env, tmp_path):
    job_id = submit(
        tmp_path, "for i in 1 2 3 4 5; do echo \"line $i\"; sleep 0.1; done; printf '\\033[31mred\\033[0m\\n'"
    )
    result = run_cli("logs", "--follow", job_id)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["line 1", "line 2", "line 3", "line 4", "line 5", "red"]
    again = run_cli("logs", job_id)
    assert again.stdout == result.stdout
    assert run_cli("logs", "-f", job_id).stdout == result.stdout


def test_cancel_through_cli(env, tmp_path):
    job_id = submit(tmp_path, "sleep 300")
    result = run_cli("cancel", job_id)
    assert result.returncode == 0, result.stderr
    assert f"cancelled job {job_id} on local" in result.stderr
    (job,) = jobs_json()
    assert job["state"] == "cancelled"
    assert_one_clear_line(run_cli("cancel", job_id), "already cancelled")


@pytest.mark.parametrize("command", ["logs", "cancel"])
@pytest.mark.parametrize("job", ["999", "not-a-job", "²", "99999999999999999999999"])
def test_unknown_job(env, command, job):
    assert_one_clear_line(run_cli(command, job), f"no job {job!r} on cluster 'local'")


@pytest.mark.parametrize(
    "args",
    [
        ["--read-only", "submit", "{spec}"],
        ["submit", "--read-only", "{spec}"],
        ["submit", "{spec}", "--read-only"],
        ["--read-only", "cancel", "{job}"],
        ["cancel", "{job}", "--read-only"],
    ],
)
def test_read_only_before_or_after_the_command(env, tmp_path, args):
    job_id = submit(tmp_path, "sleep 300")
    spec = write_spec(tmp_path, {"name": "refused", "command": "true"}, "refused.yaml")
    result = run_cli(*[a.format(spec=spec, job=job_id) for a in args])
    action = "submit" if "submit" in args else "cancel"
    assert_one_clear_line(result, f"cluster 'local' is read-only: {action} refused")
    (job,) = jobs_json()  # nothing new was submitted
    assert job["id"] == job_id and job["state"] == "running"


def test_read_only_still_allows_reads(env, tmp_path):
    job_id = submit(tmp_path, "echo visible")
    wait_until(lambda: run_cli("logs", job_id).stdout == "visible\n", what="the log")
    assert run_cli("--read-only", "jobs", "--json").returncode == 0
    assert run_cli("nodes", "--read-only").returncode == 0
    assert run_cli("logs", job_id, "--read-only").stdout == "visible\n"


def test_unknown_cluster(env):
    assert_one_clear_line(run_cli("jobs", "--cluster", "nope"), "no cluster named 'nope' (configured: local)")


def test_an_id_on_several_clusters_needs_the_cluster_flag(env, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("clusters:\n  - {name: a, kind: local}\n  - {name: b, kind: local}\n")
    assert_one_clear_line(run_cli("--config", str(config), "logs", "1"), "no job '1' on any configured cluster (a, b)")
    assert_one_clear_line(run_cli("--config", str(config), "logs", "1", "--cluster", "a"), "no job '1'")
    spec = write_spec(tmp_path, {"name": "both", "command": "echo shared"})
    job_id = run_cli("--config", str(config), "submit", str(spec), "--cluster", "a").stdout.strip()
    assert job_id.isdigit()
    # Two local clusters over one state dir both hold the job: the error names them.
    assert_one_clear_line(
        run_cli("--config", str(config), "logs", job_id),
        f"job {job_id!r} is on several clusters (a, b); pass --cluster NAME",
    )
    wait_until(
        lambda: run_cli("--config", str(config), "logs", job_id, "--cluster", "b").stdout == "shared\n",
        what="the log through --cluster",
    )


def test_unavailable_cluster_reports_and_fails_but_lists_the_others(env, tmp_path, register_backend, capsys):
    register_backend("yanflow_tui.backends.no_such_backend_module:SlurmBackend", "slurm")
    config = tmp_path / "config.yaml"
    config.write_text("clusters:\n  - {name: here, kind: local}\n  - {name: far, kind: slurm}\n")
    code = cli.main(["--config", str(config), "nodes", "--json"])
    out, err = capsys.readouterr()
    assert code == context.EXIT_PARTIAL  # some answered: a partial answer
    assert err.splitlines() == [
        "yanflow-tui: error: cluster 'far': the slurm backend is not available in this version of yanflow-tui"
    ]
    doc = json.loads(out)
    assert [n["cluster"] for n in doc["nodes"]] == ["here"]
    assert doc["errors"] == [
        {"cluster": "far", "message": "the slurm backend is not available in this version of yanflow-tui"}
    ]


def test_missing_spec_file(env, tmp_path):
    assert_one_clear_line(run_cli("submit", str(tmp_path / "nope.yaml")), f"{tmp_path / 'nope.yaml'}: no such file")


def test_spec_for_no_cluster(env, tmp_path):
    path = write_spec(tmp_path, {"name": "s", "kind": "slurm", "command": "x"})
    assert_one_clear_line(run_cli("submit", str(path)), "no configured cluster runs slurm jobs")


def test_usage_errors_exit_2(env):
    result = run_cli("frobnicate")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "invalid choice" in result.stderr


def test_version():
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip().startswith("yanflow-tui ")


def test_in_process_unexpected_error_has_no_traceback(home, monkeypatch, capsys):
    monkeypatch.delenv("YANFLOW_DEBUG", raising=False)

    async def broken(ctx):
        raise RuntimeError("something odd\nwith two lines")

    monkeypatch.setitem(parser.commands(), "jobs", broken)
    assert cli.main(["jobs"]) == context.EXIT_ERROR
    err = capsys.readouterr().err
    assert err.splitlines()[0] == "yanflow-tui: error: unexpected RuntimeError: something odd"
    assert "Traceback" not in err
    assert all(line.startswith("yanflow-tui: error: ") for line in err.splitlines())


def test_error_lines_are_sanitized(capsys):
    with clean_streams():
        context.error("bad \x1b[31mthing\x1b]0;title\x07\nsecond")
    assert capsys.readouterr().err == "yanflow-tui: error: bad thing\nyanflow-tui: error: second\n"


def test_a_job_that_never_fits_is_refused_before_it_is_sent_unless_forced(env, tmp_path, fake_nvml):
    fake_nvml.set(driver=True, devices=[])  # a machine without GPUs
    path = write_spec(tmp_path, {"name": "big", "command": "true", "resources": {"gpus": 4}})
    assert_one_clear_line(run_cli("submit", str(path)), "never fits: cluster local has no GPUs", "--force")
    assert LocalStore(locations.state_dir() / "local.db").all() == []
    dry = run_cli("submit", "--dry-run", str(path))  # the verdict on stderr, the native form on stdout
    assert dry.returncode == 0 and dry.stdout.startswith("# local job on ")
    assert dry.stderr.strip() == "yanflow-tui: never fits: cluster local has no GPUs"
    forced = run_cli("submit", "--force", str(path))  # past the verdict: the backend's own refusal
    assert_one_clear_line(forced, "asks for 4 GPU(s) but this machine has 0")
    fake_nvml.gpus(2)
    fits = run_cli(
        "submit", "--dry-run", str(write_spec(tmp_path, {"name": "small", "command": "true", "resources": {"gpus": 2}}))
    )
    assert fits.stderr.strip() == "yanflow-tui: fits now: 1 node in cluster local can take 2 GPUs now, 1 needed"


@pytest.mark.parametrize(
    "content,where,message",
    [
        (b"name: n\ncommand: c\nworkdir: /w\x00x\n", "3: workdir", "U+0000 NUL"),
        (b'name: n\ncommand: c\nenv: {A: "\\ud800"}\n', "3: env.A", "lone surrogate (U+D800)"),
        ("name: n\ncommand: c\nimage: a\ud800\n".encode("utf-8", "surrogatepass"), "3: image", "not valid UTF-8"),
        (b'name: n\ncommand: [echo, "a\\0b"]\n', "2: command[1]", "U+0000 NUL"),
        (b"name: n\xff\ncommand: c\n", "1: name", "not valid UTF-8 (byte 0xFF)"),
    ],
)
def test_submit_dry_run_refuses_bad_characters_with_one_located_line(env, tmp_path, content, where, message):
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    result = run_cli("submit", "--dry-run", str(path))
    assert_one_clear_line(result, f"{path}:{where}: ", message)
    assert result.stdout == ""


HOSTILE = "bad\x1b]0;T\x07\x1b[2J\x9b31m\rname"
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@pytest.mark.parametrize(
    "args",
    [
        ("init", "torchrun-ddp", HOSTILE),  # echoes its folder (stdout)
        ("init", "torchrun-ddp", "."),  # a folder that is not empty: the error names it
        ("cancel", HOSTILE),
        ("logs", "7", "--cluster", HOSTILE),
        ("submit", HOSTILE),
        ("init", HOSTILE, "x"),  # argparse's own message
    ],
)
def test_no_control_byte_of_a_hostile_name_reaches_the_terminal(env, tmp_path, args):
    (tmp_path / "taken").write_text("")
    result = run_cli(*args, cwd=str(tmp_path))
    out = result.stdout + result.stderr
    assert out and not CONTROL.search(out), repr(out)
    assert "Traceback" not in out


@pytest.mark.parametrize(
    "args",
    [("jobs",), ("nodes",), ("jobs", "--json"), ("completion", "bash"), ("--help",), ("init", "torchrun-ddp", "d")],
)
def test_a_reader_that_closes_the_pipe_early_ends_the_command_quietly(env, tmp_path, args):
    """``yanflow-tui jobs | head -1``: the read end is closed before the command writes a byte."""
    child = subprocess.Popen(
        [sys.executable, "-m", "yanflow_tui", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    child.stdout.close()  # type: ignore[union-attr]
    _, err = child.communicate(timeout=60)
    assert child.returncode in (0, 141)
    assert err == b""


# -- watch JOB: waits for the end, exits with the job's code (Slurm: slurm/test_slurm_watch.py) --


@pytest.mark.parametrize(("command", "code", "state"), [("sleep 1; exit 3", 3, "failed"), ("sleep 1", 0, "completed")])
def test_watch_exits_with_the_local_jobs_code(env, tmp_path, command, code, state):
    job_id = submit(tmp_path, command)
    result = run_cli("watch", job_id, timeout=60)
    assert result.returncode == code, result.stderr
    assert result.stdout == f"{job_id}\tlocal\t{state}, exit code {code}\n"


def test_watch_of_a_cancelled_local_job_exits_143(env, tmp_path):
    job_id = submit(tmp_path, "sleep 60")
    watcher = subprocess.Popen(
        [sys.executable, "-m", "yanflow_tui", "watch", job_id],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        assert "waiting for its end" in watcher.stderr.readline()  # it has seen the job live
        assert run_cli("cancel", job_id).returncode == 0
        assert watcher.wait(timeout=60) == 143
        assert watcher.stdout.read().startswith(f"{job_id}\tlocal\tcancelled")
    finally:
        watcher.kill()
        watcher.wait()


def test_watch_of_an_unknown_job_is_an_error(env):
    result = run_cli("watch", "999999")
    assert result.returncode == 1 and "yanflow-tui: error:" in result.stderr and "Traceback" not in result.stderr
