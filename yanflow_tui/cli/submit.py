"""``submit FILE``: a job file of any kind (a spec, an sbatch script, a Determined config, a Kubernetes
manifest) sent to its cluster, after the capacity verdict from the cluster's nodes; ``--dry-run``
prints what would be sent; an outcome that could not be learned exits 3 with the tag to retry with.
``submit -`` reads the file from stdin; sbatch-style overrides (``overrides``) are laid over it."""

from __future__ import annotations

import argparse
import shlex
from typing import TYPE_CHECKING

from yanflow_tui.cli.context import EXIT_UNKNOWN, CliContext, Command
from yanflow_tui.cli.overrides import add_override_options, apply_overrides
from yanflow_tui.errors import SubmitUnknown, YanflowError

if TYPE_CHECKING:
    from yanflow_tui.capacity import Verdict
    from yanflow_tui.cli.parser import Subparsers
    from yanflow_tui.hub import Hub
    from yanflow_tui.spec import JobSpec

SUBMIT_EXITS = (
    "exit status: 0 submitted (the job id is printed), 1 not submitted, 3 unknown: the outcome could not "
    "be learned; the tag is printed: rerun with --tag TAG, which submits only if no job holds that tag"
)
VERDICT_TIMEOUT = 15.0  # s to read the nodes for submit's capacity verdict


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    import shtab

    p = sub.add_parser(
        "submit",
        parents=[common],
        help="submit a job file: a spec, an sbatch script, a Determined config or a Kubernetes manifest",
        description="Submit FILE. Its kind is read from its content: a YanFlow job spec, an sbatch script "
        "(sent as written), a Determined experiment or command config, or a Kubernetes manifest (Job, Pod, "
        "PyTorchJob, MPIJob; created as written, never replacing one of the same name).",
        epilog=SUBMIT_EXITS,
    )
    p.add_argument("file", metavar="FILE", help="the job file; - reads it from stdin").complete = shtab.FILE  # type: ignore[attr-defined]
    p.add_argument(
        "--context",
        metavar="DIR",
        help="a Determined experiment's model definition folder, uploaded with it (default: FILE's folder)",
    ).complete = shtab.DIRECTORY  # type: ignore[attr-defined]
    p.add_argument(
        "--tag",
        metavar="TAG",
        help='retry the submit that ended "unknown" with this tag: look it up first, submit only if no job holds it',
    )
    p.add_argument(
        "--cluster",
        metavar="NAME",
        help="target cluster (default: the spec's, else the first scheduler that runs its kind, else this machine)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print what would be sent, in the backend's native form (and the capacity verdict on stderr)",
    )
    p.add_argument("--force", action="store_true", help="submit even when the job can never fit the cluster's nodes")
    p.add_argument("--json", action="store_true", help='print {"schema_version", "submit": {cluster, id}, "errors"}')
    add_override_options(p)


async def submit(ctx: CliContext) -> int:
    from yanflow_tui.capacity import Fit

    args = ctx.args
    spec = apply_overrides(read_job(args.file, args.context), args)
    async with ctx.hub() as hub:
        try:
            name = hub.cluster_for_submit(
                args.cluster, spec.cluster, spec.kind, spec.native.kind if spec.native else None, spec.sections
            )
            backend = hub.backend(name)
            if args.dry_run:
                text = backend.render(spec)
                found = await capacity_verdict(ctx, hub, name, spec)
                if found is not None:
                    ctx.note(str(found))
                ctx.out.write(text)
                return 0
            if not backend.read_only:  # a closed gate refuses below with its own message
                backend.check_spec(spec)
                found = await capacity_verdict(ctx, hub, name, spec)
                if found is not None and found.fit is Fit.NEVER and not args.force:
                    raise YanflowError(f"{found} (--force submits anyway)")
                if found is not None and found.fit is Fit.WAITS:
                    ctx.note(str(found))
            job_id = await hub.submit(name, spec, args.tag)
        except SubmitUnknown as exc:
            ctx.error(str(exc))
            ctx.error(
                f"retry without a duplicate: yanflow-tui submit {shlex.quote(args.file)} --cluster {shlex.quote(name)} "
                + (f"--context {shlex.quote(args.context)} " if args.context else "")
                + f"--tag {exc.tag}"
            )
            return EXIT_UNKNOWN
    if args.json:
        from yanflow_tui.cli import jsonout

        jsonout.dump(jsonout.envelope("submit", {"cluster": name, "id": job_id}), ctx.out)
    else:
        print(job_id, file=ctx.out)
    return 0


def read_job(path: str, context: str | None) -> JobSpec:
    """The job file at ``path``; ``-``: the one on stdin (named ``<stdin>`` in its problems)."""
    from yanflow_tui.nativefiles import load_job_file, read_job_text

    if path != "-":
        return load_job_file(path, context)
    import sys

    from yanflow_tui.yamldoc import decode

    data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode()
    text, undecodable = decode(data)
    return read_job_text(text, "<stdin>", context, undecodable)


async def capacity_verdict(ctx: CliContext, hub: Hub, name: str, spec: JobSpec) -> Verdict | None:
    """The capacity verdict on ``spec`` from the cluster's nodes now; None (said on stderr) when the
    nodes cannot be read."""
    from yanflow_tui.capacity import verdict
    from yanflow_tui.hub import Health

    timeout, hub.timeout = hub.timeout, min(hub.timeout, VERDICT_TIMEOUT)  # an unreachable cluster must not stall
    try:
        snapshot = await hub.refresh(name, jobs=False, nodes=True)
    finally:
        hub.timeout = timeout
    if snapshot.health is not Health.OK or not snapshot.nodes:
        ctx.note(f"capacity not checked: {snapshot.message or 'no nodes listed'}")
        return None
    return verdict(snapshot.nodes, hub.backend(name).capacity_request(spec))


COMMANDS: dict[str, Command] = {"submit": submit}
