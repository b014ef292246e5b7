"""Backend tests that cross kinds: the hub, the gate, job ids, raw specs and the command line.

Every test collected here carries the ``backends`` marker, so ``pytest -m backends`` runs this layer alone."""

import pytest

HERE = __file__.rpartition("/")[0]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if str(item.path).startswith(HERE + "/"):
            item.add_marker("backends")
