"""The registry: each backend package declares its kind, options, spec section, refresh default and
discovery; the core asks for them, so a new kind needs no edit outside its package."""

from __future__ import annotations

import subprocess
import sys

import pytest

from yanflow_tui.backends import registry
from yanflow_tui.backends.base import Backend, BackendInfo
from yanflow_tui.config import discover, parse_config
from yanflow_tui.errors import SpecError
from yanflow_tui.model import ClusterConfig
from yanflow_tui.spec import parse_spec


class ToyBackend(Backend):
    kind = "toy"

    async def list_jobs(self):
        return []

    async def list_nodes(self):
        return []


TOY = BackendInfo(
    kind="toy",
    backend=ToyBackend,
    options=("endpoint", "token_file"),
    section={"queue": "text", "priority": "whole", "notes": "text"},
    multiline=("notes",),
    refresh=42.0,
    discover=lambda env: [ClusterConfig("toy", "toy", options={"endpoint": env["TOY"]})] if "TOY" in env else [],
)


def test_the_shipped_kinds_in_order():
    assert registry.kinds()[:4] == ("local", "slurm", "kubernetes", "determined")
    slurm = registry.info("slurm")
    assert slurm is not None and slurm.refresh == 10.0 and "ssh" in slurm.options and "partition" in slurm.section


def test_declarations_import_no_sdk():
    code = (
        "import sys\n"
        "from yanflow_tui import config, spec\n"
        "from yanflow_tui.backends import registry\n"
        "config.discover({'PATH': '', 'HOME': '/nonexistent', 'DET_MASTER': 'http://det:1'})\n"
        "assert len(registry.infos()) >= 4\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('kubernetes', 'determined')"
        " or m.endswith('.backend')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_new_kind_with_its_own_options_is_accepted_by_the_config_loader():
    text = "clusters:\n  - name: t\n    kind: toy\n    endpoint: http://toy:1\n"
    with registered_toy():
        config = parse_config(text, "c.yaml")
        (cluster,) = config.clusters
        assert (cluster.kind, cluster.options, cluster.refresh_seconds) == ("toy", {"endpoint": "http://toy:1"}, 42.0)
        assert isinstance(registry.create(cluster), ToyBackend)
        with pytest.raises(SpecError) as info:
            parse_config(text + "    endpont: x\n", "c.yaml")
        assert str(info.value) == 'c.yaml:5: clusters[0].endpont: unknown key; did you mean "endpoint"?'
    with pytest.raises(SpecError, match="clusters\\[0\\].kind: expected one of local, slurm, kubernetes, determined"):
        parse_config(text, "c.yaml")


def test_a_new_kind_brings_its_spec_section_and_discovery():
    with registered_toy():
        spec = parse_spec('name: x\ncommand: c\ntoy: {queue: fast, priority: 3, notes: "a\\tb"}\n')
        assert spec.section("toy") == {"queue": "fast", "priority": 3, "notes": "a\tb"}
        with pytest.raises(SpecError, match="toy.queue"):  # not a multi-line key: no tab
            parse_spec('name: x\ncommand: c\ntoy: {queue: "a\\tb"}\n')
        with pytest.raises(SpecError, match="toy.priority"):
            parse_spec("name: x\ncommand: c\ntoy: {priority: high}\n")
        found = discover({"TOY": "http://toy:2", "PATH": "", "HOME": "/nonexistent", "YANFLOW_DISCOVER": "toy"})
        assert [(c.kind, c.options) for c in found] == [("toy", {"endpoint": "http://toy:2"})]
    with pytest.raises(SpecError, match="unknown key"):
        parse_spec("name: x\ncommand: c\ntoy: {queue: fast}\n")


def test_a_fake_registered_with_just_a_class_gets_defaults():
    with registry.registered("fake-bare", ToyBackend):
        info = registry.info("fake-bare")
        assert info is not None and (info.options, dict(info.section), info.discover) == ((), {}, None)
        config = parse_config("clusters:\n  - name: f\n    kind: fake-bare\n", "c.yaml")
        assert config.clusters[0].refresh_seconds == 5.0
        assert isinstance(registry.create(config.clusters[0]), ToyBackend)
    assert registry.info("fake-bare") is None and "fake-bare" not in registry.kinds()


def test_a_class_swapped_in_for_a_shipped_kind_keeps_its_declaration_and_order():
    before = registry.kinds()
    with registry.registered("slurm", ToyBackend):
        assert registry.backend_class("slurm") is ToyBackend
        info = registry.info("slurm")
        assert info is not None and "ssh" in info.options
    assert registry.kinds() == before
    assert registry.backend_class("slurm").__name__ == "SlurmBackend"


def test_a_declaration_checks_its_section_types():
    with pytest.raises(TypeError, match="spec section types"):
        BackendInfo("bad", ToyBackend, section={"x": "number"})
    with pytest.raises(TypeError, match="not a key of its spec section"):
        BackendInfo("bad", ToyBackend, section={"x": "text"}, multiline=("y",))


def registered_toy():
    return registry.registered("toy", TOY)


def test_the_shipped_kinds_come_from_the_entry_point_group_or_their_packages_without_it(monkeypatch):
    from importlib import metadata

    declared = {e.name: e.value for e in metadata.entry_points(group=registry.GROUP)}
    assert declared["slurm"] == "yanflow_tui.backends.slurm.plugin:INFO" and set(registry.PACKAGES) <= set(declared)
    monkeypatch.setattr(metadata, "entry_points", lambda **_: [])  # a checkout whose metadata predates them
    registry.reload()
    try:
        assert registry.kinds() == registry.PACKAGES and registry.notes() == ()
        assert [f.kind for f in registry.native_formats()] == ["sbatch", "kubernetes", "determined"]
    finally:
        monkeypatch.undo()
        registry.reload()
