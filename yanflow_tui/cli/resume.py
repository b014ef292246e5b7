"""``resume JOB [--cluster OTHER]``: the job's newest checkpoint found (``yanflow_tui.resume``), printed,
then the job's own spec (a job this console did not submit: as its cluster holds it,
``Backend.native_resubmission``) submitted again with ``YANFLOW_RESUME_FROM`` set to it, on the job's cluster or
``--cluster``'s (the checkpoint copied there through this console where they share no storage), through
the one gate (``Hub.submit``); read-only refuses before any I/O. It asks first unless ``--yes``."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING, Any

from yanflow_tui.cli.context import CliContext, Command, job_cluster, open_hub
from yanflow_tui.cli.overrides import add_override_options, apply_overrides
from yanflow_tui.errors import YanflowError

if TYPE_CHECKING:
    from yanflow_tui.cli.parser import Subparsers
    from yanflow_tui.resume import Plan


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    text = (
        "resume a job from its newest checkpoint: its own spec again (a job not submitted from here: as its "
        "cluster holds it, with the options it ran with), YANFLOW_RESUME_FROM set to it"
    )
    p = sub.add_parser("resume", parents=[common], help=text, description=text + ".")
    p.add_argument("job", metavar="JOB")
    p.add_argument("--cluster", metavar="OTHER", help="where the new job runs (default: the job's own cluster)")
    p.add_argument("--from", dest="from_cluster", metavar="NAME", help="the job's cluster (when its id is on several)")
    p.add_argument("--yes", action="store_true", help="submit without asking")
    p.add_argument(
        "--json",
        action="store_true",
        help='print {"schema_version", "resume": {cluster, job, checkpoint, move, submit}, "errors"}',
    )
    add_override_options(p)


def _checkpoint(plan: Plan) -> dict[str, Any]:
    found = plan.found
    return {"path": found.path, "layout": found.layout, "what": found.what, "is_dir": found.is_dir, "size": found.size}


async def resume(ctx: CliContext) -> int:
    from yanflow_tui import resume as resuming

    args = ctx.args
    hub = await open_hub(ctx.config)
    try:
        if args.cluster:
            ctx.config.cluster(args.cluster)  # an unknown name fails with the configured ones
            hub.backend(args.cluster).gate.check("submit")  # read-only: refused before any I/O
        source_name = await job_cluster(hub, args.from_cluster, args.job)
        target_name = args.cluster or source_name
        source, target = hub.backend(source_name), hub.backend(target_name)
        target.gate.check("submit")
        plan = await hub.call(resuming.plan(source, args.job, target))
        ctx.note(f"checkpoint: {plan.found.path} ({plan.found.what})")
        if plan.move.say:
            ctx.note(plan.move.say)
        if plan.spec is None:
            raise YanflowError(plan.why_no_spec)
        if plan.move.how == "manual":
            raise YanflowError("not submitted: the checkpoint must be copied first")
        question = f"submit {plan.spec.name!r} to {target_name}, resuming from it?"
        if not args.yes and not await asyncio.to_thread(_confirmed, question):
            ctx.note("not submitted")
            return 1
        spec = plan.spec
        if plan.move.how == "copy":
            path = await resuming.carry(source, args.job, plan.found, target, plan.move.dest)
            ctx.note(f"copied to {target_name}:{path}")
            spec = resuming.resumed(spec, path, target_name)
        spec = apply_overrides(spec, args)
        job_id = await hub.submit(target_name, spec)
    finally:
        await hub.close()
    if args.json:
        from yanflow_tui.cli import jsonout

        data = {
            "cluster": source_name,
            "job": args.job,
            "checkpoint": _checkpoint(plan),
            "move": {"how": plan.move.how, "say": plan.move.say},
            "submit": {"cluster": target_name, "id": job_id, "resume_from": spec.env.get(resuming.RESUME_ENV, "")},
        }
        jsonout.dump(jsonout.envelope("resume", data), ctx.out)
    else:
        print(job_id, file=ctx.out)
    return 0


def _confirmed(question: str) -> bool:
    """The user's yes on the terminal; no terminal: no (``--yes`` submits without asking)."""
    if not sys.stdin.isatty():
        raise YanflowError("not submitted: no terminal to ask on; pass --yes to submit without asking")
    sys.stderr.write(question + " [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


COMMANDS: dict[str, Command] = {"resume": resume}
