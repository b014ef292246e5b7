"""Which Slurm job holds which GPU: the per-node GRES indices of ``scontrol -dd -o show job ID``
(``Nodes=gpu[01-02] CPU_IDs=0-3 Mem=1000 GRES=gpu:a100:4(IDX:0-3)``), and the Nodes data with
each allocated GPU's job filled in. sinfo says only which indices are in use; squeue's text output
says nothing of indices. Pure functions, no I/O."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace

from yanflow_tui.backends.slurm.parse import expand_hostlist, parse_gres
from yanflow_tui.model import GpuState, Job, JobState, Node

# One allocation line of -dd; GRES may be empty ("GRES=") on a node that holds no GPU of the job.
_ALLOCATION = re.compile(r"(?:^|\s)Nodes=(\S+)\s+CPU_IDs=\S*\s+Mem=\S*\s+GRES=(\S*)")

Placement = dict[str, tuple[int, ...]]  # node -> GPU indices the job holds there


def job_placement(text: str) -> Placement:
    """The GPUs a job holds on each node, from ``scontrol -dd -o show job ID`` (or its multi-line
    form without ``-o``)."""
    found: Placement = {}
    for match in _ALLOCATION.finditer(text):
        nodes, gres = match.groups()
        indices = parse_gres(gres).indices
        if not indices:
            continue
        for node in expand_hostlist(nodes):
            found[node] = tuple(dict.fromkeys(found.get(node, ()) + indices))
    return found


def running_gpu_jobs(jobs: Iterable[Job]) -> list[str]:
    """Ids of the running jobs that hold GPUs (array tasks by their own id), in listing order."""
    return [j.id for j in jobs if j.state is JobState.RUNNING and j.gpus > 0 and "[" not in j.id]


def with_holders(nodes: Iterable[Node], placements: Mapping[str, Placement]) -> list[Node]:
    """``nodes`` with each allocated GPU's ``job_id`` set from ``placements`` (job -> node -> indices)."""
    holder: dict[tuple[str, int], str] = {}
    for job_id, placement in placements.items():
        for host, indices in placement.items():
            for index in indices:
                holder[(host, index)] = job_id
    out = []
    for node in nodes:
        if not any((node.name, g.index) in holder for g in node.gpus):
            out.append(node)
            continue
        gpus = tuple(
            replace(g, job_id=holder[(node.name, g.index)], state=GpuState.ALLOCATED)
            if (node.name, g.index) in holder
            else g
            for g in node.gpus
        )
        out.append(replace(node, gpus=gpus))
    return out
