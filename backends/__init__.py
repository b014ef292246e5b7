"""Backends: one package per cluster system, all speaking the protocol in ``base``.

Backends know nothing of Textual. Importing this package is cheap. Each package declares itself in a
light ``plugin.py`` (its kind, config options, spec section, refresh default, discovery); the registry
reads those, and imports a backend itself lazily, only when a cluster of its kind is configured.
"""
