"""The Slurm reads behind ``placement`` and ``share``: ``sbatch --test-only`` on the script a submit
would send, and ``scontrol show config`` / ``sshare`` / ``scontrol show assoc_mgr``, each with the
older form a version without an option takes (an option a version lacks is tried without, never read
as "nothing there"). Parsing is ``standing``'s."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from yanflow_tui.backends.slurm import standing
from yanflow_tui.backends.slurm.script import Rendered, render, render_native
from yanflow_tui.errors import BackendError
from yanflow_tui.placement_rank import NEVER, Placement, judged_from_nodes
from yanflow_tui.share import Share

if TYPE_CHECKING:
    from yanflow_tui.backends.slurm.backend import SlurmBackend
    from yanflow_tui.backends.slurm.transport import Result
    from yanflow_tui.model import JobSpec, Node

TEST_ONLY_TAG = "DRY-RUN"  # the tag the preview shows: --test-only makes no job to find by it


def test_only(rendered: Rendered) -> tuple[str, ...]:
    """The submit's argv with ``--test-only`` right after ``sbatch``: Slurm answers when and where it
    would start the job, and creates none."""
    argv = list(rendered.argv)
    return (argv[0], "--test-only", *argv[1:])


def rendered_for(backend: SlurmBackend, spec: JobSpec) -> Rendered:
    """What a submit of ``spec`` would send (the user's script as written, or ours)."""
    if spec.native is not None:
        return render_native(spec, TEST_ONLY_TAG, backend.defaults)
    return render(spec, TEST_ONLY_TAG, backend.defaults, backend.container)


async def placement(backend: SlurmBackend, spec: JobSpec, nodes: Sequence[Node]) -> Placement:
    rendered = rendered_for(backend, spec)
    result = await backend.transport.run(test_only(rendered), stdin_data=rendered.script)
    text = f"{result.stderr}\n{result.stdout}"
    found = standing.will_run(backend.name, text, datetime.now(timezone.utc))
    if found is None:
        raise BackendError(f"sbatch --test-only said neither a start nor a refusal: {result.error() or text.strip()}")
    if found.verdict == NEVER and nodes:
        judged = judged_from_nodes(backend, spec, nodes)
        if judged.verdict == NEVER:  # the nodes say why in the job's terms (the GPU type, the partition)
            found = Placement(found.cluster, found.verdict, f"{judged.reason} ({found.reason})")
    return found


async def _first_that_runs(backend: SlurmBackend, *argvs: Sequence[str]) -> Result:
    """The first of ``argvs`` this Slurm takes: one refused for an option it lacks gives way to the
    next (an older form); any other failure is the answer."""
    result = None
    for argv in argvs:
        result = await backend.transport.run(list(argv))
        if result.ok or not standing.OPTION_MISSING.search(result.stderr):
            return result
    assert result is not None
    return result


async def share(backend: SlurmBackend) -> Share:
    user = await backend.transport.user()
    config = await backend.transport.run(["scontrol", "show", "config"])
    if not config.ok:
        raise BackendError(f"scontrol show config: {config.error()}")
    storage = standing.accounting(config.stdout)
    if storage in ("", "accounting_storage/none"):
        return Share(
            backend.name,
            note=f"no accounting on this cluster (AccountingStorageType={storage or 'unset'}): Slurm keeps no "
            "fair-share, QoS or association limits to show",
        )
    fair = await _first_that_runs(
        backend, ["sshare", "-P", "-l", "-U", "-u", user], ["sshare", "-P", "-U", "-u", user], ["sshare", "-P"]
    )
    if not fair.ok:
        raise BackendError(f"sshare: {fair.error()}")
    limits = await _first_that_runs(
        backend,
        ["scontrol", "show", "assoc_mgr", "flags=assoc,qos", f"users={user}"],
        ["scontrol", "show", "assoc_mgr", f"users={user}"],
    )
    if not limits.ok:
        raise BackendError(f"scontrol show assoc_mgr: {limits.error()}")
    lines = standing.sshare_lines(fair.stdout, user) + standing.assoc_mgr_lines(limits.stdout, user)
    note = "" if lines else f"no association for user {user} on this cluster"
    return Share(backend.name, tuple(lines), note)
