"""yamldoc: YAML with line numbers, and the checker's located problems."""

from __future__ import annotations

import pytest

from yanflow_tui.errors import SpecError, format_problem
from yanflow_tui.yamldoc import Checker, Doc, join, load_yaml, show

TEXT = """\
name: demo
resources:
  gpus: 2
  memory: 16G
mounts:
  - /a:/b
  - source: /c
    target: /d
env:
  FOO: bar
"""


def test_lines_of_every_field():
    doc = load_yaml(TEXT, "f.yaml")
    assert doc.data["resources"] == {"gpus": 2, "memory": "16G"}
    assert doc.lines["name"] == 1
    assert doc.lines["resources"] == 2
    assert doc.lines["resources.gpus"] == 3
    assert doc.lines["resources.memory"] == 4
    assert doc.lines["mounts[0]"] == 6
    assert doc.lines["mounts[1]"] == 7
    assert doc.lines["mounts[1].target"] == 8
    assert doc.lines["env.FOO"] == 10


def test_line_falls_back_to_nearest_parent():
    doc = load_yaml(TEXT, "f.yaml")
    assert doc.line("resources.cpus") == 2  # missing field: its mapping's line
    assert doc.line("mounts[1].read_only") == 7
    assert doc.line("nothing.at.all") == 1
    assert doc.line("") == 1


def test_join():
    assert join("", "name") == "name"
    assert join("resources", "gpus") == "resources.gpus"
    assert join("mounts", 3) == "mounts[3]"
    assert join(join("clusters", 0), "ssh") == "clusters[0].ssh"


def test_empty_document():
    doc = load_yaml("", "empty.yaml")
    assert doc.data is None
    assert doc.line("anything") == 1


def test_syntax_error_is_located():
    with pytest.raises(SpecError) as info:
        load_yaml("name: ok\ncommand: [unclosed\nother: 1\n", "s.yaml")
    ((file, line, field, message),) = info.value.problems
    assert file == "s.yaml"
    assert line >= 2
    assert field == ""
    assert message.startswith("YAML syntax error: ")
    assert str(info.value).startswith(f"s.yaml:{line}: YAML syntax error: ")


def test_duplicate_key_is_an_error():
    with pytest.raises(SpecError) as info:
        load_yaml("name: a\ncommand: x\nname: b\n", "d.yaml")
    assert str(info.value) == "d.yaml:3: name: duplicate key"


def test_nested_duplicate_key():
    with pytest.raises(SpecError) as info:
        load_yaml("resources:\n  gpus: 1\n  gpus: 2\n", "d.yaml")
    assert str(info.value) == "d.yaml:3: resources.gpus: duplicate key"


def test_complex_key_is_refused():
    with pytest.raises(SpecError) as info:
        load_yaml("? [a, b]\n: 1\n", "k.yaml")
    assert "keys must be plain text" in str(info.value)


def test_several_documents_are_an_error():
    with pytest.raises(SpecError) as info:
        load_yaml("a: 1\n---\nb: 2\n", "m.yaml")
    assert str(info.value).startswith("m.yaml:")
    assert "YAML syntax error" in str(info.value)


@pytest.mark.parametrize("text", ["when: 2024-13-45\n", "2024-02-30: x\n"])
def test_invalid_scalar_value_is_a_located_error_not_a_crash(text):
    # PyYAML raises a bare ValueError for impossible dates; it must become a located SpecError.
    with pytest.raises(SpecError) as info:
        load_yaml("name: n\n" + text, "t.yaml")
    assert str(info.value).startswith("t.yaml:2: ")
    assert len(str(info.value).splitlines()) == 1


@pytest.mark.parametrize(
    "value, shown",
    [
        ("two", '"two"'),
        ("", '""'),
        (None, "null"),
        (True, "true"),
        (False, "false"),
        (3, "3"),
        (1.5, "1.5"),
        ({"a": 1}, "a mapping"),
        ([1], "a list"),
        ('say "hi"', '"say \\"hi\\""'),
    ],
)
def test_show(value, shown):
    assert show(value) == shown


def test_format_problem():
    assert format_problem("f", 3, "a.b", "bad") == "f:3: a.b: bad"
    assert format_problem("f", 0, "", "no such file") == "f: no such file"
    assert format_problem("f", 2, "", "bad") == "f:2: bad"


def checker(text: str = "") -> Checker:
    return Checker(load_yaml(text, "c.yaml") if text else Doc("c.yaml", None, {"": 1}))


