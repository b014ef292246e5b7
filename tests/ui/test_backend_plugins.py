"""Backends as packages: a site's own backend, built and installed as a package of its own (with
``pip install --target``, no network), declares itself in the ``yanflow_tui.backends`` entry-point group
and its clusters show in the CLI (``jobs``, ``nodes``), the Queue and the Clusters screen; its backend
module is imported only when one of its clusters is made. A package whose plugin cannot be imported is
left out with a one-line note naming its package and distribution, and the other clusters work."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from uihelpers import screen_text
from waiting import wait_for

from yanflow_tui.app import YanflowApp
from yanflow_tui.backends import registry
from yanflow_tui.config import discover, load_config
from yanflow_tui.hub import Health, Hub

TOY_PLUGIN = '''"""The toy backend's declaration (light: nothing of the backend is imported)."""
from yanflow_tui.backends.base import BackendInfo
from yanflow_tui.model import ClusterConfig

INFO = BackendInfo(
    kind="toy",
    backend="yanflow_toy.backend:ToyBackend",
    options=("greeting",),
    section={"lane": "text"},
    refresh=5.0,
    discover=lambda env: [ClusterConfig("toybox", "toy", options={"greeting": "found"})] if "TOY" in env else [],
)
'''
TOY_BACKEND = '''"""A backend with two jobs and two nodes."""
from yanflow_tui.backends.base import Backend, Capabilities
from yanflow_tui.model import Job, JobState, Node


class ToyBackend(Backend):
    kind = "toy"
    capabilities = Capabilities()

    async def list_jobs(self):
        greeting = self.config.options.get("greeting", "plain")
        return [
            Job(id="t1", cluster=self.name, name=f"toy-train-{greeting}", user="ada", state=JobState.RUNNING),
            Job(id="t2", cluster=self.name, name="toy-eval", user="ada", state=JobState.PENDING),
        ]

    async def list_nodes(self):
        return [Node(self.name, "toynode1", "idle", gpus_total=4), Node(self.name, "toynode2", "mixed", gpus_total=8)]
