"""Local-backend tests: the detached scheduler, the runner, NVML through the fake ``pynvml``.

Every test collected here carries the layer's ``local`` marker (given by ``tests/conftest.py`` from the
folder), so ``pytest -m local`` runs this layer alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from jobhelpers import cleanup_state_dir

from yanflow_tui import locations


@pytest.fixture
def state(home) -> Path:
    """The XDG state dir of the isolated home: shared by in-process backends and CLI subprocesses;
    whatever its jobs left running is stopped afterwards."""
    path = locations.state_dir()
    assert str(path).startswith(str(home))
    yield path
    cleanup_state_dir(path)
