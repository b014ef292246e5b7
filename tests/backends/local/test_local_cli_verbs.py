"""The command line's verbs and options over the local backend, end to end in subprocesses: ``jobs``'
filters, formats, sort, columns and ``--watch``; ``describe``; ``submit -`` and its sbatch-style
overrides; every ``--json`` output checked against its shipped schema; a partial answer; a closed pipe."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml
from jobhelpers import run_cli
from jsoncontract import run_into_closed_pipe, validated

from yanflow_tui import cli
from yanflow_tui.cli.context import EXIT_PARTIAL, EXIT_PIPE, EXIT_USAGE


def submit_stdin(text: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``submit - ARGS`` with ``text`` on stdin."""
    return subprocess.run(
        [sys.executable, "-m", "yanflow_tui", "submit", "-", *args],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )


def spec(name: str, command: str) -> str:
    return f"name: {name}\ncommand: {command}\n"


@pytest.fixture
def two_done(env):
    """Two local jobs submitted through ``submit -`` (one exits 0, one 3), waited for with
    ``jobs --watch --until-done --json``: their ids, and the lines the watch printed."""
    ok = submit_stdin(spec("cliverbs-ok", "echo fine"), "--json")
    assert ok.returncode == 0, ok.stderr
    ok_id = validated(ok.stdout, "submit")["submit"]["id"]
    bad = submit_stdin(spec("cliverbs-bad", "exit 3"))
    assert bad.returncode == 0, bad.stderr
    bad_id = bad.stdout.strip()
    watch = run_cli(
        "jobs", "--name", "cliverbs-ok,cliverbs-bad", "--watch", "--until-done", "--json", "--interval", "0.2"
    )
    assert watch.returncode == 0, watch.stderr
    lines = watch.stdout.splitlines()
    return ok_id, bad_id, [validated(line, "jobs") for line in lines]


def test_watch_prints_a_json_line_per_change_until_every_job_is_done(two_done):
    ok_id, bad_id, docs = two_done
    final = {j["id"]: j for j in docs[-1]["jobs"]}
    assert set(final) == {ok_id, bad_id}
    assert (final[ok_id]["state"], final[ok_id]["exit_code"]) == ("completed", 0)
    assert (final[bad_id]["state"], final[bad_id]["exit_code"]) == ("failed", 3)
    assert all(a != b for a, b in zip(docs, docs[1:]))  # a line only when something changed
    assert not all(j["state"] in ("completed", "failed") for j in docs[0]["jobs"]) or len(docs) == 1


def test_filters_choose_the_jobs(two_done):
    ok_id, bad_id, _ = two_done

    def names(*args: str) -> list[str]:
        result = run_cli("jobs", *args, "-o", "name")
        assert result.returncode == 0, result.stderr
        return result.stdout.splitlines()

    assert names("--state", "failed") == [f"local/{bad_id}"]
    assert names("--state", "CD") == [f"local/{ok_id}"]  # squeue's code for COMPLETED
    assert names("--state", "F,CD", "--sort=-id") == [f"local/{bad_id}", f"local/{ok_id}"]
    assert names("--name", "cliverbs-ok") == [f"local/{ok_id}"]
    assert names("--filter", "name:bad state:fail") == [f"local/{bad_id}"]
    assert names("--filter=-name:bad cliverbs") == [f"local/{ok_id}"]
    assert len(names("--since", "1h")) == 2
    assert names("--since", "2099-01-01") == []
    assert names("--user", "nobody-here") == []
    assert len(names("--me")) == 2 and len(names("--all-users")) == 2


def test_formats_columns_and_sort(two_done):
    ok_id, bad_id, _ = two_done
    table = run_cli("jobs", "--columns", "id,name,exit", "--sort", "name")
    assert table.returncode == 0, table.stderr
    assert [line.split() for line in table.stdout.splitlines()] == [
        ["ID", "NAME", "EXIT"],
        [bad_id, "cliverbs-bad", "3:0"],
        [ok_id, "cliverbs-ok", "0:0"],
    ]
    wide = run_cli("jobs", "-o", "wide")
    assert wide.stdout.split("\n")[0].split()[:6] == ["CLUSTER", "ID", "NAME", "USER", "STATE", "RAW"]
    as_yaml = yaml.safe_load(run_cli("jobs", "-o", "yaml").stdout)
    assert as_yaml["schema_version"] == 1 and {j["id"] for j in as_yaml["jobs"]} == {ok_id, bad_id}
    assert json.loads(run_cli("jobs", "-o", "json").stdout) == json.loads(run_cli("jobs", "--json").stdout)


