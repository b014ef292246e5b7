"""Slurm-backend tests against the real loopback clusters (``scripts/slurm-cluster``) and recorded output.

Every test collected here carries the layer's ``slurm`` marker (given by ``tests/conftest.py`` from the
folder), so ``pytest -m slurm`` runs this layer alone."""
