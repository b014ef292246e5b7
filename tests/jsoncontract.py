"""Helpers for tests of the command line's JSON contract: an output checked against its shipped JSON
Schema (``yanflow_tui.output_schemas``, with ``jsonschema``), and a CLI run whose reader closes the
pipe before reading anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import jsonschema
from referencing import Registry, Resource

from yanflow_tui.output_schemas import all_schemas, schema


def _registry() -> Registry:
    return Registry().with_resources((uri, Resource.from_contents(doc)) for uri, doc in all_schemas().items())


def validated(output: str, name: str) -> dict[str, Any]:
    """``output`` (one JSON object) parsed and checked against schema ``name``; raises if it does not fit."""
    doc = json.loads(output)
    jsonschema.Draft202012Validator(
        schema(name), registry=_registry(), format_checker=jsonschema.FormatChecker()
    ).validate(doc)
    return doc


def run_into_closed_pipe(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``python -m yanflow_tui ARGS`` with stdout a pipe whose reader has gone before it writes
    (as ``yanflow-tui jobs | head -0``); stderr captured."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone: the first write meets EPIPE
    try:
        return subprocess.run(
            [sys.executable, "-m", "yanflow_tui", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            timeout=timeout,
        )
    finally:
        os.close(write)
