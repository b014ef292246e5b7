"""Backends: one module per cluster system, all speaking the protocol in ``base``.

Backends know nothing of Textual. Importing this package is cheap; each backend is imported
lazily by the registry, only when a cluster of its kind is configured.
"""
