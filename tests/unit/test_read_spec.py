"""``screens.submit.files.read_spec``: a spec file read for the Submit form, without Textual."""

from __future__ import annotations

from yanflow_tui.screens.submit.files import read_spec


def test_a_missing_file_leaves_the_form_alone(tmp_path):
    read = read_spec(str(tmp_path / "none.yaml"))
    assert read.data is None
    assert [path for path, _ in read.problems] == [""] and "no such file" in read.problems[0][1]


def test_a_file_that_is_not_a_mapping_leaves_the_form_alone(tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text("- a\n- b\n")
    read = read_spec(str(path))
    assert read.data is None and "a YAML list, not a mapping; expected a YanFlow job spec" in read.problems[0][1]


def test_control_characters_leave_the_form_alone(tmp_path):
    path = tmp_path / "ctl.yaml"
    path.write_text('name: "a\\x07b"\ncommand: echo\n')
    read = read_spec(str(path))
    assert read.data is None and read.problems


def test_a_file_with_problems_still_fills_the_form_and_says_where(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: job\ngpus: many\ncommand: echo hi\n")
    read = read_spec(str(path))
    assert read.data == {"name": "job", "gpus": "many", "command": "echo hi"}
    assert read.file == str(path.resolve())
    assert [field for field, _ in read.problems] == ["gpus"] and f"{path.resolve()}:2" in read.problems[0][1]


def test_a_good_file_has_no_problems(tmp_path):
    path = tmp_path / "good.yaml"
    path.write_text("name: job\ncommand: echo hi\n")
    read = read_spec(str(path))
    assert read.problems == [] and read.data == {"name": "job", "command": "echo hi"}
