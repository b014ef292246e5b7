"""Slurm-backend tests against the real loopback clusters (``scripts/slurm-cluster``) and recorded output.

Every test collected here carries the ``slurm`` marker, so ``pytest -m slurm`` runs this layer alone."""

import pytest

HERE = __file__.rpartition("/")[0]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if str(item.path).startswith(HERE + "/"):
            item.add_marker("slurm")
