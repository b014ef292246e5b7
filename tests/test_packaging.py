"""The wheel installs screens/ and backends/ as yanflow_tui.screens and yanflow_tui.backends, with
the stylesheet, and nothing as top-level packages."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_layout(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True, text=True,
    )
    wheel = next(tmp_path.glob("yanflow_tui-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in ("yanflow_tui/app.py", "yanflow_tui/app.tcss", "yanflow_tui/screens/queue.py",
                     "yanflow_tui/backends/local.py", "yanflow_tui/backends/local_runner.py"):
        assert required in names
    # Each screen's own stylesheet (CSS_PATH) ships beside it, or an installed app fails to start.
    sheets = {f"yanflow_tui/screens/{path.name}" for path in (ROOT / "screens").glob("*.tcss")}
    assert len(sheets) >= 4 and sheets <= names
    tops = {name.split("/")[0] for name in names}
    assert "screens" not in tops and "backends" not in tops
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "yanflow-tui = yanflow_tui.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_module_entry_point_runs():
    result = subprocess.run([sys.executable, "-m", "yanflow_tui", "--version"], capture_output=True, text=True)
    assert result.returncode == 0
    assert result.stdout.startswith("yanflow-tui ")
