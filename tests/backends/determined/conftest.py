"""Determined-backend tests: the SDK over real HTTP against the fake master.

Every test collected here carries the ``determined`` marker, so ``pytest -m determined`` runs this layer alone."""

import pytest

HERE = __file__.rpartition("/")[0]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if str(item.path).startswith(HERE + "/"):
            item.add_marker("determined")
