"""Determined-backend tests: the SDK over real HTTP against the fake master.

Every test collected here carries the layer's ``determined`` marker (given by ``tests/conftest.py`` from the
folder), so ``pytest -m determined`` runs this layer alone."""
