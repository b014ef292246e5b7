"""Job spec files: validation with located errors, through load_spec and through the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from paths import SAMPLES

from yanflow_tui.errors import SpecError
from yanflow_tui.model import JobKind, Mount, Resources
from yanflow_tui.spec import load_spec, parse_spec, spec_from_data, spec_to_data

GPUS_TWO = """\
name: bad-gpus
command: echo hi
resources:
  nodes: 1
  gpus: two
"""

TYPO = """\
name: typo
command: echo hi
resoures:
  gpus: 1
"""


def write(tmp_path: Path, text: str, name: str = "bad.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def problem_lines(exc: SpecError) -> list[str]:
    return str(exc).splitlines()


def test_gpus_not_a_number_exact_message(tmp_path):
    path = write(tmp_path, GPUS_TWO)
    with pytest.raises(SpecError) as info:
        load_spec(str(path))
    assert str(info.value) == f'{path}:5: resources.gpus: expected a whole number >= 0, got "two"'
    assert info.value.problems == [(str(path), 5, "resources.gpus", 'expected a whole number >= 0, got "two"')]


def test_unknown_key_exact_message(tmp_path):
    path = write(tmp_path, TYPO)
    with pytest.raises(SpecError) as info:
        load_spec(str(path))
    assert str(info.value) == f'{path}:3: resoures: unknown key; did you mean "resources"?'


def test_relative_path_is_reported_as_given(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, GPUS_TWO)
    with pytest.raises(SpecError) as info:
        load_spec("bad.yaml")
    assert str(info.value) == 'bad.yaml:5: resources.gpus: expected a whole number >= 0, got "two"'


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "yanflow_tui", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    "text, line",
    [
        (GPUS_TWO, 'bad.yaml:5: resources.gpus: expected a whole number >= 0, got "two"'),
        (TYPO, 'bad.yaml:3: resoures: unknown key; did you mean "resources"?'),
    ],
)
def test_cli_submit_reports_located_error(home, tmp_path, text, line):
    write(tmp_path, text)
    result = cli("submit", "bad.yaml", cwd=tmp_path)
    assert result.returncode != 0
    assert result.stderr.splitlines() == [f"yanflow-tui: error: {line}"]
    assert "Traceback" not in result.stderr + result.stdout
    assert result.stdout == ""


def test_console_script_reports_located_error(home, tmp_path):
    script = Path(sys.executable).with_name("yanflow-tui")
    if not script.exists():
        pytest.skip("the yanflow-tui console script is not installed next to this Python")
    write(tmp_path, GPUS_TWO)
    result = subprocess.run(
        [str(script), "submit", "bad.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode != 0
    assert (
        'yanflow-tui: error: bad.yaml:5: resources.gpus: expected a whole number >= 0, got "two"'
        in result.stderr.splitlines()
    )
    assert "Traceback" not in result.stderr


def test_missing_file(tmp_path):
    with pytest.raises(SpecError) as info:
        load_spec(str(tmp_path / "nope.yaml"))
    assert str(info.value) == f"{tmp_path / 'nope.yaml'}: no such file"


def test_sample_spec_loads():
    spec = load_spec(SAMPLES / "local-shell.yaml")
    assert spec.name == "local-shell-demo"
    assert spec.kind is JobKind.SINGLE
    assert "step $i/20" in spec.command
    assert spec.env == {"PYTHONUNBUFFERED": "1"}
    assert spec.resources == Resources(nodes=1, gpus=0)
    assert spec.source == str(SAMPLES / "local-shell.yaml")


def test_full_spec():
    spec = parse_spec(
        """\
