"""Determined-backend tests: the SDK over real HTTP against the fake master, imported lazily as the console does.

Every test collected here carries the layer's ``determined`` marker (given by ``tests/conftest.py`` from the
folder), so ``pytest -m determined`` runs this layer alone."""

from yanflow_tui import lazyimports

# The SDK as the console loads it (``lazy_determined``: its packages' ``__init__`` not run), before the fake
# master or a test imports it; where another layer imported it whole first, this does nothing.
lazyimports.lazy_determined()
