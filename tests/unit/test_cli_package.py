"""The CLI package's seams: every verb the parser knows has one command, and the shared context's table."""

from __future__ import annotations

import argparse

from yanflow_tui.cli import offline, parser, schema
from yanflow_tui.cli.context import CliContext
from yanflow_tui.config import parse_config


def test_every_verb_of_the_parser_has_one_command_and_no_command_lacks_a_verb():
    whole = parser.build()
    sub = next(a for a in whole._actions if isinstance(a, argparse._SubParsersAction))
    verbs = list(sub.choices)
    headless = [name for module in parser.verb_modules() for name in module.COMMANDS]
    assert sorted(headless + list(offline.COMMANDS) + list(schema.COMMANDS)) == sorted(verbs)
    assert len(set(headless)) == len(headless)  # no verb in two modules
    assert verbs[-3:] == ["completion", "init", "schema"] and verbs[:3] == ["jobs", "nodes", "submit"]


def test_a_table_is_padded_to_its_widest_cells_and_cleaned(capsys):
    ctx = CliContext(parse_config("clusters:\n  - {name: here, kind: local}\n", "c.yaml"), argparse.Namespace())
    ctx.print_table(("NAME", "SIZE"), [("a\x1b[31mb", "1 B"), ("longer-name", "-")])
    assert capsys.readouterr().out.splitlines() == ["NAME         SIZE", "ab           1 B", "longer-name  -"]
    ctx.print_table(("EMPTY",), [])
    assert capsys.readouterr().out == "EMPTY\n"
