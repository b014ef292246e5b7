"""The ``--comment`` a submit gives its job: ``yanflow:TAG`` (the submit tag a lost answer is looked up
by), then the facts a console started later needs and Slurm keeps nowhere else, each ``,KEY=VALUE``
with the value percent-encoded (``image``: the container image the job runs in; ``outputs``: its
output folder). slurmctld, ``squeue --json`` and ``sacct`` hand the comment back as given. No I/O."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote, unquote

PREFIX = "yanflow:"
FACTS = ("image", "outputs")
SAFE = "/:@+[]-._"  # kept as they are: still a plainly safe ``#SBATCH`` value (script.SAFE_VALUE)


def tagged(tag: str, facts: Mapping[str, str | None] | None = None) -> str:
    """``yanflow:TAG`` and the facts that are set, in ``FACTS`` order."""
    facts = facts or {}
    return PREFIX + tag + "".join(f",{key}={quote(facts[key] or '', safe=SAFE)}" for key in FACTS if facts.get(key))


def tag_of(comment: str) -> str | None:
    """The submit tag of a comment of ours (None: a comment of someone else's)."""
    if not comment.startswith(PREFIX):
        return None
    return comment[len(PREFIX) :].partition(",")[0]


def facts_of(comment: str) -> dict[str, str]:
    """The facts a comment of ours carries (empty for any other comment)."""
    if tag_of(comment) is None:
        return {}
    out = {}
    for item in comment.split(",")[1:]:
        key, sep, value = item.partition("=")
        if sep and key in FACTS:
            out[key] = unquote(value)
    return out


def retagged(comment: str, tag: str) -> str:
    """A comment for a job submitted again (resubmit) under ``tag``: ours keeps its facts; another's is kept."""
    if not comment or tag_of(comment) is not None:
        return tagged(tag, facts_of(comment))
    return comment
