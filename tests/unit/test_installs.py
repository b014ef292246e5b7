"""The extras and the way the console was installed (``yanflow_tui.installs``): each install (pip, uv pip,
pipx, uv tool, from a registry or a folder, editable) gets the command that adds an extra to it; a
configured cluster whose backend's extra is missing says so in one line, with that command, no traceback;
``-V`` prints the installed version."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata

import pytest

from yanflow_tui import installs
from yanflow_tui.backends import registry
from yanflow_tui.installs import Install, extra_command, extra_requirements
from yanflow_tui.model import ClusterConfig


@pytest.mark.parametrize(
    "install, expected",
    [
        (Install("pip"), "pip install 'yanflow-tui[kubernetes]'"),
        (Install("uv"), "uv pip install 'yanflow-tui[kubernetes]'"),
        (Install("pip", "/src/yanflow-tui", editable=True), "pip install -e '/src/yanflow-tui[kubernetes]'"),
        (Install("pipx"), "pipx inject yanflow-tui 'kubernetes<38,>=30'"),
        (Install("uv-tool"), "uv tool install --with 'kubernetes<38,>=30' yanflow-tui"),
        (Install("uv-tool", "/src/y"), "uv tool install --with 'kubernetes<38,>=30' /src/y"),
    ],
)
def test_each_install_gets_its_own_command(install, expected):
    assert extra_command("kubernetes", install) == expected


def test_all_names_every_backends_requirements():
    found = " ".join(extra_requirements("all"))
    for package in ("kubernetes", "determined", "tensorboard"):
        assert package in found
    assert extra_command("all", Install("pipx")).startswith("pipx inject yanflow-tui ")


def test_the_way_it_was_installed_is_read_from_the_prefix_and_the_metadata(tmp_path, monkeypatch):
    assert installs.detect(str(tmp_path)).tool in ("pip", "uv")  # this test venv: no pipx or uv tool receipt
    (tmp_path / "pipx_metadata.json").write_text("{}")
    assert installs.detect(str(tmp_path)).tool == "pipx"
    (tmp_path / "pipx_metadata.json").unlink()
    (tmp_path / "uv-receipt.toml").write_text("[tool]\n")
    assert installs.detect(str(tmp_path)).tool == "uv-tool"


class FakeDist(metadata.Distribution):
    def __init__(self, files: dict[str, str]):
        self.files_ = files

    def read_text(self, filename):
        return self.files_.get(filename)

    def locate_file(self, path):  # pragma: no cover - not used
        raise NotImplementedError


@pytest.mark.parametrize(
    "files, expected",
    [
        ({"INSTALLER": "pip\n"}, Install("pip")),
        ({"INSTALLER": "uv"}, Install("uv")),
        (
            {"INSTALLER": "pip", "direct_url.json": json.dumps({"url": "file:///src/y%20t", "dir_info": {}})},
            Install("pip", "/src/y t"),
        ),
        (
            {"INSTALLER": "pip", "direct_url.json": json.dumps({"url": "file:///s", "dir_info": {"editable": True}})},
            Install("pip", "/s", editable=True),
        ),
    ],
)
def test_installer_and_source_come_from_the_dist_info(files, expected, tmp_path, monkeypatch):
    monkeypatch.setattr(installs.metadata, "distributions", lambda name: [FakeDist(files)])
    assert installs.detect(str(tmp_path)) == expected


def test_a_kubernetes_cluster_without_the_client_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "kubernetes", None)  # as if not installed: find_spec finds nothing
    monkeypatch.delitem(sys.modules, "yanflow_tui.backends.kubernetes.backend", raising=False)
    backend = registry.create(ClusterConfig("k8s", "kubernetes"))
    assert backend.reason == (
        f"the kubernetes backend needs the Python package 'kubernetes' ({extra_command('kubernetes')})"
    )


def test_the_cli_says_it_in_one_line_without_a_traceback(monkeypatch, tmp_path, capsys):
    from yanflow_tui.cli import main

    monkeypatch.setitem(sys.modules, "kubernetes", None)
    monkeypatch.delitem(sys.modules, "yanflow_tui.backends.kubernetes.backend", raising=False)
    config = tmp_path / "config.yaml"
    config.write_text("clusters:\n  - {name: k8s, kind: kubernetes}\n")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert main(["--config", str(config), "jobs"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "cluster 'k8s': the kubernetes backend needs the Python package 'kubernetes' (" in err
    assert extra_command("kubernetes") in err


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version_comes_from_the_installed_metadata(flag):
    result = subprocess.run([sys.executable, "-m", "yanflow_tui", flag], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert result.stdout.strip() == f"yanflow-tui {metadata.version('yanflow-tui')}"
