"""Shared fixtures: an isolated home (XDG dirs, no user config, no discovered clusters) and a fake
NVML that child processes see too."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from paths import FAKES

# The real clusters' fixtures, for every layer: loopback Slurm (two profiles), the Kubernetes API
# emulator and the fake Determined master; and the fake backend, plugged in through the registry.
pytest_plugins = [
    "slurmhelpers",
    "sitehelpers",
    "k8shelpers",
    "dethelpers",
    "backendhelpers",
    "opensshhelpers",
    "containerhelpers",
    "prometheushelpers",
]

TESTS = Path(__file__).resolve().parent
# The test layers, each a folder with its conftest.py: its tests carry its marker (``pytest -m slurm``).
LAYERS = {"unit": "unit", "ui": "ui", "backends": "backends"}
KINDS = ("local", "slurm", "kubernetes", "determined")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        parts = Path(item.path).resolve().relative_to(TESTS).parts
        if parts and parts[0] in LAYERS:
            item.add_marker(LAYERS[parts[0]])
            if parts[0] == "backends" and len(parts) > 2 and parts[1] in KINDS:
                item.add_marker(parts[1])


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A fresh HOME with XDG dirs inside it; discovery finds only the local machine."""
    home = tmp_path / "home"
    home.mkdir()
    for var in ("YANFLOW_CONFIG", "DET_MASTER", "KUBECONFIG", "DET_USER", "DET_PASS", "DET_USER_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    # Discover only this machine, even where Slurm's squeue is on PATH (CI installs Slurm).
    monkeypatch.setenv("YANFLOW_DISCOVER", "local")
    return home


class FakeNvml:
    """Controls tests/fakes/pynvml.py through its JSON file."""

    def __init__(self, path: Path):
        self.path = path
        self.set(driver=False, devices=[])

    def set(self, driver: bool = True, devices: list[dict] | None = None) -> None:
        self.path.write_text(json.dumps({"driver": driver, "devices": devices or []}))

    def gpus(self, count: int, **fields) -> None:
        self.set(
            devices=[
                {"name": "NVIDIA A100-SXM4-80GB", "util": 0, "mem_used": 0, "mem_total": 81920, **fields}
                for _ in range(count)
            ]
        )


@pytest.fixture
def fake_nvml(tmp_path, monkeypatch) -> FakeNvml:
    """Replace pynvml with the fake, in this process and in child processes (PYTHONPATH)."""
    fake = FakeNvml(tmp_path / "nvml.json")
    monkeypatch.setenv("FAKE_NVML", str(fake.path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(FAKES), os.environ.get("PYTHONPATH")])))
    monkeypatch.syspath_prepend(str(FAKES))
    monkeypatch.delitem(sys.modules, "pynvml", raising=False)
    return fake
