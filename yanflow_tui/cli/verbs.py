"""``cancel`` and the scheduler's verbs on one job (``resubmit``, ``hold``, ``release``, ``requeue``,
``edit``, ``signal``): one call through the backend's gate, refused before any I/O when every cluster
the job could be on is read-only."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from yanflow_tui.cli.context import CLUSTER_HELP, CliContext, Command
from yanflow_tui.errors import YanflowError

if TYPE_CHECKING:
    from yanflow_tui.cli.parser import Subparsers
    from yanflow_tui.hub import Hub

# The job verbs beyond cancel (``Backend.perform``), each a command of its own.
VERB_HELP = {
    "resubmit": "submit a job again: its batch script and options (--more: more time or memory)",
    "hold": "hold a pending job (it stays queued, not started)",
    "release": "release a held job",
    "requeue": "requeue a running or finished job",
    "edit": "change a pending job's time limit, partition or QOS",
    "signal": "send a signal to a job's processes",
}
SIGNALS = ("TERM", "INT", "HUP", "USR1", "USR2", "KILL", "STOP", "CONT")  # as backends.base.SIGNALS


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("cancel", parents=[common], help="cancel a job")
    p.add_argument("job", metavar="JOB")
    p.add_argument("--cluster", metavar="NAME", help=CLUSTER_HELP)
    for name, text in VERB_HELP.items():
        p = sub.add_parser(name, parents=[common], help=text, description=text)
        p.add_argument("job", metavar="JOB")
        p.add_argument("--cluster", metavar="NAME", help=CLUSTER_HELP)
        if name == "resubmit":
            p.add_argument(
                "--more",
                action="store_true",
                help="twice the time limit after a TIMEOUT, twice the memory after an OUT_OF_MEMORY",
            )
            p.add_argument("--time", metavar="LIMIT", help="the new job's time limit, e.g. 02:00:00")
            p.add_argument("--mem", metavar="SIZE", help="the new job's memory, e.g. 8G")
        elif name == "edit":
            p.add_argument("--time", metavar="LIMIT", help="new time limit, e.g. 01:30:00")
            p.add_argument("--partition", metavar="NAME", help="new partition")
            p.add_argument("--qos", metavar="NAME", help="new QOS")
        elif name == "signal":
            p.add_argument("--signal", "-s", metavar="SIG", default="TERM", help=f"one of {', '.join(SIGNALS)}")


async def cancel(ctx: CliContext) -> int:
    async with ctx.hub() as hub:
        name = await ctx.job_cluster(hub)
        await hub.call(hub.backend(name).cancel(ctx.args.job))
    print(f"cancelled job {ctx.args.job} on {name}", file=ctx.err)
    return 0


def refuse_if_read_only(hub: Hub, name: str | None, job_id: str, verb: str) -> None:
    """Refuse before any I/O (not even the reads that find the job's cluster) when every cluster
    the job could be on is read-only."""
    names = [name] if name else hub.names
    fits = []
    for cluster in names:
        try:
            hub.backend(cluster).check_id(job_id)
        except YanflowError:
            continue
        fits.append(cluster)
    if fits and all(hub.backend(c).read_only for c in fits):
        hub.backend(fits[0]).gate.check(verb)


def verb_args(args: argparse.Namespace) -> dict[str, str]:
    """The ``perform`` arguments a verb's command line gave (``VERB_ARGS``)."""
    out = {}
    for key in ("time", "mem", "partition", "qos", "signal"):
        value = getattr(args, key, None)
        if value:
            out[key] = value
    if getattr(args, "more", False):
        out["more"] = "yes"
    return out


async def verb(ctx: CliContext) -> int:
    """resubmit, hold, release, requeue, edit, signal: one ``perform`` through the gate."""
    args = ctx.args
    async with ctx.hub() as hub:
        refuse_if_read_only(hub, args.cluster, args.job, args.command)
        name = await ctx.job_cluster(hub)
        said = await hub.call(hub.backend(name).perform(args.job, args.command, verb_args(args)))
    print(said or f"{args.command}: job {args.job} on {name}", file=ctx.err)
    return 0


COMMANDS: dict[str, Command] = {"cancel": cancel, **dict.fromkeys(VERB_HELP, verb)}
