"""``where SPEC``: every configured cluster that takes jobs, ranked by when it would start the job
(``placement_rank``; Slurm asks ``sbatch --test-only``), soonest first and "never" last with its
reason; nothing is submitted, so read-only mode allows it. ``share``: my share of each cluster
(fair-share, QoS and association limits, quotas, pools; ``yanflow_tui.share``). Both take ``--json``
(``jsonout``: ``where`` / ``share`` entries, and ``errors`` for the clusters that could not answer)."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

from yanflow_tui.cli.context import EXIT_ERROR, CliContext, Command

if TYPE_CHECKING:
    from yanflow_tui.cli.parser import Subparsers
    from yanflow_tui.hub import Hub

ASK_TIMEOUT = 25.0  # s for one cluster's answer (its nodes, then its scheduler)


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    import shtab

    text = "where would this job start soonest: every cluster ranked (nothing is submitted)"
    p = sub.add_parser("where", parents=[common], help=text, description=text)
    p.add_argument("spec", metavar="SPEC").complete = shtab.FILE  # type: ignore[attr-defined]
    p.add_argument("--context", metavar="DIR", help="a Determined experiment's model definition folder")
    p.add_argument("--cluster", metavar="NAME", help="only this cluster")
    p.add_argument("--json", action="store_true", help="print JSON")
    text = "my share of each cluster: fair-share, QoS and association limits, quotas, pools"
    p = sub.add_parser("share", parents=[common], help=text, description=text)
    p.add_argument("--cluster", metavar="NAME", help="only this cluster")
    p.add_argument("--json", action="store_true", help="print JSON")


async def where(ctx: CliContext) -> int:
    from yanflow_tui.cli.jsonout import cluster_error, dump, envelope
    from yanflow_tui.hub import Health
    from yanflow_tui.nativefiles import load_job_file
    from yanflow_tui.placement_rank import candidates, place_all, when_text

    args = ctx.args
    spec = load_job_file(args.spec, args.context)
    async with ctx.hub() as hub:
        backends = candidates(hub.backend(n) for n in _names(ctx, hub))
        timeout, hub.timeout = hub.timeout, min(hub.timeout, ASK_TIMEOUT)
        try:
            snaps = await asyncio.gather(*(hub.refresh(b.name, jobs=False, nodes=True) for b in backends))
        finally:
            hub.timeout = timeout
        errors = [(s.name, s.message or "no answer") for s in snaps if s.health is not Health.OK]
        asks = [(b, s.nodes) for b, s in zip(backends, snaps) if s.health is Health.OK]
        placed, failed = await place_all(asks, spec, ASK_TIMEOUT)
    errors += failed
    if args.json:
        dump(envelope("where", [p.as_json() for p in placed], [cluster_error(c, m) for c, m in errors]), ctx.out)
    else:
        ctx.print_table(
            ("CLUSTER", "VERDICT", "START", "REASON"), [(p.cluster, p.verdict, when_text(p), p.reason) for p in placed]
        )
        for cluster, message in errors:
            ctx.error(f"cluster {cluster!r}: {message}")
    return 0 if placed or not errors else EXIT_ERROR


async def share(ctx: CliContext) -> int:
    from yanflow_tui.cli.jsonout import cluster_error, dump, envelope
    from yanflow_tui.hub import error_text
    from yanflow_tui.share import Share, share_text

    async def one(name: str) -> Share | str:
        backend = hub.backend(name)
        if not backend.capabilities.share:
            return Share(name, note=f"cluster {name} ({backend.kind}) has no shares, limits or quotas to report")
        try:
            return await asyncio.wait_for(backend.share(), ASK_TIMEOUT)
        except (TimeoutError, asyncio.TimeoutError):
            return f"no answer within {ASK_TIMEOUT:.0f} s"
        except Exception as exc:
            return error_text(exc)

    async with ctx.hub() as hub:
        names = _names(ctx, hub)
        answers = await asyncio.gather(*(one(n) for n in names))
    shares = [a for a in answers if isinstance(a, Share)]
    errors = [(n, a) for n, a in zip(names, answers) if isinstance(a, str)]
    if ctx.args.json:
        dump(envelope("share", [s.as_json() for s in shares], [cluster_error(c, m) for c, m in errors]), ctx.out)
    else:
        for found in shares:
            print(found.cluster, file=ctx.out)
            for line in share_text(found):
                print(f"  {line}", file=ctx.out)
        for cluster, message in errors:
            ctx.error(f"cluster {cluster!r}: {message}")
    return 0 if shares or not errors else EXIT_ERROR


def _names(ctx: CliContext, hub: Hub) -> list[str]:
    """The clusters asked: ``--cluster``'s, else every one configured."""
    return [ctx.args.cluster] if ctx.args.cluster else list(hub.names)


COMMANDS: dict[str, Command] = {"where": where, "share": share}
