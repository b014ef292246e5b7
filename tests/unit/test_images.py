"""The images catalogue in the config: ``images:`` per cluster (mappings or plain names), with
``file:line`` problems and "did you mean" like every other key; merging catalogues; the Submit form's
image field offering one (choices and help), and nothing else changed."""

from __future__ import annotations

import pytest

from yanflow_tui import formfields as ff
from yanflow_tui.config import parse_config
from yanflow_tui.errors import SpecError
from yanflow_tui.images import label, merged, with_images
from yanflow_tui.model import Image, JobKind

GOOD = """\
clusters:
  - name: hpc
    kind: local
    images:
      - name: nvcr.io/nvidia/pytorch:24.05-py3
        description: NGC PyTorch
        frameworks: [pytorch, deepspeed]
      - tensorflow/tensorflow:2.16.1-gpu
      - {name: "horovod/horovod:latest", frameworks: horovod}
  - name: other
    kind: local
"""


def test_a_clusters_catalogue_is_read_in_order():
    config = parse_config(GOOD, "c.yaml")
    hpc, other = config.clusters
    assert hpc.images == (
        Image("nvcr.io/nvidia/pytorch:24.05-py3", "NGC PyTorch", ("pytorch", "deepspeed")),
        Image("tensorflow/tensorflow:2.16.1-gpu"),
        Image("horovod/horovod:latest", "", ("horovod",)),
    )
    assert other.images == ()


@pytest.mark.parametrize(
    "images, line, message",
    [
        ("    images: pytorch\n", 4, "images: expected a list of images"),
        (
            "    images:\n      - {name: a, framework: [x]}\n",
            5,
            'images[0].framework: unknown key; did you mean "frameworks"?',
        ),
        ("    images:\n      - {description: no name}\n", 5, "images[0].name: required field is missing"),
        ("    images:\n      - ok:1\n      - ok:1\n", 6, "images[1].name: image 'ok:1' is listed twice"),
        ("    images:\n      - name: 'two words'\n", 5, "images[0].name: an image name has no spaces"),
        ("    images:\n      - [a, b]\n", 5, "images[0]: expected an image name or a mapping"),
        (
            "    images:\n      - {name: a, frameworks: {x: 1}}\n",
            5,
            "images[0].frameworks: expected a list of frameworks",
        ),
    ],
)
def test_catalogue_problems_are_located(images, line, message):
    text = "clusters:\n  - name: hpc\n    kind: local\n" + images
    with pytest.raises(SpecError) as caught:
        parse_config(text, "c.yaml")
    assert f"c.yaml:{line}: clusters[0].{message}" in str(caught.value)


def test_a_broken_catalogue_breaks_only_its_cluster_in_the_console():
    text = GOOD.replace("frameworks: horovod", "frameworkz: horovod")
    hpc, other = parse_config(text, "c.yaml", lenient=True).clusters
    assert hpc.problems and "frameworkz" in hpc.problems[0] and not other.problems


def test_merged_keeps_the_first_of_each_name_and_with_images_changes_only_the_image_field():
    mine = Image("a:1", "mine")
    assert merged([mine, Image("b:1")], [Image("a:1", "theirs"), Image("c:1")]) == (mine, Image("b:1"), Image("c:1"))
    fields = ff.default_fields(JobKind.SINGLE)
    offered = with_images(fields, [Image("a:1", "ours", ("pytorch",))])
    image = next(f for f in offered if f.key == "image")
    assert image.choices == ("a:1",) and "a:1  [pytorch]  ours" in image.help and image.kind == ff.TEXT
    assert [f for f in offered if f.key != "image"] == [f for f in fields if f.key != "image"]
    assert with_images(fields, []) == fields
    assert label(Image("x")) == "x"
