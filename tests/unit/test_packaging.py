"""The wheel installs screens/ and backends/ as yanflow_tui.screens and yanflow_tui.backends, with every
package, module, stylesheet and sample found in the source tree (never a hand list, so a new sub-package
can never be silently missing), nothing stale and nothing at the top level besides yanflow_tui; installed,
the template picker lists the samples."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from paths import ROOT

# Source folder -> where the wheel has it (setup.py's package_dir).
INSTALLED_AS = {"yanflow_tui": "yanflow_tui", "screens": "yanflow_tui/screens", "backends": "yanflow_tui/backends"}
SAMPLES_AS = "yanflow_tui/sample_jobs"
BUILD_LEFTOVERS = {".git", "build", "dist", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis"}
BUILD_LEFTOVERS |= {".import_linter_cache"}


def _source_copy_ignore(folder: str, names: list[str]) -> set[str]:
    """Leave out what a build must not see: VCS data, virtual environments, caches, old build output."""
    return {
        name
        for name in names
        if name in BUILD_LEFTOVERS or name.endswith(".egg-info") or (Path(folder, name) / "pyvenv.cfg").exists()
    }


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built by ``python -m build`` from a clean copy of the checkout (setuptools reuses an
    in-tree build/ folder, which would carry modules deleted since)."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "src"
    shutil.copytree(ROOT, source, ignore=_source_copy_ignore, symlinks=True)
    result = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(root / "dist"), str(source)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (found,) = (root / "dist").glob("yanflow_tui-*.whl")
    return found


def source_packages() -> dict[str, Path]:
    """Every package of the source tree (a folder with ``__init__.py``), by its path in the wheel."""
    out = {}
    for folder, installed in INSTALLED_AS.items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            if "__pycache__" not in init.parts:
                rel = init.parent.relative_to(base)
                out[installed if rel == Path(".") else f"{installed}/{rel.as_posix()}"] = init.parent
    return out


def expected_files() -> set[str]:
    """Every module of every package, every stylesheet, JSON Schema and sample, at its path in the wheel."""
    out = set()
    for installed, folder in source_packages().items():
        out |= {f"{installed}/{p.name}" for p in folder.glob("*.py")}
        out |= {f"{installed}/{p.name}" for p in folder.glob("*.tcss")}
        out |= {f"{installed}/{p.name}" for p in folder.glob("*.json")}  # the --json outputs' schemas
    samples = ROOT / "sample_jobs"
    out |= {
        f"{SAMPLES_AS}/{p.relative_to(samples).as_posix()}"
        for p in samples.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }
    return out


def test_the_source_tree_is_discovered():
    """The discovery this test relies on finds the layout: a guard against a test that checks nothing."""
    packages = source_packages()
    for name in (
        "yanflow_tui",
        "yanflow_tui/screens/widgets",
        "yanflow_tui/screens/render",
        "yanflow_tui/backends/slurm",
    ):
        assert name in packages
    files = expected_files()
    assert sum(name.endswith(".tcss") for name in files) >= 5
    assert "yanflow_tui/output_schemas/jobs.json" in files
    assert sum(name.startswith(SAMPLES_AS + "/") for name in files) >= 10
    # Every stylesheet in the tree lies in a package, so expected_files() has them all.
    sheets = {p for base in INSTALLED_AS for p in (ROOT / base).rglob("*.tcss")}
    assert all((p.parent / "__init__.py").exists() for p in sheets), sheets


def test_the_wheel_has_every_package_module_stylesheet_and_sample(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = expected_files() - names
    assert not missing, f"not in the wheel: {sorted(missing)}"
    # The old paths' shims (local jobs started by an older version run them by module name).
    assert {"yanflow_tui/backends/local_runner.py", "yanflow_tui/backends/local_scheduler.py"} <= names


def test_the_wheel_has_nothing_stale_and_nothing_at_the_top(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {n for n in names if n.endswith(".py") and not n.startswith(SAMPLES_AS + "/")}
    stale = modules - expected_files()
    assert not stale, f"in the wheel, not in the source tree: {sorted(stale)}"
    tops = {name.split("/")[0] for name in names}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"yanflow_tui"}
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    declared = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "yanflow-tui = yanflow_tui.cli:main" in declared
    # the shipped backends, found by the registry through their entry-point group
    assert "[yanflow_tui.backends]" in declared
    for kind in ("local", "slurm", "kubernetes", "determined"):
        assert f"{kind} = yanflow_tui.backends.{kind}.plugin:INFO" in declared


def test_module_entry_point_runs():
    result = subprocess.run([sys.executable, "-m", "yanflow_tui", "--version"], capture_output=True, text=True)
    assert result.returncode == 0
    assert result.stdout.startswith("yanflow-tui ")


def test_an_installed_wheel_lists_the_samples_as_templates(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        text=True,
    )
    script = (
        "import yanflow_tui, yanflow_tui.templates as t; print(yanflow_tui.__file__); "
        "print('\\n'.join(f'{x.origin} {x.name} {x.path}' for x in t.list_templates()))"
    )
    home = tmp_path / "home"
    home.mkdir()
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
        env=dict(os.environ, PYTHONPATH=str(target), HOME=str(home), XDG_CONFIG_HOME=""),
    )
    first, *rows = result.stdout.splitlines()
    assert first.startswith(str(target))  # the installed copy, not the checkout
    samples = {line.split()[1] for line in rows if line.startswith("sample ")}
    assert {p.stem for p in (ROOT / "sample_jobs").glob("*.yaml")} <= samples
    assert all(str(target) in line for line in rows if line.startswith("sample "))


def test_an_installed_wheel_writes_every_template_project(wheel, tmp_path):
    """``yanflow-tui init`` from the installed copy: every project's files, from the wheel, not the checkout."""
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        text=True,
    )
    script = (
        "import sys, yanflow_tui.projects as p; "
        "[print(x.folder, p.write_project(x.name, sys.argv[1] + '/' + x.name)) for x in p.list_projects()]"
    )
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-c", script, str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
        env=dict(os.environ, PYTHONPATH=str(target)),
    )
    rows = result.stdout.splitlines()
    source = ROOT / "sample_jobs" / "projects"
    names = {p.name for p in source.iterdir() if (p / "job.yaml").exists()}
    assert len(rows) == len(names) >= 6 and all(row.startswith(str(target)) for row in rows)
    for name in names:
        files = (source / name).rglob("*")
        shipped = {p.relative_to(source / name) for p in files if p.is_file() and "__pycache__" not in p.parts}
        written = {p.relative_to(out / name) for p in (out / name).rglob("*") if p.is_file()}
        assert written == shipped | {Path("yanflow_events.py")}, name


def test_the_wheel_carries_the_licence_and_complete_metadata(wheel):
    """Adoptable: the licence file and expression, the project's URLs, a classifier per supported Python,
    the extras (the core without the Kubernetes client) and the schemas editors read."""
    archive = zipfile.ZipFile(wheel)
    names = set(archive.namelist())
    licence = next(n for n in names if n.endswith(".dist-info/licenses/LICENSE"))
    assert "Apache License" in archive.read(licence).decode()
    meta = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: Apache-2.0" in meta
    for minor in (10, 11, 12, 13):
        assert f"Classifier: Programming Language :: Python :: 3.{minor}\n" in meta
    for label in ("Homepage", "Documentation", "Changelog", "Issues"):
        assert f"Project-URL: {label}, https://" in meta
    for extra in ("kubernetes", "determined", "tensorboard", "all"):
        assert f"Provides-Extra: {extra}\n" in meta
    core = [line for line in meta.splitlines() if line.startswith("Requires-Dist:") and "extra ==" not in line]
    assert core and not any("kubernetes" in line or "determined" in line for line in core)
    assert {"yanflow_tui/fileschemas/spec.schema.json", "yanflow_tui/fileschemas/config.schema.json"} <= names