@pytest.mark.parametrize(
    "args", [("--state", "sideways"), ("--columns", "id,colour"), ("--sort", "colour"), ("--since", "yesterdayish")]
)
def test_a_bad_option_value_is_a_usage_error(env, args):
    result = run_cli("jobs", *args)
    assert result.returncode == EXIT_USAGE
    assert result.stderr.startswith("yanflow-tui: error: ") and "Traceback" not in result.stderr


def test_describe_as_text_and_json(two_done):
    _, bad_id, _ = two_done
    text = run_cli("describe", bad_id)
    assert text.returncode == 0, text.stderr
    lines = dict(line.split(":", 1) for line in text.stdout.splitlines() if ":" in line)
    assert (
        lines["Job"].strip() == bad_id and lines["Exit code"].strip() == "3" and lines["Name"].strip() == "cliverbs-bad"
    )
    doc = validated(run_cli("describe", bad_id, "--json").stdout, "describe")
    assert doc["job"]["id"] == bad_id and doc["job"]["exit_code"] == 3
    detail = {f["label"]: f["value"] for f in doc["job"]["detail"]}
    assert detail["Name"] == "cliverbs-bad" and detail["Exit code"] == "3"
    assert yaml.safe_load(detail["Spec"])["resources"] == {"nodes": 1, "gpus": 0}  # its lines' indents kept
    missing = run_cli("describe", "999999")
    assert missing.returncode == 1 and "Traceback" not in missing.stderr


def test_submit_overrides_are_checked_like_the_form(env):
    two_nodes = submit_stdin(spec("cliverbs-x", "true"), "--nodes", "2")
    assert two_nodes.returncode == 1
    assert "resources.nodes: a single job runs on exactly 1 node, got 2" in two_nodes.stderr
    uneven = submit_stdin("name: cliverbs-x\nkind: multi-node\ncommand: 'true'\n", "--nodes", "2", "--gpus", "3")
    assert uneven.returncode == EXIT_USAGE and "cannot be spread evenly over 2 node(s)" in uneven.stderr
    bad_time = submit_stdin(spec("cliverbs-x", "true"), "--time", "soon")
    assert bad_time.returncode == EXIT_USAGE and "--time" in bad_time.stderr
    dry = submit_stdin(spec("cliverbs-x", "true"), "--gpus", "1", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "CUDA_VISIBLE_DEVICES" in dry.stdout or "gpus" in dry.stdout.lower()
    not_yaml = submit_stdin("{{{ nope")
    assert not_yaml.returncode == 1 and "<stdin>" in not_yaml.stderr


def test_nodes_filters_and_json(env):
    doc = validated(run_cli("nodes", "--json").stdout, "nodes")
    assert [n["cluster"] for n in doc["nodes"]] == ["local"]
    assert run_cli("nodes", "--state", "up", "-o", "name").stdout.strip() == f"local/{doc['nodes'][0]['name']}"
    assert run_cli("nodes", "--state", "drain", "-o", "name").stdout == ""
    assert run_cli("nodes", "--name", "no-such-node", "--json").returncode == 0


def test_one_cluster_down_gives_the_others_and_an_error_entry(env, tmp_path, register_backend, capsys):
    register_backend("yanflow_tui.backends.no_such_backend_module:SlurmBackend", "slurm")
    config = tmp_path / "config.yaml"
    config.write_text("clusters:\n  - {name: here, kind: local}\n  - {name: far, kind: slurm}\n")

    def run(*args: str) -> tuple[int, dict]:
        code = cli.main(["--config", str(config), "jobs", "--json", *args])
        return code, validated(capsys.readouterr().out, "jobs")

    code, doc = run()
    assert code == EXIT_PARTIAL
    assert [e["cluster"] for e in doc["errors"]] == ["far"] and "not available" in doc["errors"][0]["message"]
    assert doc["jobs"] == []  # "here" answered: no jobs, which is not an error
    assert run("--cluster", "here") == (0, {"schema_version": 1, "jobs": [], "errors": []})
    code, doc = run("--cluster", "far")
    assert code == 1 and doc["jobs"] == [] and doc["errors"][0]["cluster"] == "far"  # nothing answered


@pytest.mark.parametrize(
    "args",
    [
        ("jobs",),
        ("jobs", "--json"),
        ("jobs", "-o", "wide"),
        ("nodes",),
        ("nodes", "-o", "yaml"),
        ("completion", "bash"),
    ],
)
def test_a_closed_pipe_exits_quietly(env, args):
    result = run_into_closed_pipe(*args)
    assert result.returncode == EXIT_PIPE
    assert result.stderr == ""


def test_a_closed_pipe_on_describe_and_watch(two_done):
    _, bad_id, _ = two_done
    for args in (("describe", bad_id), ("jobs", "--watch", "--json")):
        result = run_into_closed_pipe(*args)
        assert (result.returncode, result.stderr) == (EXIT_PIPE, "")
