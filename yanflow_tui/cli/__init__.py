"""Command line: ``yanflow-tui`` starts the console (``console``); ``jobs``, ``nodes`` (``jobs``),
``describe`` (``describe``),
``submit`` (``submit``), ``cancel`` and the scheduler verbs ``resubmit``, ``hold``, ``release``,
``requeue``, ``edit``, ``signal`` (``verbs``), ``logs`` (``logs``), ``metrics`` (``metrics``), and
inside a running job ``files``, ``download`` (``files``), ``shell``, ``forward`` (``inside``) and
``tensorboard`` (``tensorboard``) run headless over the same backends, each given a ``CliContext``
(``context``); ``completion SHELL`` and ``init`` need no config (``offline``), nor does ``schema``
(``schema``). ``parser`` holds the
grammar. This module is the entry point (``main``). Errors go to stderr as one line, exit code
non-zero, never a traceback (``YANFLOW_DEBUG=1`` shows one)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING

from yanflow_tui import __version__, applog, keyfiles
from yanflow_tui.cli.context import EXIT_ERROR, EXIT_PIPE, EXIT_USAGE, UsageError, error
from yanflow_tui.cli.parser import console_args
from yanflow_tui.errors import UIConfigError, YanflowError
from yanflow_tui.locations import display_path
from yanflow_tui.sanitize import clean, clean_streams

if TYPE_CHECKING:
    from yanflow_tui.config import Config

# A plain console start imports only what paints the cached Queue (``earlypaint``): the commands'
# modules (and asyncio, the backends, Textual) are imported where they are used.

__all__ = ["main"]
log = logging.getLogger(__name__)


def main(argv: Sequence[str] | None = None) -> int:
    """Everything printed (stdout, stderr, argparse's messages, errors) is cleaned at one point: the
    ``sanitize.CleanStream`` over each (Textual writes to the terminal itself)."""
    with clean_streams():
        try:
            code = _main(argv)
            sys.stdout.flush()  # here, where a closed pipe is caught, not at the interpreter's exit
            return code
        except BrokenPipeError:
            return _pipe_closed()


def _pipe_closed() -> int:
    """The reader of our output went away (``yanflow-tui jobs | head -1``): no message, no traceback,
    exit status 141 (128 + SIGPIPE, as a command killed by it). Both streams are pointed at /dev/null,
    so that what is still buffered is not written to the closed pipe at exit."""
    log.info("output closed by its reader")
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.__stdout__, sys.__stderr__):
        try:
            os.dup2(devnull, stream.fileno())  # type: ignore[union-attr]
        except (AttributeError, OSError, ValueError):  # replaced streams (tests)
            continue
    os.close(devnull)
    return EXIT_PIPE


async def _interruptible(command: Awaitable[int]) -> int:
    """``command`` with Ctrl-C bounded (``keyfiles.bound_interrupt``): it ends the process, cleanly or not."""
    restore = keyfiles.bound_interrupt()
    try:
        return await command
    finally:
        restore()


def _main(argv: Sequence[str] | None) -> int:
    args = console_args(argv)
    if args is None:
        from yanflow_tui.cli import offline, parser, schema

        whole = parser.build()
        args = whole.parse_args(argv)
        needless = {**offline.COMMANDS, **schema.COMMANDS}  # completion, init, schema: no config, no cluster
        if args.command in needless:
            return needless[args.command](whole, args)
    log_path = applog.setup(debug=getattr(args, "debug", False))
    log.info("yanflow-tui %s: %s", __version__, args.command or "console")
    keyfiles.install_exit_signals()  # SIGHUP/SIGTERM: key files go first, then a clean exit
    keyfiles.sweep()  # key files left by a killed run
    try:
        config = read_config(args)
        if args.command is None:
            from yanflow_tui.cli.console import run_console

            return run_console(config)  # (the app checks theme: and keymap: once the cached Queue is painted)
        if config.theme or config.keymap:  # the console's check, for the headless commands alike
            from yanflow_tui.app import check_ui_config

            check_ui_config(config)
        import asyncio

        from yanflow_tui.cli.context import CliContext
        from yanflow_tui.cli.parser import commands

        return asyncio.run(_interruptible(commands()[args.command](CliContext(config, args))))
    except (
        UIConfigError,
        UsageError,
    ) as exc:  # a theme: or keymap: the console refuses: a usage error, whatever the command
        log.info("%s: %s", type(exc).__name__, exc)
        error(str(exc))
        return EXIT_USAGE
    except YanflowError as exc:
        log.info("%s: %s", type(exc).__name__, exc)
        error(str(exc))
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        raise  # ``main``: quietly
    except Exception as exc:
        log.exception("unexpected error")
        if os.environ.get("YANFLOW_DEBUG"):
            raise
        where = f"the traceback is in {display_path(log_path)}" if log_path else "set YANFLOW_DEBUG=1 for details"
        error(f"unexpected {type(exc).__name__}: {exc} ({where})")
        return EXIT_ERROR


def read_config(args: argparse.Namespace) -> Config:
    """The config of a run (``--config``, ``--read-only``)."""
    from yanflow_tui.config import load_config

    # The console keeps the other clusters when one entry is wrong (that one shows its file:line
    # problems on the Clusters screen); a command run from a script stops at any problem.
    config = load_config(getattr(args, "config", None), lenient=args.command is None)
    if args.command is not None:  # the console shows them as notifications
        from yanflow_tui.backends import registry

        for note in registry.notes():
            print(f"yanflow-tui: note: {clean(note)}", file=sys.stderr)
    return config.with_read_only() if getattr(args, "read_only", False) else config
