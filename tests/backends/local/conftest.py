"""Local-backend tests: the detached scheduler, the runner, NVML through the fake ``pynvml``.

Every test collected here carries the ``local`` marker, so ``pytest -m local`` runs this layer alone."""

import pytest

HERE = __file__.rpartition("/")[0]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if str(item.path).startswith(HERE + "/"):
            item.add_marker("local")
