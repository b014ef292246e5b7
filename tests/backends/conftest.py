"""Backend tests that cross kinds: the hub, the gate, job ids, raw specs and the command line.

Every test collected here carries the layer's ``backends`` marker (given by ``tests/conftest.py`` from the
folder), so ``pytest -m backends`` runs this layer alone."""
