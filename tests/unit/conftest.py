"""Unit tests: pure functions and single modules (spec, config, filters, renderers, stores); no cluster, no UI.

Every test collected here carries the layer's ``unit`` marker (given by ``tests/conftest.py`` from the
folder), so ``pytest -m unit`` runs this layer alone."""