name: train
kind: multi-node
cluster: hpc
command: [python, train.py, --lr, "0.1"]
image: pytorch:2.4
workdir: ~/project
env: {WANDB_MODE: offline, N: 3}
mounts: ["/data:/data:ro", {source: /scratch, target: /scratch}]
resources: {nodes: 2, gpus: 4, cpus: 16, memory: 64G}
launcher: torchrun
slurm: {partition: gpu, time: "01:00:00", exclusive: true}
kubernetes: {namespace: ml}
description: anything
""",
        "full.yaml",
    )
    assert spec.kind is JobKind.MULTI_NODE
    assert spec.command == ("python", "train.py", "--lr", "0.1")
    assert spec.command_text == "python train.py --lr 0.1"
    assert spec.env == {"WANDB_MODE": "offline", "N": "3"}
    assert spec.mounts == (Mount("/data", "/data", True), Mount("/scratch", "/scratch", False))
    assert spec.resources == Resources(nodes=2, gpus=4, cpus=16, memory_mb=65536)
    assert spec.launcher == "torchrun"
    assert spec.section("slurm") == {"partition": "gpu", "time": "01:00:00", "exclusive": True}
    assert spec.section("kubernetes") == {"namespace": "ml"}


def test_round_trip_through_data():
    spec = parse_spec(
        "name: rt\ncommand: [a, b]\nenv: {X: y}\nmounts: ['/a:/b']\n"
        "resources: {gpus: 1, cpus: 2, memory: 1G}\nslurm: {partition: p}\n"
    )
    again = spec_from_data(spec_to_data(spec))
    assert again.command == spec.command
    assert again.env == spec.env
    assert again.mounts == spec.mounts
    assert again.resources == spec.resources
    assert again.section("slurm") == spec.section("slurm")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("command: x\n", ["s.yaml:1: name: required field is missing"]),
        ("name: x\n", ["s.yaml:1: command: required field is missing"]),
        # An empty ``command:`` is as missing as no command at all.
        ("name: x\ncommand:\n", ["s.yaml:2: command: required field is missing"]),
        ("name: x\ncommand: []\n", ["s.yaml:2: command: must not be an empty list"]),
        ("name: x\ncommand: '  '\n", ["s.yaml:2: command: must not be empty"]),
        ("name: x\ncommand: {a: 1}\n", ["s.yaml:2: command: expected text, got a mapping"]),
        (
            "name: x\ncommand: c\nkind: singel\n",
            [
                "s.yaml:3: kind: expected one of single, multi-node, experiment, slurm, "
                'got "singel"; did you mean "single"?'
            ],
        ),
        (
            "name: x\ncommand: c\nresources: {nodes: 2}\n",
            ["s.yaml:3: resources.nodes: a single job runs on exactly 1 node, got 2"],
        ),
        (
            "name: x\ncommand: c\nresources:\n  gpus: -1\n",
            ["s.yaml:4: resources.gpus: expected a whole number >= 0, got -1"],
        ),
        (
            "name: x\ncommand: c\nresources:\n  cpus: 0\n",
            ["s.yaml:4: resources.cpus: expected a whole number >= 1, got 0"],
        ),
        (
            "name: x\ncommand: c\nresources:\n  memory: lots\n",
            ['s.yaml:4: resources.memory: expected a size such as 16G or 512M, got "lots"'],
        ),
        (
            "name: x\ncommand: c\nlauncher: torchrun\n",
            ["s.yaml:3: launcher: only multi-node and experiment jobs take a launcher, not single"],
        ),
        (
            "name: x\ncommand: c\nmounts: ['/a']\n",
            ['s.yaml:3: mounts[0]: expected "source:target" or "source:target:ro", got "/a"'],
        ),
        (
            "name: x\ncommand: c\nmounts: ['/a:rel']\n",
            ['s.yaml:3: mounts[0]: target must be an absolute path, got "rel"'],
        ),
        ("name: x\ncommand: c\nmounts:\n  - source: /a\n", ["s.yaml:4: mounts[0].target: required field is missing"]),
        (
            "name: x\ncommand: c\nenv:\n  bad-name: 1\n",
            ["s.yaml:4: env.bad-name: environment names must match [A-Za-z_][A-Za-z0-9_]*"],
        ),
        (
            "name: x\ncommand: c\nslurm:\n  partiton: gpu\n",
            ['s.yaml:4: slurm.partiton: unknown key; did you mean "partition"?'],
        ),
        (
            "name: x\ncommand: c\nslurm:\n  exclusive: maybe\n",
            ['s.yaml:4: slurm.exclusive: expected true or false, got "maybe"'],
        ),
        (
            "name: x\ncommand: c\nkubernetes:\n  node_selector: gpu\n",
            ['s.yaml:4: kubernetes.node_selector: expected a mapping, got "gpu"'],
        ),
        ("- a\n- b\n", ["s.yaml:1: expected a mapping, got a list", "s.yaml:1: command: required field is missing"]),
        ("", ["s.yaml:1: name: required field is missing", "s.yaml:1: command: required field is missing"]),
    ],
)
def test_invalid_specs(text, expected):
    with pytest.raises(SpecError) as info:
        parse_spec(text, "s.yaml")
    assert problem_lines(info.value) == expected


def test_every_problem_is_reported_in_line_order():
    text = "name: x\nresources:\n  gpus: two\n  cpus: none\nresoures: {}\ncommand: c\n"
    with pytest.raises(SpecError) as info:
        parse_spec(text, "m.yaml")
    assert problem_lines(info.value) == [
        'm.yaml:3: resources.gpus: expected a whole number >= 0, got "two"',
        'm.yaml:4: resources.cpus: expected a whole number >= 1, got "none"',
        'm.yaml:5: resoures: unknown key; did you mean "resources"?',
    ]


def test_name_limits():
    with pytest.raises(SpecError) as info:
        parse_spec("name: " + "n" * 201 + "\ncommand: c\n", "s.yaml")
    assert problem_lines(info.value) == ["s.yaml:1: name: longer than 200 characters"]
    with pytest.raises(SpecError) as info:
        parse_spec('name: "a\\0b"\ncommand: c\n', "s.yaml")
    assert problem_lines(info.value) == ["s.yaml:1: name: contains a control character (U+0000 NUL)"]


def test_hostile_name_is_kept_verbatim():
    name = "evil[0];rm -rf ~ $(touch PWNED) `touch PWNED2` [red]x[/red] 'q' \"d\""
    spec = spec_from_data({"name": name, "command": "echo hi"})
    assert spec.name == name
    for bad, problem in (("\x1b[31mred", "U+001B ESC"), ("one\ntwo", "must be one line")):
        with pytest.raises(SpecError) as info:  # control characters are refused, never stripped
            spec_from_data({"name": bad, "command": "echo hi"})
        assert problem in str(info.value)


def test_experiment_may_use_determined_entrypoint_instead_of_command():
    spec = parse_spec("name: e\nkind: experiment\ndetermined: {entrypoint: model_def:Trial}\n")
    assert spec.command == ""
    assert spec.section("determined") == {"entrypoint": "model_def:Trial"}


def test_spec_from_data_uses_same_rules():
    with pytest.raises(SpecError) as info:
        spec_from_data({"name": "f", "command": "c", "resources": {"gpus": "two"}})
    assert problem_lines(info.value) == ['<form>:1: resources.gpus: expected a whole number >= 0, got "two"']


def test_text_fields_keep_the_yaml_source_text():
    """YAML 1.1 reads 1:30:00 as 5400 and 0x1F as 31; text fields keep what the user wrote."""
    from yanflow_tui.spec import parse_spec

    spec = parse_spec(
        "name: 0x1F\nkind: slurm\ncommand: yes\nenv: {A: 0755, B: yes}\nslurm: {time: 1:30:00}\n", "f.yaml"
    )
    assert spec.name == "0x1F"
    assert spec.command == "yes"
    assert spec.env == {"A": "0755", "B": "yes"}
    assert spec.section("slurm")["time"] == "1:30:00"


def test_an_env_name_with_a_trailing_newline_is_refused():
    with pytest.raises(SpecError) as info:
        parse_spec('name: x\ncommand: c\nenv: {"A\\n": 1}\n', "s.yaml")
    assert str(info.value) == "s.yaml:3: env.A\\u000a: must be one line: contains a line break (U+000A)"
