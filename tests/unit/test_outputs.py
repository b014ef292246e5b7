"""A job's ``outputs:`` folder and the facts a Slurm job carries in its ``--comment`` (image, outputs):
the spec key checked with located errors and kept through the form's mapping, the folder resolved
against the workdir, and each backend's record of it (the Slurm comment, the Kubernetes annotation)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from yanflow_tui import formfields
from yanflow_tui.backends.downloads import output_folder
from yanflow_tui.backends.kubernetes.extract import ANN_OUTPUTS, job_info
from yanflow_tui.backends.kubernetes.manifests import manifests
from yanflow_tui.backends.slurm import comment, parse
from yanflow_tui.backends.slurm.containers import Container
from yanflow_tui.backends.slurm.script import render, render_native
from yanflow_tui.errors import SpecError
from yanflow_tui.nativefiles import read_job_text
from yanflow_tui.spec import parse_spec, spec_from_data, spec_to_data

TAG = "0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name: x\ncommand: c\noutputs: [a, b]\n", "s.yaml:3: outputs: expected text, got a list"),
        ("name: x\ncommand: c\noutputs: ''\n", "s.yaml:3: outputs: must not be empty"),
        ("name: x\ncommand: c\noutput: ckpt\n", 's.yaml:3: output: unknown key; did you mean "outputs"?'),
    ],
)
def test_a_bad_outputs_value_is_located(text, expected):
    with pytest.raises(SpecError) as info:
        parse_spec(text, "s.yaml")
    assert str(info.value) == expected


def test_outputs_loads_and_survives_the_forms_mapping():
    spec = parse_spec("name: x\ncommand: c\nworkdir: /w\noutputs: ckpt\n")
    assert spec.outputs == "ckpt"
    assert spec_to_data(spec)["outputs"] == "ckpt"
    assert spec_from_data(spec_to_data(spec), "<spec>") == spec
    assert "outputs" in [f.key for f in formfields.default_fields(spec.kind)]


def test_the_output_folder_is_relative_to_the_workdir_unless_absolute():
    assert output_folder(None, "/w") == "/w"
    assert output_folder("ckpt", "/w") == "/w/ckpt"
    assert output_folder("/data/run1", "/w") == "/data/run1"
    assert output_folder("ckpt", "") == "./ckpt"


def test_a_comment_carries_the_tag_and_the_facts_percent_encoded():
    text = comment.tagged(TAG, {"image": "docker://nvcr.io/x:1", "outputs": "/a b,c=d"})
    assert text == f"yanflow:{TAG},image=docker://nvcr.io/x:1,outputs=/a%20b%2Cc%3Dd"
    assert comment.tag_of(text) == TAG
    assert comment.facts_of(text) == {"image": "docker://nvcr.io/x:1", "outputs": "/a b,c=d"}
    assert comment.tagged(TAG) == f"yanflow:{TAG}" and comment.facts_of(f"yanflow:{TAG}") == {}
    assert comment.tag_of("a note of the user's") is None and comment.facts_of("x,image=y") == {}
    # a resubmit keeps the facts under its own tag; a user's own comment stays as it is
    assert comment.retagged(text, "f" * 32) == text.replace(TAG, "f" * 32)
    assert comment.retagged("", TAG) == f"yanflow:{TAG}" and comment.retagged("mine", TAG) == "mine"


def test_the_batch_script_records_image_and_outputs_in_its_comment_and_the_job_reads_the_image_back():
    spec = spec_from_data({"name": "x", "kind": "slurm", "command": "c", "image": "localhost/box:1", "outputs": "ckpt"})
    rendered = render(spec, TAG, container=Container("podman"))
    assert f"#SBATCH --comment=yanflow:{TAG},image=localhost/box:1,outputs=ckpt" in rendered.script.splitlines()
    raw = parse.raw_from_json({"job_id": 7, "name": "x", "job_state": "RUNNING", "comment": f"yanflow:{TAG},image=a:1"})
    assert parse.to_job(raw, "c").image == "a:1"
    assert parse.to_job(parse.raw_from_json({"job_id": 7, "comment": "user's"}), "c").image == ""


def test_an_sbatch_script_of_the_users_gets_its_outputs_in_the_comment_it_is_tagged_with():
    native = read_job_text("#!/bin/sh\n#SBATCH --job-name=mine\npython train.py\n", "run.sbatch")
    argv = render_native(replace(native, outputs="ckpt"), TAG).argv
    assert f"--comment=yanflow:{TAG},outputs=ckpt" in argv
    assert f"--comment=yanflow:{TAG}" in render_native(native, TAG).argv


def test_a_kubernetes_job_is_annotated_with_its_outputs_and_reads_them_back():
    spec = spec_from_data({"name": "x", "command": "c", "outputs": "/out"})
    job = manifests(spec, "tok", "ns")[0]
    assert job["metadata"]["annotations"][ANN_OUTPUTS] == "/out"
    assert job_info(job).outputs == "/out"
    assert job_info(manifests(spec_from_data({"name": "x", "command": "c"}), "tok", "ns")[0]).outputs == ""
