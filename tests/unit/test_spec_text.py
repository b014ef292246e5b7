"""Spec and config text is checked, never crashed on: control characters, lone surrogates and bytes
that are not UTF-8 are refused in every field (keys too), both ways (a file, and the Submit form's
mapping), each with a ``file:line: field:`` problem; nothing is silently dropped."""

from __future__ import annotations

import copy

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from yanflow_tui.config import parse_config
from yanflow_tui.errors import SpecError
from yanflow_tui.spec import load_spec, parse_spec, section_keys, spec_from_data

BASE = {
    "name": "n",
    "kind": "multi-node",
    "cluster": "c",
    "command": "echo hi",
    "image": "img",
    "workdir": "/w",
    "env": {"A": "1"},
    "mounts": ["/a:/b"],
    "resources": {"nodes": 2, "gpus": 1, "memory": "1G"},
    "launcher": "torchrun",
    "description": "d",
    "slurm": {k: "t" for k, kind in section_keys()["slurm"].items() if kind == "text"},
    "kubernetes": {
        **{k: "t" for k, kind in section_keys()["kubernetes"].items() if kind == "text"},
        "node_selector": {"k": "v"},
        "tolerations": [{"key": "k"}],
    },
    "determined": {
        **{k: "t" for k, kind in section_keys()["determined"].items() if kind == "text"},
        "searcher": {"name": "single"},
        "hyperparameters": {"lr": "x"},
        "checkpoint_storage": {"type": "t"},
        "labels": ["l"],
    },
    "tensorboard": {k: "t" for k, kind in section_keys()["tensorboard"].items() if kind == "text"},
}
TEXT_FIELDS = (
    [
        "name",
        "kind",
        "cluster",
        "command",
        "image",
        "workdir",
        "env.A",
        "mounts[0]",
        "resources.memory",
        "launcher",
        "description",
    ]
    + [f"{section}.{key}" for section, keys in section_keys().items() for key, kind in keys.items() if kind == "text"]
    + [
        "kubernetes.node_selector.k",
        "kubernetes.tolerations[0].key",
        "determined.searcher.name",
        "determined.hyperparameters.lr",
        "determined.checkpoint_storage.type",
        "determined.labels[0]",
    ]
)
MULTILINE = {"command", "description", "determined.description"}
BAD = st.characters(categories=["Cc", "Cs"]) | st.sampled_from("\u2028\u2029\ufffe\uffff")


def parts(path: str) -> list[str | int]:
    out: list[str | int] = []
    for piece in path.replace("[", ".[").split("."):
        out.append(int(piece[1:-1]) if piece.startswith("[") else piece)
    return out


def with_value(path: str, bad: str, at: int) -> dict:
    data = copy.deepcopy(BASE)
    *parents, last = parts(path)
    holder = data
    for piece in parents:
        holder = holder[piece]
    value = holder[last]
    at %= len(value) + 1
    holder[last] = value[:at] + bad + value[at:]
    return data


def problems_at(exc: SpecError, path: str) -> list[tuple[str, int, str, str]]:
    return [p for p in exc.problems if p[2] == path]


def assert_clean(exc: SpecError) -> None:
    """Every problem line prints anywhere: one line, no raw control character or surrogate."""
    for line in str(exc).splitlines():
        line.encode("utf-8")
        assert line.isprintable(), ascii(line)


def test_the_base_spec_is_valid():
    spec_from_data(BASE)
    parse_spec(yaml.safe_dump(BASE))


@settings(max_examples=200, deadline=None)
@given(path=st.sampled_from(TEXT_FIELDS), bad=BAD, at=st.integers(0, 20))
def test_a_bad_character_in_any_field_is_refused_with_its_field_both_ways(path, bad, at):
    if path in MULTILINE and bad in "\t\n":
        bad = "\x00"
    data = with_value(path, bad, at)
    with pytest.raises(SpecError) as form:  # the Submit form's way: a mapping
        spec_from_data(data, "<form>")
    found = problems_at(form.value, path)
    assert found and f"U+{ord(bad):04X}" in found[0][3], form.value.problems
    assert_clean(form.value)

    text = yaml.safe_dump(data, allow_unicode=False)  # a file's way: YAML escapes
    with pytest.raises(SpecError) as file:
        spec_from_doc_bytes(text.encode("utf-8", "surrogatepass"))
    found = problems_at(file.value, path)
    assert found and found[0][1] >= 1 and f"U+{ord(bad):04X}" in found[0][3], file.value.problems
    assert_clean(file.value)


@settings(max_examples=100, deadline=None)
@given(key=st.sampled_from(["env", "kubernetes.node_selector", "determined.hyperparameters"]), bad=BAD)
def test_a_bad_character_in_a_key_is_refused(key, bad):
    data = copy.deepcopy(BASE)
    holder = data
    for piece in parts(key):
        holder = holder[piece]
    holder["K" + bad] = "v"
    with pytest.raises(SpecError) as info:
        spec_from_data(data)
    assert any(f"U+{ord(bad):04X}" in p[3] for p in info.value.problems)
    assert_clean(info.value)


def test_tab_and_line_break_only_in_multi_line_fields():
    spec = spec_from_data({**BASE, "command": "echo a\n\techo b\n", "description": "one\ntwo"})
    assert spec.command == "echo a\n\techo b\n"
    assert spec_from_data({**BASE, "command": ["bash", "-c", "a\nb"]}).command == ("bash", "-c", "a\nb")
    for path in ("name", "workdir", "env.A", "slurm.account"):
        for char in "\t\n":
            with pytest.raises(SpecError) as info:
                spec_from_data(with_value(path, char, 1))
            assert [p[3] for p in problems_at(info.value, path)] == [
                f"must be one line: contains a {'tab' if char == chr(9) else 'line break'} (U+{ord(char):04X})"
            ]


