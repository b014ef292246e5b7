"""``describe JOB``: a job's detail as text, as the console's detail view shows it (``Backend.describe``,
``kubectl describe``'s form), or with ``--json`` the job (``jobs.job_json``) and that detail's fields
in the JSON contract's object."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from yanflow_tui.cli.context import CLUSTER_HELP, CliContext, Command
from yanflow_tui.sanitize import clean

if TYPE_CHECKING:
    from yanflow_tui.cli.parser import Subparsers


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "describe", parents=[common], help="show a job's detail", description="Show job JOB's detail as text."
    )
    p.add_argument("job", metavar="JOB")
    p.add_argument("--cluster", metavar="NAME", help=CLUSTER_HELP)
    p.add_argument("--json", action="store_true", help='print {"schema_version", "job": {..., "detail"}, "errors"}')


async def describe(ctx: CliContext) -> int:
    from yanflow_tui.cli import jsonout
    from yanflow_tui.cli.jobs import job_json

    args = ctx.args
    async with ctx.hub() as hub:
        name = await ctx.job_cluster(hub)
        backend = hub.backend(name)
        job = await hub.call(backend.get_job(args.job))
        text = await hub.call(backend.describe(args.job))
    if not args.json:
        ctx.out.write("".join(clean(line) + "\n" for line in text.rstrip("\n").splitlines()))
        return 0
    data = job_json(job)
    data["detail"] = detail_fields(text)
    jsonout.dump(jsonout.envelope("job", data), ctx.out)
    return 0


def detail_fields(text: str) -> list[dict[str, str]]:
    """The ``Label: value`` lines of a detail; a value's further lines (indented under it) joined to it,
    their common indentation removed and the rest kept (a YAML spec stays YAML)."""
    import textwrap

    fields: list[tuple[str, str, list[str]]] = []
    for line in text.splitlines():
        label, sep, value = line.partition(":")
        if sep and label and not line[0].isspace():
            fields.append((label.strip(), value.strip(), []))
        elif fields:
            fields[-1][2].append(line)
    out = []
    for label, value, more in fields:
        rest = textwrap.dedent("\n".join(more)).strip("\n")
        out.append({"label": label, "value": "\n".join(filter(None, (value, rest)))})
    return out


COMMANDS: dict[str, Command] = {"describe": describe}
