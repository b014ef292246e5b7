"""The wheel installs screens/ and backends/ as yanflow_tui.screens and yanflow_tui.backends, with
the stylesheet and the samples, and nothing as top-level packages; installed, the template picker
lists the samples."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from paths import ROOT


def build_wheel(tmp_path: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
        text=True,
    )
    return next(tmp_path.glob("yanflow_tui-*.whl"))


def test_wheel_layout(tmp_path):
    wheel = build_wheel(tmp_path)
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "yanflow_tui/app.py",
        "yanflow_tui/app.tcss",
        "yanflow_tui/screens/queue.py",
        "yanflow_tui/backends/local.py",
        "yanflow_tui/backends/local_runner.py",
    ):
        assert required in names
    # Each screen's own stylesheet (CSS_PATH) ships beside it, or an installed app fails to start.
    sheets = {f"yanflow_tui/screens/{path.name}" for path in (ROOT / "screens").glob("*.tcss")}
    assert len(sheets) >= 4 and sheets <= names
    samples = {
        f"yanflow_tui/sample_jobs/{p.relative_to(ROOT / 'sample_jobs')}"
        for p in (ROOT / "sample_jobs").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert len(samples) >= 10 and samples <= names, samples - names
    tops = {name.split("/")[0] for name in names}
    assert "screens" not in tops and "backends" not in tops
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "yanflow-tui = yanflow_tui.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_module_entry_point_runs():
    result = subprocess.run([sys.executable, "-m", "yanflow_tui", "--version"], capture_output=True, text=True)
    assert result.returncode == 0
    assert result.stdout.startswith("yanflow-tui ")


def test_an_installed_wheel_lists_the_samples_as_templates(tmp_path):
    wheel = build_wheel(tmp_path / "wheel")
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
