"""The reference docs keep up with the code: every error class the console can show has its section in
docs/troubleshooting.md; every ``YANFLOW_*`` variable the code reads or sets is in docs/environment.md; every
field of the spec's and the config's field table, and every kind's keys and sections, are in docs/spec.md and
docs/config.md; the man page is what scripts/manpage.py builds from the argument parser now."""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
import sys

import pytest
from paths import ROOT

from yanflow_tui import fieldtable
from yanflow_tui.backends import registry
from yanflow_tui.errors import YanflowError

DOCS = ROOT / "docs"
SOURCE = [ROOT / "yanflow_tui", ROOT / "screens", ROOT / "backends"]


def error_classes() -> set[type]:
    """YanflowError and every subclass of it in the package (every module imported first)."""
    # screens/ and backends/ are walked on their own: an editable install maps them with an import hook
    # that walking yanflow_tui's own folder does not see.
    import yanflow_tui.backends
    import yanflow_tui.screens

    for package in (yanflow_tui, yanflow_tui.backends, yanflow_tui.screens):
        for found in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if not found.name.endswith("__main__") and ".sample_jobs" not in found.name:
                importlib.import_module(found.name)
    out, todo = set(), [YanflowError]
    while todo:
        cls = todo.pop()
        if cls.__module__.startswith("yanflow_tui."):
            out.add(cls)
        todo += cls.__subclasses__()
    return out


def test_every_error_class_has_a_troubleshooting_entry():
    text = (DOCS / "troubleshooting.md").read_text(encoding="utf-8")
    sections = set(re.findall(r"^## `(\w+)`$", text, re.MULTILINE))
    classes = {cls.__name__ for cls in error_classes()}
    assert len(classes) >= 14
    missing = classes - sections
    assert not missing, f"docs/troubleshooting.md has no '## `Name`' section for: {sorted(missing)}"


def test_every_yanflow_variable_is_in_the_environment_reference():
    names = set()
    for folder in SOURCE:
        for path in folder.rglob("*.py"):
            names |= set(re.findall(r"\bYANFLOW_[A-Z][A-Z_]*[A-Z]\b", path.read_text(encoding="utf-8")))
    names -= {"YANFLOW_EOF"}  # the Slurm transport's end-of-output marker, not a variable
    assert {"YANFLOW_DEBUG", "YANFLOW_JOB_ID", "YANFLOW_JOB_NAME", "YANFLOW_CLUSTER"} <= names
    text = (DOCS / "environment.md").read_text(encoding="utf-8")
    missing = {name for name in names if f"`{name}`" not in text}
    assert not missing, f"not in docs/environment.md: {sorted(missing)}"
    seen = text.split("## What a job sees", 1)[1].split("\n## ", 1)[0]
    for name in ("YANFLOW_JOB_ID", "YANFLOW_JOB_NAME", "YANFLOW_CLUSTER", "YANFLOW_TB_LOGDIR"):
        assert f"`{name}`" in seen


@pytest.mark.parametrize(
    "doc, tables",
    [
        ("spec.md", [fieldtable.SPEC_FIELDS, fieldtable.RESOURCE_FIELDS]),
        (
            "config.md",
            [
                fieldtable.CONFIG_FIELDS,
                fieldtable.CLUSTER_FIELDS,
                fieldtable.CLUSTER_SHARED_OPTIONS,
                fieldtable.METRICS_FIELDS,
            ],
        ),
    ],
)
def test_every_field_of_the_table_is_documented(doc, tables):
    text = (DOCS / doc).read_text(encoding="utf-8")
    missing = [key for table in tables for key in table if f"`{key}`" not in text]
    assert not missing, f"not in docs/{doc}: {missing}"


def test_every_kinds_keys_and_section_are_documented():
    config = (DOCS / "config.md").read_text(encoding="utf-8")
    spec = (DOCS / "spec.md").read_text(encoding="utf-8")
    for info in registry.infos():
        assert f"`{info.kind}`" in config
        missing = [o for o in info.options if f"`{o}`" not in config]
        assert not missing, f"{info.kind}'s keys not in docs/config.md: {missing}"
        missing = [k for k in info.section if f"`{k}`" not in spec]
        assert not missing, f"{info.kind}'s section keys not in docs/spec.md: {missing}"


def test_the_man_page_is_current():
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "manpage.py"), "--check"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr + " (run python scripts/manpage.py)"
    page = (DOCS / "yanflow-tui.1").read_text(encoding="utf-8")
    for verb in ("jobs", "submit", "schema", "init"):
        assert f".SS {verb}\n" in page