def test_checker_collects_every_problem_sorted_by_line():
    doc = load_yaml("b: x\na: y\n", "c.yaml")
    check = Checker(doc)
    check.whole("a", doc.data["a"])
    check.whole("b", doc.data["b"])
    with pytest.raises(SpecError) as info:
        check.raise_if_any()
    assert str(info.value).splitlines() == [
        'c.yaml:1: b: expected a whole number >= 0, got "x"',
        'c.yaml:2: a: expected a whole number >= 0, got "y"',
    ]


def test_checker_without_problems_does_not_raise():
    check = checker("a: 1\n")
    assert check.whole("a", 1) == 1
    check.raise_if_any()
    assert check.problems == []


def test_mapping_unknown_key_hint_and_required():
    doc = load_yaml("nmae: x\nzzzz: 1\n", "c.yaml")
    check = Checker(doc)
    check.mapping("", doc.data, ("name", "kind"), required=("name",))
    messages = [format_problem(*p) for p in check.problems]
    assert 'c.yaml:1: nmae: unknown key; did you mean "name"?' in messages
    assert "c.yaml:2: zzzz: unknown key; expected one of: name, kind" in messages
    assert "c.yaml:1: name: required field is missing" in messages


def test_mapping_rejects_non_mapping():
    check = checker()
    assert check.mapping("resources", [1, 2], ("gpus",)) == {}
    assert check.problems[0][2:] == ("resources", "expected a mapping, got a list")


@pytest.mark.parametrize(
    "value, minimum, expected, problem",
    [
        (3, 0, 3, None),
        (0, 0, 0, None),
        (-1, 0, None, "expected a whole number >= 0, got -1"),
        (0, 1, None, "expected a whole number >= 1, got 0"),
        (True, 0, None, "expected a whole number >= 0, got true"),
        (2.0, 0, None, "expected a whole number >= 0, got 2.0"),
        ("2", 0, None, 'expected a whole number >= 0, got "2"'),
        (None, 0, None, None),
    ],
)
def test_whole(value, minimum, expected, problem):
    check = checker()
    assert check.whole("x", value, minimum=minimum) == expected
    assert [p[3] for p in check.problems] == ([problem] if problem else [])


def test_number_and_boolean():
    check = checker()
    assert check.number("n", 2) == 2.0
    assert check.number("n", 0.1, minimum=0.5) is None
    assert check.number("n", "x") is None
    assert check.boolean("b", True) is True
    assert check.boolean("b", "yes please") is None
    assert [p[3] for p in check.problems] == [
        "expected a number >= 0.5, got 0.1",
        'expected a number >= 0, got "x"',
        'expected true or false, got "yes please"',
    ]


def test_string_choices_and_emptiness():
    check = checker()
    assert check.string("k", "single", choices=["single", "slurm"]) == "single"
    assert check.string("k", "slurn", choices=["single", "slurm"]) is None
    assert check.string("k", "   ") is None
    assert check.string("k", "   ", nonempty=False) == "   "
    assert check.string("k", 7) == "7"
    assert check.string("k", ["a"]) is None
    assert [p[3] for p in check.problems] == [
        'expected one of single, slurm, got "slurn"; did you mean "slurm"?',
        "must not be empty",
        "expected text, got a list",
    ]


@pytest.mark.parametrize(
    "value, mb",
    [
        (512, 512),
        ("512", 512),
        ("512M", 512),
        ("512Mi", 512),
        ("512MiB", 512),
        ("16G", 16384),
        ("16Gi", 16384),
        ("16 GB", 16384),
        ("1T", 1024 * 1024),
        ("1.5G", 1536),
        ("2048K", 2),
        ("0.5g", 512),
        ("1048576B", 1),
    ],
)
def test_memory_sizes(value, mb):
    check = checker()
    assert check.memory_mb("m", value) == mb
    assert check.problems == []


@pytest.mark.parametrize("value", ["lots", "16X", "-1G", -5, True, 1.5, "G"])
def test_memory_rejects(value):
    check = checker()
    assert check.memory_mb("m", value) is None
    assert check.problems[0][3].startswith("expected a size such as 16G or 512M, got ")


def test_env():
    check = checker()
    env = check.env("env", {"A": "x", "B": 1, "C": True, "bad-name": "v", "D": None, "E": [1]})
    assert env == {"A": "x", "B": "1", "C": "true"}
    assert [(p[2], p[3]) for p in check.problems] == [
        ("env.bad-name", "environment names must match [A-Za-z_][A-Za-z0-9_]*"),
        ("env.D", "expected text, got null"),
        ("env.E", "expected text, got a list"),
    ]


def test_string_list():
    check = checker()
    assert check.string_list("l", ["a", 1]) == ["a", "1"]
    assert check.string_list("l", "a") is None
    assert check.problems[0][2:] == ("l", 'expected a list of text, got "a"')
