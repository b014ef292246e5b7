"""The file and output schemas as scripts outside this repository use them: ``check-jsonschema`` (PyPI, in
the test extra) validates the samples against ``yanflow-tui schema spec`` and real ``--json`` outputs of the
local backend against the shipped output schemas, and ``jq`` (Debian's package; scripts/outside-tools-setup
installs it as root) reads the JSON contract (``schema_version``, the data, per-cluster ``errors``, the exit
code) in a shell script, as a user writes one. Tests FAIL, never skip, when a tool is missing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from paths import SAMPLES

from yanflow_tui import output_schemas
from yanflow_tui.cli.context import EXIT_PARTIAL

BIN = Path(sys.executable).parent  # the venv's scripts: yanflow-tui and check-jsonschema
MISSING_JQ = "jq is not installed: run scripts/outside-tools-setup as root (scripts/test.sh does)"

# A user's script: submit, wait, collect with --json, read it with jq. A cluster that cannot answer ("far":
# nothing listens on its ssh port) is an entry of `errors` and exit code 4, beside the one that answered.
SCRIPT = r"""
set -u
yf() { "$BIN/yanflow-tui" --config "$CONFIG" "$@"; }
id=$(yf submit - --cluster here --json <<<'{name: outside-tools, command: "echo from outside"}' | jq -r .submit.id)
yf jobs --cluster here --name outside-tools --watch --until-done --interval 0.2 --json >/dev/null
yf jobs --json >"$OUT/jobs.json"
echo "jobs exit $?"
jq -e '.schema_version == 1' "$OUT/jobs.json" >/dev/null && echo "version 1"
jq -r '.errors[] | "error \(.cluster): \(.message)"' "$OUT/jobs.json"
jq -r --arg id "$id" '.jobs[] | select(.id == $id) | "job \(.cluster) \(.name) \(.state) \(.exit_code)"' \
    "$OUT/jobs.json"
yf describe "$id" --cluster here --json >"$OUT/describe.json"
jq -r '.job.detail[] | select(.label == "Exit code") | "detail exit code \(.value)"' "$OUT/describe.json"
yf nodes --cluster here --json >"$OUT/nodes.json"
jq -r '"nodes \(.nodes | length) errors \(.errors | length)"' "$OUT/nodes.json"
yf submit - --cluster here --json <<<'{name: outside-tools-2, command: "true"}' >"$OUT/submit.json"
"""


def check_jsonschema(schema: Path, *files: Path, base: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``check-jsonschema`` as a user runs it; ``base``: where the schema's ``$ref``s are read from."""
    extra = ["--base-uri", base.as_uri()] if base else []
    return subprocess.run(
        [str(BIN / "check-jsonschema"), *extra, "--schemafile", str(schema), *map(str, files)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_jsonschema_accepts_every_sample_and_names_a_specs_mistakes(tmp_path):
    schema = tmp_path / "spec.schema.json"
    with schema.open("w") as out:
        subprocess.run([str(BIN / "yanflow-tui"), "schema", "spec"], stdout=out, check=True, timeout=60)
    samples = sorted(SAMPLES.glob("*.yaml")) + sorted(SAMPLES.glob("projects/*/job.yaml"))
    ok = check_jsonschema(schema, *samples)
    assert (ok.returncode, ok.stdout.strip()) == (0, "ok -- validation done"), ok.stdout + ok.stderr
    bad = tmp_path / "job.yaml"
    bad.write_text("name: x\ncommand: train\nkind: multi-node\nresources: {nodes: two}\nshh: 1\n")
    refused = check_jsonschema(schema, bad)
    assert refused.returncode == 1
    assert "$.resources.nodes: 'two' is not of type 'integer'" in refused.stdout
    assert "Additional properties are not allowed ('shh' was unexpected)" in refused.stdout


def test_a_users_script_reads_the_json_contract_with_jq_and_check_jsonschema_accepts_it(env, tmp_path):
    if shutil.which("jq") is None:
        pytest.fail(MISSING_JQ, pytrace=False)
    config = tmp_path / "config.yaml"
    config.write_text('clusters:\n  - {name: here, kind: local}\n  - {name: far, kind: slurm, ssh: "me@127.0.0.1:1"}\n')
    variables = {"BIN": str(BIN), "CONFIG": str(config), "OUT": str(tmp_path)}
    run = subprocess.run(
        ["bash", "-c", SCRIPT], capture_output=True, text=True, timeout=180, env={**os.environ, **variables}
    )
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines[:2] == [f"jobs exit {EXIT_PARTIAL}", "version 1"], run.stdout + run.stderr
    assert lines[2].startswith("error far: ssh me@127.0.0.1:1: cannot connect"), lines
    assert lines[3:] == ["job here outside-tools completed 0", "detail exit code 0", "nodes 1 errors 0"]
    # Each output against its shipped schema, the $refs (errors.json, job.json) read beside it.
    folder = Path(output_schemas.__file__).parent
    for name in ("jobs", "describe", "nodes", "submit"):
        schema = folder / f"{name}.json"
        checked = check_jsonschema(schema, tmp_path / f"{name}.json", base=schema)
        assert checked.returncode == 0, f"{name}: {checked.stdout}{checked.stderr}"
