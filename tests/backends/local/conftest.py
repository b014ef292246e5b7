"""Local-backend tests: the detached scheduler, the runner, NVML through the fake ``pynvml``.

Every test collected here carries the layer's ``local`` marker (given by ``tests/conftest.py`` from the
folder), so ``pytest -m local`` runs this layer alone."""
