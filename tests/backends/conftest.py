"""Backend tests that cross kinds: the hub, the gate, job ids, raw specs and the command line.

Every test collected here carries the layer's ``backends`` marker (given by ``tests/conftest.py`` from the
folder), so ``pytest -m backends`` runs this layer alone."""

from __future__ import annotations

import pytest
from jobhelpers import cleanup_state_dir

from yanflow_tui import locations


@pytest.fixture
def env(home, fake_nvml):
    """Isolated home, fake NVML with two GPUs (in the CLI subprocesses too); cleans up jobs afterwards."""
    fake_nvml.gpus(2)
    state = locations.state_dir()
    yield home
    cleanup_state_dir(state)
