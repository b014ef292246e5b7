"""The JSON Schemas (draft 2020-12) of the command line's ``--json`` outputs, shipped as package data:
one file per output (``jobs.json``, ``nodes.json``, ``describe.json``, ``submit.json``,
``metrics.json``, ``explain.json``, ``failure.json``, ``resume.json``) and the parts they share (``job.json``,
``errors.json``, ``firstfailure.json``, ``health.json``); see docs/json.md."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

OUTPUTS = ("jobs", "nodes", "describe", "submit", "metrics", "explain", "failure", "resume")


def schema(name: str) -> dict[str, Any]:
    """The schema file ``name`` (``jobs``, ``job``, ``errors``...) as a mapping."""
    text = resources.files(__name__).joinpath(f"{name}.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def all_schemas() -> dict[str, dict[str, Any]]:
    """Every schema file by its ``$id`` (what a validator resolves the ``$ref``s against)."""
    names = [p.name[:-5] for p in resources.files(__name__).iterdir() if p.name.endswith(".json")]
    return {schema(n)["$id"]: schema(n) for n in names}
