"""UI tests: the Textual pilot (``App.run_test``), snapshot tests and the real-terminal layer (pty + pyte).

Every test collected here carries the layer's ``ui`` marker (given by ``tests/conftest.py`` from the folder),
so ``pytest -m ui`` runs this layer alone."""

import pytest

from yanflow_tui.screens.widgets.table import VirtualTable


@pytest.fixture(autouse=True)
def check_row_changes(monkeypatch):
    """Every ``RowChanges`` a screen gives its table is checked against a full compare (wrong ones raise)."""
    monkeypatch.setattr(VirtualTable, "check_changes", True)
