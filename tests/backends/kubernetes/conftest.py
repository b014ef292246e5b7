"""Kubernetes-backend tests: the official client over real HTTP against the API emulator.

Every test collected here carries the ``kubernetes`` marker, so ``pytest -m kubernetes`` runs this layer alone."""

import pytest

HERE = __file__.rpartition("/")[0]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if str(item.path).startswith(HERE + "/"):
            item.add_marker("kubernetes")
