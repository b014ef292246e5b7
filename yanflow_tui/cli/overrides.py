"""``submit``'s sbatch-style overrides: ``--partition``, ``--time``, ``--gpus``, ``--nodes``, meaning
what sbatch's mean (``--gpus``: the job's GPUs in all, spread evenly over its nodes), laid over the
job file's own and checked by the spec checker the Submit form uses (``spec.spec_from_data``). A file
sent as written that cannot take them (a Kubernetes manifest, a Determined config) refuses them."""

from __future__ import annotations

import argparse
import re
from dataclasses import replace

from yanflow_tui.cli.context import UsageError
from yanflow_tui.model import JobSpec

_TIME = re.compile(r"(\d+-)?\d+(:\d+){0,2}|\d+-\d+|UNLIMITED|INFINITE", re.IGNORECASE)
OVERRIDES = ("partition", "time", "gpus", "nodes")


def add_override_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--partition", "-p", metavar="NAME", help="the Slurm partition (as sbatch --partition)")
    p.add_argument(
        "--time", "-t", metavar="LIMIT", help="the time limit, as sbatch's: MIN, MIN:SEC, H:M:S, D-H, D-H:M, D-H:M:S"
    )
    p.add_argument(
        "--gpus",
        "-G",
        metavar="N",
        type=int,
        help="the job's GPUs in all (as sbatch --gpus), spread evenly over its nodes",
    )
    p.add_argument("--nodes", "-N", metavar="N", type=int, help="the number of nodes (as sbatch --nodes)")


def given(args: argparse.Namespace) -> list[str]:
    return [name for name in OVERRIDES if getattr(args, name, None) is not None]


def apply_overrides(spec: JobSpec, args: argparse.Namespace) -> JobSpec:
    """``spec`` with the overrides given, checked as the form's fields are; ``spec`` when none is."""
    from yanflow_tui.spec import spec_from_data, spec_to_data

    names = given(args)
    if not names:
        return spec
    if spec.native is not None and not spec.native.editable:
        raise UsageError(
            f"{', '.join('--' + n for n in names)}: {spec.source or 'this file'} is sent as written; "
            "set them in the file itself"
        )
    data = spec_to_data(spec)
    resources = data["resources"]
    if args.nodes is not None:
        if args.nodes < 1:
            raise UsageError(f"--nodes: at least 1, got {args.nodes}")
        resources["nodes"] = args.nodes
    if args.gpus is not None:
        nodes = int(resources.get("nodes") or 1)
        per_node, rest = divmod(args.gpus, nodes)
        if args.gpus < 0 or rest:
            raise UsageError(f"--gpus {args.gpus} cannot be spread evenly over {nodes} node(s)")
        resources["gpus"] = per_node
    if args.time is not None:
        if not _TIME.fullmatch(args.time.strip()):
            raise UsageError(f"--time: expected sbatch's form (MIN, H:M:S, D-H:M:S...), got {args.time!r}")
        data.setdefault("slurm", {})["time"] = args.time.strip()
    if args.partition is not None:
        data.setdefault("slurm", {})["partition"] = args.partition
    where = f"{spec.source or '<spec>'} with {' '.join('--' + n for n in names)}"
    checked = spec_from_data(data, where)  # the form's checks: a single job on 1 node, whole numbers...
    if spec.native is not None:  # an sbatch script: sent as written, the changes as sbatch options
        return replace(spec, resources=checked.resources, sections=checked.sections)
    return replace(checked, source=spec.source)