'''
BROKEN_PLUGIN = '"""A plugin whose import fails."""\nimport yanflow_missing_sdk  # noqa: F401\n'
# A declaration that does not check: a spec section key of no known type.
ODD_PLUGIN = (
    "from yanflow_tui.backends.base import BackendInfo\n"
    'INFO = BackendInfo(kind="odd", backend="yanflow_odd.backend:Odd", section={"lane": "colour"})\n'
)


def package(root: Path, dist: str, module: str, kind: str, files: dict[str, str]) -> Path:
    folder = root / dist
    (folder / module).mkdir(parents=True)
    (folder / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        f'[project]\nname = "{dist}"\nversion = "0.1"\n'
        f'[project.entry-points."yanflow_tui.backends"]\n{kind} = "{module}.plugin:INFO"\n'
        f'[tool.setuptools]\npackages = ["{module}"]\n'
    )
    for name, text in {"__init__.py": "", **files}.items():
        (folder / module / name).write_text(text)
    return folder


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """Three backend packages installed into one folder: yanflow-toy (works), yanflow-broken (its import
    fails) and yanflow-odd (its declaration does not check)."""
    root = tmp_path_factory.mktemp("plugins")
    toy = package(root, "yanflow-toy", "yanflow_toy", "toy", {"plugin.py": TOY_PLUGIN, "backend.py": TOY_BACKEND})
    broken = package(root, "yanflow-broken", "yanflow_broken", "broken", {"plugin.py": BROKEN_PLUGIN})
    odd = package(root, "yanflow-odd", "yanflow_odd", "odd", {"plugin.py": ODD_PLUGIN})
    target = root / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--no-build-isolation"]
        + ["--target", str(target), str(toy), str(broken), str(odd)],
        check=True,
        capture_output=True,
    )
    return target


@pytest.fixture
def installed(site):
    """The packages on this process's path, the registry read again; both undone after."""
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    registry.reload()
    yield site
    sys.path.remove(str(site))
    for name in [m for m in sys.modules if m.split(".")[0] in ("yanflow_toy", "yanflow_broken", "yanflow_odd")]:
        del sys.modules[name]
    importlib.invalidate_caches()
    registry.reload()


def write_config(home: Path) -> Path:
    path = home / "clusters.yaml"
    path.write_text(
        "clusters:\n  - name: toy1\n    kind: toy\n    greeting: hello\n  - name: here\n    kind: local\n"
        "  - name: bad1\n    kind: broken\n    anything: 1\n"  # its plugin fails: it says why
    )
    return path


def run_cli(site: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    env |= {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_STATE_HOME": str(home / "state")}
    env["YANFLOW_CONFIG"] = str(write_config(home))
    cli = Path(sys.executable).with_name("yanflow-tui")
    return subprocess.run([str(cli), *args], capture_output=True, text=True, env=env, timeout=60)


def test_the_cli_lists_a_plugin_cluster_and_notes_the_broken_plugin(site, home):
    jobs = run_cli(site, home, "jobs", "--cluster", "toy1", "--json")
    assert jobs.returncode == 0, jobs.stderr
    assert {(j["id"], j["name"]) for j in json.loads(jobs.stdout)["jobs"]} == {
        ("t1", "toy-train-hello"),
        ("t2", "toy-eval"),
    }
    note, odd = [line for line in jobs.stderr.splitlines() if "note:" in line]  # one line each
    assert "'broken'" in note and "package yanflow_broken" in note and "distribution yanflow-broken 0.1" in note
    assert "No module named 'yanflow_missing_sdk'" in note
    assert "package yanflow_odd" in odd and "distribution yanflow-odd 0.1" in odd and "spec section types" in odd
    nodes = run_cli(site, home, "nodes", "--cluster", "toy1", "--json")
    assert nodes.returncode == 0, nodes.stderr
    assert sorted(n["name"] for n in json.loads(nodes.stdout)["nodes"]) == ["toynode1", "toynode2"]
    local = run_cli(site, home, "nodes", "--cluster", "here", "--json")  # the other clusters work
    assert local.returncode == 0 and json.loads(local.stdout)["nodes"], local.stderr
    bad = run_cli(site, home, "jobs", "--cluster", "bad1")  # a cluster of the broken kind says why
    assert bad.returncode != 0 and "package yanflow_broken" in bad.stderr.split("error:")[-1]


def test_the_plugin_is_declared_lightly_and_its_backend_imported_only_for_a_cluster(installed, home):
    assert registry.kinds()[:4] == ("local", "slurm", "kubernetes", "determined") and "toy" in registry.kinds()
    assert "broken" not in registry.kinds() and "odd" not in registry.kinds() and len(registry.notes()) == 2
    toy = registry.info("toy")
    assert toy is not None and toy.options == ("greeting",) and toy.refresh == 5.0
    assert [c.name for c in discover({"TOY": "1", "YANFLOW_DISCOVER": "toy"})] == ["toybox"]
    assert "yanflow_toy.plugin" in sys.modules and "yanflow_toy.backend" not in sys.modules
    assert registry.backend_class("toy").__module__ == "yanflow_toy.backend"


async def test_the_console_shows_the_plugin_cluster_in_the_queue_and_clusters_screen(installed, home):
    config = load_config(str(write_config(home)), lenient=True)
    app = YanflowApp(config, Hub(config))
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.hub.snapshots["toy1"].health is Health.OK, what="toy1 refreshed")
        await wait_for(pilot, lambda: "toy-train-hello" in screen_text(app), what="the toy jobs in the Queue")
        assert "toy-eval" in screen_text(app)
        notes = [str(n.message) for n in app._notifications if "yanflow_broken" in str(n.message)]
        assert len(notes) == 1 and "distribution yanflow-broken 0.1" in notes[0] and "\n" not in notes[0]
        await pilot.press("5")
        await wait_for(pilot, lambda: app.current_mode == "clusters", what="Clusters screen")
        await wait_for(pilot, lambda: "toy1" in screen_text(app) and "here" in screen_text(app), what="the clusters")
        await wait_for(pilot, lambda: app.hub.snapshots["here"].health is Health.OK, what="local refreshed")
        await wait_for(pilot, lambda: app.hub.snapshots["bad1"].health is Health.ERROR, what="bad1 in error")
        assert "yanflow_broken" in (app.hub.snapshots["bad1"].message or "")
        assert "bad1" in screen_text(app)
