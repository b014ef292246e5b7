"""The command line's grammar: the options every command takes (``common``), a plain console start's
quick read of them (``console_args``), the whole parser assembled from each verb module's
``add_parsers`` (``build``), and each headless command by name (``commands``)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from yanflow_tui.locations import app_log_path, display_path

if TYPE_CHECKING:
    from yanflow_tui.cli.context import Command

    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]  # what ``add_subparsers`` returns

# The verb modules are imported by ``build`` and ``commands`` only: a plain console start reads its
# options with ``console_args`` and never loads them (nor shtab).


class VerbModule(Protocol):
    """A module of verbs (``yanflow_tui.cli.jobs`` ...): it adds their parsers and maps each to its command."""

    COMMANDS: dict[str, Command]

    def add_parsers(self, sub: Subparsers, common: argparse.ArgumentParser) -> None: ...


def common(files: object = None, exit_on_error: bool = True) -> argparse.ArgumentParser:
    """The options every command takes; ``files``: shtab's completion of a file name (the whole parser's)."""
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=exit_on_error)
    config = parser.add_argument(
        "--config",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help="config file (default: $YANFLOW_CONFIG or $XDG_CONFIG_HOME/yanflow/config.yaml)",
    )
    if files is not None:
        config.complete = files  # type: ignore[attr-defined]
    parser.add_argument(
        "--read-only",
        action="store_true",
        default=argparse.SUPPRESS,
        help="refuse every submit, cancel or other change, on every cluster",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="write more detail to the log (no secrets, ever)",
    )
    return parser


def console_args(argv: Sequence[str] | None) -> argparse.Namespace | None:
    """The arguments of a plain console start (no command; only the common options), read without building
    every command's parser and importing shtab, which would cost the first paint ~35 ms. None for anything
    else (a command, --help, --version, a mistake): the whole parser reads those and says what is wrong."""
    try:
        args, rest = common(exit_on_error=False).parse_known_args(argv)
    except argparse.ArgumentError:
        return None
    if rest:
        return None
    args.command = None
    return args


def verb_modules() -> tuple[VerbModule, ...]:
    """The headless commands' modules, in the order ``--help`` lists their verbs."""
    from yanflow_tui.cli import (
        describe,
        explain,
        failure,
        files,
        health,
        inside,
        jobs,
        logs,
        metrics,
        resume,
        submit,
        tensorboard,
        verbs,
        watch,
        where,
    )

    return (
        jobs,
        submit,
        describe,
        verbs,
        resume,
        logs,
        metrics,
        files,
        inside,
        tensorboard,
        explain,
        where,
        failure,
        health,
        watch,
    )


def build() -> argparse.ArgumentParser:
    """The whole parser: every command, their options and shtab's completion hints."""
    import shtab  # static completion scripts, made from this parser

    from yanflow_tui import installs  # the installed metadata's version: read only for the whole parser
    from yanflow_tui.cli import offline, schema

    shared = common(shtab.FILE)
    parser = argparse.ArgumentParser(
        prog="yanflow-tui",
        parents=[shared],
        description="A keyboard-driven console for ML training clusters. Without a command, starts the console.",
        epilog=f"log: {display_path(app_log_path())} (mode 0600, rotated; more detail with --debug)",
    )
    parser.add_argument("-V", "--version", action="version", version=f"yanflow-tui {installs.version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in verb_modules():
        module.add_parsers(sub, shared)
    offline.add_parsers(sub, shared)  # completion, init: no config, no cluster
    schema.add_parsers(sub, shared)  # schema spec|config: no config, no cluster
    return parser


def commands() -> dict[str, Command]:
    """Each headless command by name (its modules imported on first use)."""
    global _COMMANDS
    if _COMMANDS is None:
        _COMMANDS = {name: command for module in verb_modules() for name, command in module.COMMANDS.items()}
    return _COMMANDS


_COMMANDS: dict[str, Command] | None = None