def spec_from_doc_bytes(data: bytes, file: str = "s.yaml"):
    from yanflow_tui.spec import spec_from_doc
    from yanflow_tui.yamldoc import load_yaml_bytes

    return spec_from_doc(load_yaml_bytes(data, file))


# -- the exact cases of the report ---------------------------------------------------------------------------

FIELD_LINES = {"name": 1, "workdir": 3, "image": 7, "slurm.account": 4, "slurm.output": 4, "env.V": 5, "command[1]": 6}


def spec_bytes(field: str, value: bytes) -> bytes:
    fields = {
        "name": b"n",
        "workdir": b"/w",
        "image": b"i",
        "slurm.account": b"a",
        "slurm.output": b"o",
        "env.V": b"v",
        "command[1]": b"w",
    }
    fields[field] = value
    return (
        b"name: "
        + fields["name"]
        + b"\nkind: single\nworkdir: "
        + fields["workdir"]
        + b"\nslurm: {account: "
        + fields["slurm.account"]
        + b", output: "
        + fields["slurm.output"]
        + b"}\nenv: {V: "
        + fields["env.V"]
        + b"}\ncommand: [echo, "
        + fields["command[1]"]
        + b"]\nimage: "
        + fields["image"]
        + b"\n"
    )


RAW = {
    "raw NUL": (b"a\x00b", "U+0000 NUL"),
    "escaped NUL": (b'"a\\0b"', "U+0000 NUL"),
    "escaped lone surrogate": (b'"a\\ud800b"', "lone surrogate (U+D800)"),
    "surrogatepass bytes": ("a\ud800b".encode("utf-8", "surrogatepass"), "not valid UTF-8 (byte 0xED)"),
    "surrogateescape bytes": ("a\udcffb".encode("utf-8", "surrogateescape"), "not valid UTF-8 (byte 0xFF)"),
    "invalid UTF-8": (b"a\xc3(b", "not valid UTF-8 (byte 0xC3)"),
    "raw ESC": (b"a\x1bb", "U+001B ESC"),
    "raw DEL": (b"a\x7fb", "U+007F DEL"),
    "escaped C1 CSI": (b'"a\\x9bb"', "U+009B"),
}


@pytest.mark.parametrize("case", sorted(RAW))
@pytest.mark.parametrize("field", sorted(FIELD_LINES))
def test_report_cases_get_one_located_problem_per_field(tmp_path, field, case):
    value, message = RAW[case]
    path = tmp_path / "bad.yaml"
    path.write_bytes(spec_bytes(field, value))
    with pytest.raises(SpecError) as info:
        load_spec(path)
    line = FIELD_LINES[field]
    assert info.value.problems == [(str(path), line, field, info.value.problems[0][3])], info.value.problems
    assert message in info.value.problems[0][3]
    assert_clean(info.value)


def test_a_bad_character_outside_any_field_is_still_refused():
    with pytest.raises(SpecError) as info:
        spec_from_doc_bytes(b"# a comment \x00\nname: n\ncommand: c\n")
    assert str(info.value) == "s.yaml:1: contains a control character (U+0000 NUL) outside any field"
    with pytest.raises(SpecError) as info:
        spec_from_doc_bytes(b"\x00")
    assert str(info.value).startswith("s.yaml:1: ")
    assert_clean(info.value)


# -- the config file -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "where,text",
    [
        ("clusters[0].name", 'clusters:\n  - {name: "a\\0b", kind: local}\n'),
        ("clusters[0].ssh", 'clusters:\n  - {name: a, kind: slurm, ssh: "u@h\\e"}\n'),
        ("theme", 'theme: "x\\ud800"\nclusters:\n  - {name: a, kind: local}\n'),
        ("keymap.quit", 'keymap: {quit: "q\\x01"}\nclusters:\n  - {name: a, kind: local}\n'),
        ("clusters[0].defaults.workdir", 'clusters:\n  - name: a\n    kind: local\n    defaults: {workdir: "/w\\0"}\n'),
    ],
)
def test_config_fields_refuse_bad_characters(where, text):
    with pytest.raises(SpecError) as info:
        parse_config(text, "config.yaml", env={})
    assert [p[2] for p in info.value.problems] == [where], info.value.problems
    assert "U+" in info.value.problems[0][3]
    assert_clean(info.value)


def test_config_multi_line_fields_keep_their_lines():
    config = parse_config(
        'clusters:\n  - name: a\n    kind: local\n    description: "one\\ntwo"\n'
        '    defaults: {command: "echo a\\necho b"}\n',
        "config.yaml",
        env={},
    )
    assert config.clusters[0].description == "one\ntwo"
    assert config.clusters[0].defaults["command"] == "echo a\necho b"


def test_a_config_file_that_is_not_utf8_names_its_field(tmp_path):
    from yanflow_tui.config import load_config

    path = tmp_path / "config.yaml"
    path.write_bytes(b"clusters:\n  - name: a\xff\n    kind: local\n")
    with pytest.raises(SpecError) as info:
        load_config(str(path), env={})
    assert str(info.value) == f"{path}:2: clusters[0].name: is not valid UTF-8 (byte 0xFF)"
