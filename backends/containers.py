"""The checks that every backend's ``container:`` cluster option shares: a mapping of ``runtime``,
``conf`` and ``args`` only, and ``args`` a list of strings. Which runtimes a backend knows, and what it
does with them, stay in its own ``containers`` module."""

from __future__ import annotations

from typing import Any

from yanflow_tui.errors import BackendError

KEYS = ("runtime", "conf", "args")


def checked_mapping(raw: object, cluster: str, example: str) -> dict[str, Any]:
    """``raw`` itself, once it is a mapping of known keys (``example``: a runtime, for the message)."""
    if not isinstance(raw, dict):
        raise BackendError(f"cluster {cluster!r}: container must be a mapping like {{runtime: {example}}}")
    unknown = sorted(set(raw) - set(KEYS))
    if unknown:
        raise BackendError(f"cluster {cluster!r}: container.{unknown[0]} is not known ({', '.join(KEYS)})")
    return raw


def checked_args(raw: dict[str, Any], cluster: str) -> tuple[str, ...]:
    """The mapping's ``args``: extra options for the runtime, a list of strings (none when absent)."""
    args = raw.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise BackendError(f"cluster {cluster!r}: container.args must be a list of strings")
    return tuple(args)
