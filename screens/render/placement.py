"""Where a job runs: its nodes and the GPUs it holds on each, with utilisation and memory where the
backend reports them. A pure function over the Nodes data, shown in the job detail view."""

from __future__ import annotations

from collections.abc import Collection

from rich.text import Text

from yanflow_tui.capacity import idle_allocated
from yanflow_tui.model import Gpu, Job, Node
from yanflow_tui.sanitize import clean


def _gpu_facts(gpu: Gpu) -> str:
    facts = [f"#{gpu.index}"]
    if gpu.utilization is not None:
        facts.append(f"{gpu.utilization:.0f}%")
    if gpu.memory_used_mb is not None and gpu.memory_total_mb:
        facts.append(f"{gpu.memory_used_mb / 1024:.1f}/{gpu.memory_total_mb / 1024:.0f}G")
    return " ".join(facts)


def placement_text(
    job: Job, nodes: tuple[Node, ...] | list[Node], idle: Collection[tuple[str, int]] | None = None
) -> Text:
    """One line per node the job runs on (or holds GPUs of): the GPUs it holds there. ``idle``: the
    (node, index) of GPUs idle by the idle rule (under the percent for the minutes: ``IdleTracker``); without
    it, a GPU under the percent now counts.

    Nodes whose GPUs carry no job ids (the backend cannot tell which GPU is whose) show how many
    GPUs the node has allocated in all, so the user is never shown a guess as a fact."""
    out = Text(no_wrap=True, overflow="ellipsis")
    by_name = {node.name: node for node in nodes}
    names = list(dict.fromkeys([*job.nodes, *(n.name for n in nodes if any(g.job_id == job.id for g in n.gpus))]))
    if not names:
        out.append("not placed yet" if not job.state.terminal else "no nodes recorded", "dim")
        return out
    width = max(len(clean(name)) for name in names) + 2
    for name in names:
        out.append(f"{clean(name):<{width}}", "bold")
        node = by_name.get(name)
        if node is None:
            out.append("(node not in the Nodes data)\n", "dim")
            continue
        mine = [g for g in node.gpus if g.job_id == job.id]
        if job.state.terminal and not mine:  # it ran here: what the node holds now is other jobs'
            out.append("ran here (it holds nothing now)", "dim")
        elif mine:
            out.append(f"{len(mine)} of {node.gpus_total} GPU(s): ")
            out.append(", ".join(_gpu_facts(g) for g in mine))
            idle_now = [g for g in mine if idle_allocated(g) and (idle is None or (name, g.index) in idle)]
            if idle_now:
                out.append(f"  {len(idle_now)} idle", "bold yellow")
        elif node.gpus_total:
            out.append(
                f"GPUs {node.gpus_allocated}/{node.gpus_total} allocated on the node; which are this job's "
                "is not reported",
                "dim",
            )
        else:
            out.append("no GPUs", "dim")
        out.append(f"  {clean(node.state)}\n", "dim")
    out.rstrip()
    return out
