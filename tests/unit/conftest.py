"""Unit tests: pure functions and single modules (spec, config, filters, renderers, stores); no cluster, no UI.

Every test collected here carries the ``unit`` marker, so ``pytest -m unit`` runs this layer alone."""

import pytest

HERE = __file__.rpartition("/")[0]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if str(item.path).startswith(HERE + "/"):
            item.add_marker("unit")
