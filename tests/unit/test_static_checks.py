"""The static checks of the test command: each of ``scripts/check``'s checks fails on a planted fault
(in a copy of the tree), and ``scripts/test.sh`` runs them before pytest and fails when they fail."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT

VENV = Path(sys.prefix)  # the venv running the tests, which the test extra fills with the tools


@pytest.fixture
def tree(tmp_path) -> Path:
    """A copy of the tracked files of the repository (with any uncommitted edits), without the venv."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    copy = tmp_path / "repo"
    for name in filter(None, listed.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    return copy


def check(tree: Path, *names: str) -> subprocess.CompletedProcess:
    assert (VENV / "bin" / "ruff").exists(), "the static-check tools (ruff, mypy, import-linter) are not in this venv"
    env = {**os.environ, "VENV": str(VENV)}
    return subprocess.run(
        ["bash", "scripts/check", *names], cwd=tree, env=env, capture_output=True, text=True, timeout=600
    )


def plant(path: Path, text: str) -> None:
    source = path.read_text()
    head, _, rest = source.partition("from __future__ import annotations\n")
    path.write_text(f"{head}from __future__ import annotations\n{text}{rest}")


def test_the_tree_passes_lint_format_and_the_layering_contracts(tree):
    done = check(tree, "ruff", "format", "imports")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "passed: ruff format imports" in done.stderr


@pytest.mark.parametrize(
    ("name", "where", "text", "says"),
    [
        ("ruff", "yanflow_tui/sanitize.py", "import os\n", "F401"),
        ("format", "yanflow_tui/sanitize.py", "X = ( 1,2 )\n", "--> yanflow_tui/sanitize.py"),
        ("mypy", "yanflow_tui/sanitize.py", "def planted() -> int:\n    return 'x'\n", "yanflow_tui/sanitize.py"),
        ("imports", "backends/slurm/parse.py", "import textual\n", "slurm.parse -> textual"),
        ("imports", "screens/models/joblist.py", "import textual\n", "models.joblist -> textual"),
        ("mypy", "screens/models/warming.py", "def planted(x):\n    return x\n", "screens/models/warming.py"),
        (
            "imports",
            "screens/queue.py",
            "from yanflow_tui.backends.slurm import parse\n",
            "queue -> yanflow_tui.backends.slurm.parse",
        ),
        (
            "imports",
            "yanflow_tui/filters.py",
            "from yanflow_tui.screens.render import rows\n",
            "filters -> yanflow_tui.screens.render.rows",
        ),
    ],
)
def test_each_check_fails_on_a_planted_fault_and_names_it(tree, name, where, text, says):
    plant(tree / where, text)
    done = check(tree, name)
    assert done.returncode == 1, done.stdout + done.stderr
    assert says in done.stdout + done.stderr
    assert f"failed: {name}" in done.stderr


def stub(path: Path, body: str) -> None:
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(0o755)


@pytest.mark.parametrize(("checks", "tests", "expected"), [(1, 0, 1), (0, 3, 3), (0, 0, 0)])
def test_the_test_command_runs_the_checks_before_pytest_and_fails_with_them(tree, tmp_path, checks, tests, expected):
    """test.sh with stand-ins for python, the checks and the clusters: the order of the calls and the exit
    status (the checks' failure wins over passing tests; failing tests fail it too)."""
    calls = tmp_path / "calls"
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    stub(venv / "bin" / "python", f'echo "python $*" >> {calls}\n[ "$2" = pytest ] && exit {tests}\nexit 0\n')
    stub(tree / "scripts" / "check", f'echo "check $*" >> {calls}\nexit {checks}\n')
    stub(tree / "scripts" / "slurm-cluster", f'echo "slurm-cluster $*" >> {calls}\n')
    stub(tree / "scripts" / "matrix", f'echo "matrix $*" >> {calls}\n')  # the Python matrix
    stub(tree / "scripts" / "k8s-newest", f'echo "k8s-newest $*" >> {calls}\n')
    stub(tree / "scripts" / "dist-check", f'echo "dist-check $*" >> {calls}\n')
    env = {**os.environ, "VENV": str(venv)}
    done = subprocess.run(["bash", "scripts/test.sh"], cwd=tree, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == expected, done.stdout + done.stderr
    order = [line.split()[0] + (" pytest" if " pytest" in line else "") for line in calls.read_text().splitlines()]
    assert order.index("check") < order.index("python pytest")
    # the whole run has the Python matrix and the newest Kubernetes client too, before the suite's summary
    assert order.index("check") < order.index("matrix") < order.index("k8s-newest") < order.index("python pytest")
