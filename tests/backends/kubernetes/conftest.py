"""Kubernetes-backend tests: the official client over real HTTP against the API emulator.

Every test collected here carries the layer's ``kubernetes`` marker (given by ``tests/conftest.py`` from the
folder), so ``pytest -m kubernetes`` runs this layer alone."""
