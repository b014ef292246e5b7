"""The JSON Schemas of the job spec and the config (``yanflow_tui.fileschemas``): the shipped files are the
generator's output; the spec schema accepts every sample and template project spec and rejects every invalid
spec of the spec tests; the config schema rejects the invalid configs of the config tests it can express; the
checker and the schema read one field table; ``yanflow-tui schema spec|config`` prints them."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest
import test_config
import test_spec
import yaml
from paths import SAMPLES

from yanflow_tui import fieldtable, fileschemas
from yanflow_tui import spec as specs
from yanflow_tui.config import COMMON_CLUSTER_KEYS, TOP_KEYS, parse_config
from yanflow_tui.errors import SpecError
from yanflow_tui.spec import load_spec


def validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads(fileschemas.path(name).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def our_specs() -> list:
    """Every spec file of ours among the samples and the template projects (native job files are not)."""
    found = sorted(SAMPLES.glob("*.yaml")) + sorted(SAMPLES.glob("projects/*/job.yaml"))
    assert len(found) >= 14
    return found


def cases(test) -> list:
    """The parameters of a parametrized test of another module (its invalid documents)."""
    (mark,) = [m for m in test.pytestmark if m.name == "parametrize"]
    return list(mark.args[1])


@pytest.mark.parametrize("name", fileschemas.NAMES)
def test_the_shipped_schema_is_the_generators_output(name):
    assert fileschemas.path(name).read_text(encoding="utf-8") == fileschemas.dumps(fileschemas.build(name)), (
        "stale: run `python -m yanflow_tui.fileschemas`"
    )


def test_the_samples_schema_copy_is_the_generators_output():
    """The copy beside the samples, which their `$schema` lines name (a relative path, resolved offline)."""
    copy = SAMPLES / fileschemas.SAMPLE_SCHEMA
    assert copy.read_text(encoding="utf-8") == fileschemas.dumps(fileschemas.build("spec")), (
        "stale: run `python -m yanflow_tui.fileschemas`"
    )


@pytest.mark.parametrize("path", our_specs(), ids=lambda p: p.relative_to(SAMPLES).as_posix())
def test_the_spec_schema_accepts_every_sample_and_template(path):
    load_spec(path)  # the checker accepts it
    text = path.read_text(encoding="utf-8")
    # The editor finds the schema: the copy beside the samples, by a path relative to the file.
    assert text.splitlines()[0] == fileschemas.sample_modeline(path.relative_to(SAMPLES))
    errors = [e.message for e in validator("spec").iter_errors(yaml.safe_load(text))]
    assert not errors


@pytest.mark.parametrize("text, expected", cases(test_spec.test_invalid_specs))
def test_the_spec_schema_rejects_every_invalid_spec_of_the_spec_tests(text, expected):
    with pytest.raises(SpecError):
        specs.parse_spec(text, "s.yaml")
    assert not validator("spec").is_valid(yaml.safe_load(text)), expected


# What a JSON Schema cannot say: two clusters of the same name; a file that is not YAML.
NOT_IN_A_SCHEMA = ("duplicate cluster name", None)


@pytest.mark.parametrize("text, expected", cases(test_config.test_config_errors_are_located))
def test_the_config_schema_rejects_the_invalid_configs_of_the_config_tests(text, expected):
    if expected is None or any(n and n in expected[0] for n in NOT_IN_A_SCHEMA):
        pytest.skip("not expressible in a JSON Schema")
    assert not validator("config").is_valid(yaml.safe_load(text)), expected


def test_the_config_schema_accepts_a_full_config():
    text = """\
read_only: false
refresh_seconds: 2
theme: textual-light
keymap: {cancel-job: x, quit: ctrl+q}
all_users: true
mouse: false
clusters:
  - name: here
    kind: local
    container: podman
  - name: hpc
    kind: slurm
    ssh: alice@login
    read_only: true
    refresh_seconds: 10
    description: the big one
    defaults: {kind: multi-node, resources: {gpus: 8}, slurm: {partition: gpu, time: "04:00:00"}}
    metrics: {prometheus: "http://prom:9090", timeout: 2}
    images:
      - nvcr.io/nvidia/pytorch:24.05-py3
      - {name: "pytorch/pytorch:2.4.0", description: PyTorch, frameworks: [pytorch]}
"""
    parse_config(text, "c.yaml")  # the checker accepts it
    assert not [e.message for e in validator("config").iter_errors(yaml.safe_load(text))]


def test_the_config_schema_knows_each_kinds_options():
    bad = {"clusters": [{"name": "a", "kind": "local", "ssh": "x"}]}  # ssh is Slurm's
    assert not validator("config").is_valid(bad)
    assert validator("config").is_valid({"clusters": [{"name": "a", "kind": "slurm", "ssh": "x"}]})


def test_the_checkers_read_the_field_table():
    assert specs.COMMON_KEYS == tuple(fieldtable.SPEC_FIELDS)
    assert specs.RESOURCE_KEYS == tuple(fieldtable.RESOURCE_FIELDS)
    assert TOP_KEYS == tuple(fieldtable.CONFIG_FIELDS)
    assert COMMON_CLUSTER_KEYS == tuple(fieldtable.CLUSTER_FIELDS)
    spec = fileschemas.build("spec")
    assert list(spec["properties"])[: len(specs.COMMON_KEYS)] == list(specs.COMMON_KEYS)
    assert set(spec["properties"]) == set(specs.top_keys())


@pytest.mark.parametrize("name", fileschemas.NAMES)
def test_the_schema_verb_prints_it(name):
    result = subprocess.run(
        [sys.executable, "-m", "yanflow_tui", "schema", name], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == fileschemas.build(name)
