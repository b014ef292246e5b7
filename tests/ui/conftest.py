"""UI tests: the Textual pilot (``App.run_test``), snapshot tests and the real-terminal layer (pty + pyte).

Every test collected here carries the layer's ``ui`` marker (given by ``tests/conftest.py`` from the folder),
so ``pytest -m ui`` runs this layer alone."""
