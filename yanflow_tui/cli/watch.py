"""``yanflow-tui watch JOB [--cluster C]``: wait for a job's end, print its final state and exit with
its exit code, for scripts (``yanflow-tui watch 123 && echo done``). The job is read again and again
(``Backend.get_job``, each call under the hub's timeout), first every ``FIRST_DELAY`` seconds, then
less often, up to every ``MAX_DELAY``; a read that fails is tried again, up to ``MAX_FAILURES`` in a row.

Exit status (``exit_status``): the job's own exit code where it agrees with its end state (0 for
completed, non-zero for failed or cancelled); otherwise 0 for completed, 1 for failed and 143 (as a
process ended by SIGTERM) for cancelled. A code a signal gave (negative) is 128 + the signal; one over
255 is 255. The command's own failures (no such job, a cluster that cannot be read) exit 1 with an error."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

from yanflow_tui.cli.context import CLUSTER_HELP, CliContext, Command
from yanflow_tui.errors import YanflowError
from yanflow_tui.model import Job, JobState

if TYPE_CHECKING:
    from yanflow_tui.cli.parser import Subparsers

FIRST_DELAY = 1.0
MAX_DELAY = 30.0
BACKOFF = 1.5
MAX_FAILURES = 5
NO_CODE = {JobState.COMPLETED: 0, JobState.FAILED: 1, JobState.CANCELLED: 143}


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    text = "wait for a job's end, print its final state and exit with its exit code"
    p = sub.add_parser("watch", parents=[common], help=text, description=text + ". " + STATUS_HELP)
    p.add_argument("job", metavar="JOB")
    p.add_argument("--cluster", metavar="NAME", help=CLUSTER_HELP)
    p.add_argument(
        "--interval",
        metavar="SECONDS",
        type=float,
        default=MAX_DELAY,
        help=f"longest wait between reads ({MAX_DELAY:g})",
    )


STATUS_HELP = (
    "Exit status: the job's exit code; with none (or one that disagrees with its state), "
    "0 completed, 1 failed, 143 cancelled."
)


def exit_status(job: Job) -> int:
    """The exit status of ``watch`` for a job that ended (see the module's docstring)."""
    code = job.exit_code
    if code is not None and code < 0:
        code = 128 - code
    if code is not None and (code == 0) == (job.state is JobState.COMPLETED):
        return min(code, 255)
    return NO_CODE.get(job.state, 1)


async def watch(ctx: CliContext) -> int:
    longest = max(FIRST_DELAY, ctx.args.interval)
    async with ctx.hub() as hub:
        name = await ctx.job_cluster(hub)
        backend = hub.backend(name)
        delay, failures, said = FIRST_DELAY, 0, ""
        while True:
            try:
                job = await hub.call(backend.get_job(ctx.args.job), backend=backend)
                failures = 0
            except (YanflowError, OSError, asyncio.TimeoutError) as exc:
                failures += 1
                if failures >= MAX_FAILURES:
                    raise YanflowError(f"job {ctx.args.job} on {name}: {exc or type(exc).__name__}") from None
                job = None
            if job is not None and job.state.terminal:
                break
            if job is not None and job.state.value != said:
                said = job.state.value
                ctx.note(f"job {job.id} on {name}: {said}; waiting for its end", flush=True)
            await asyncio.sleep(delay)
            delay = min(longest, delay * BACKOFF)
    status = exit_status(job)
    code = f", exit code {job.exit_code}" if job.exit_code is not None else ""
    print(f"{job.id}\t{name}\t{job.state.value}{code}", file=ctx.out)
    return status


COMMANDS: dict[str, Command] = {"watch": watch}
