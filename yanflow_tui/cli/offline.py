"""The commands that need no config and touch no cluster: ``completion SHELL`` (a shell completion
script, made by shtab from the whole parser) and ``init TEMPLATE DIR`` (a template project)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from yanflow_tui.cli.context import EXIT_ERROR, error
from yanflow_tui.locations import display_path

if TYPE_CHECKING:
    from yanflow_tui.cli.parser import Subparsers

COMPLETION_SHELLS = ("bash", "zsh", "fish")


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    import shtab

    from yanflow_tui.projects import project_names

    p = sub.add_parser(
        "completion",
        help="print a shell completion script",
        description="Print the completion script for SHELL, e.g. "
        "`yanflow-tui completion bash > ~/.local/share/bash-completion/completions/yanflow-tui`, "
        "`yanflow-tui completion zsh > ~/.zfunc/_yanflow-tui`, "
        "`yanflow-tui completion fish > ~/.config/fish/completions/yanflow-tui.fish`.",
    )
    p.add_argument("shell", choices=COMPLETION_SHELLS)
    p = sub.add_parser(
        "init",
        help="write a template project (code and job spec) into a new folder",
        description="Write template project TEMPLATE (a small runnable training project and its job.yaml) "
        "into DIR, which must be new or empty. Then: yanflow-tui submit DIR/job.yaml",
    )
    p.add_argument("template", metavar="TEMPLATE", choices=project_names(), help=", ".join(project_names()))
    p.add_argument("dir", metavar="DIR").complete = shtab.DIRECTORY  # type: ignore[attr-defined]


def completion(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``yanflow-tui completion SHELL``: the script on stdout."""
    import shtab

    sys.stdout.write(shtab.complete(parser, shell=args.shell))
    return 0


def init(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``yanflow-tui init TEMPLATE DIR``."""
    from yanflow_tui.projects import ProjectError, write_project

    try:
        spec = write_project(args.template, args.dir)
    except (ProjectError, OSError) as exc:
        error(str(exc))
        return EXIT_ERROR
    print(f"wrote {display_path(spec.parent)}/; submit it with: yanflow-tui submit {display_path(spec)}")
    return 0


# Each is given the whole parser (completion writes it out) and the arguments.
COMMANDS: dict[str, Callable[[argparse.ArgumentParser, argparse.Namespace], int]] = {
    "completion": completion,
    "init": init,
}
