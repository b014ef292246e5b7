"""The JSON contract every ``--json`` output keeps (``docs/json.md``): one object holding
``schema_version``, the command's data under its own key (``jobs``, ``nodes``, ``explain``...), and
``errors``, one entry per cluster that could not answer, so that "no jobs" and "cluster down" differ."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, TextIO

SCHEMA_VERSION = 1


def cluster_error(cluster: str, message: str) -> dict[str, str]:
    """One ``errors`` entry: the cluster that could not answer, and why."""
    return {"cluster": cluster, "message": message}


def envelope(key: str, data: Any, errors: Iterable[dict[str, str]] = ()) -> dict[str, Any]:
    """The object a ``--json`` output prints: ``{"schema_version": 1, key: data, "errors": [...]}``."""
    return {"schema_version": SCHEMA_VERSION, key: data, "errors": list(errors)}


def dump(obj: dict[str, Any], out: TextIO) -> None:
    """``obj`` as indented JSON on ``out`` (the caller's stream), ended by a newline."""
    out.write(json.dumps(obj, indent=2) + "\n")
