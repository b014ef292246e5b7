"""UI tests: the Textual pilot (``App.run_test``), snapshot tests and the real-terminal layer (pty + pyte).

Every test collected here carries the ``ui`` marker, so ``pytest -m ui`` runs this layer alone."""

import pytest

HERE = __file__.rpartition("/")[0]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if str(item.path).startswith(HERE + "/"):
            item.add_marker("ui")
