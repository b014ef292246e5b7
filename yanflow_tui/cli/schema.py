"""``schema spec|config``: print the JSON Schema of the job spec or of the config (``yanflow_tui.fileschemas``),
as this install makes it (a site's backend plugins' sections and options included). Needs no config and
touches no cluster."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from yanflow_tui.cli.parser import Subparsers

SCHEMAS = ("spec", "config")  # as yanflow_tui.fileschemas.NAMES (imported only when the verb runs)


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "schema",
        help="print the JSON Schema of the job spec or of the config (for editors)",
        description="Print the JSON Schema (draft 2020-12) of a job spec or of the config file, e.g. "
        "`yanflow-tui schema spec > spec.schema.json`, then point an editor at it: a first line "
        "`# yaml-language-server: $schema=spec.schema.json` in the YAML file (see docs/spec.md).",
    )
    p.add_argument("which", metavar="KIND", choices=SCHEMAS, help=" or ".join(SCHEMAS))


def schema(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from yanflow_tui import fileschemas

    sys.stdout.write(fileschemas.dumps(fileschemas.build(args.which)))
    return 0


COMMANDS: dict[str, Callable[[argparse.ArgumentParser, argparse.Namespace], int]] = {"schema": schema}
