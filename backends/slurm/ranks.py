"""What a Slurm job's output says of each rank of a multi-node step, for the first failure across ranks:
each rank's own file (``<StdOut>.rank<N>``, ``script.RANK_SUFFIX``; task N runs on the job's Nth node)
with the time it was last written, and torchrun's error file beside it (``script.ERROR_SUFFIX``). One
read-only shell command over the transport; srun's own lines in the main output (exit codes, kills) are
read with the log (``firstfailure.with_srun_tasks``)."""

from __future__ import annotations

from datetime import datetime, timezone

from yanflow_tui.backends.slurm.script import ERROR_SUFFIX, RANK_SUFFIX
from yanflow_tui.firstfailure import RankEvidence

# For each file: "F<TAB>mtime<TAB>path" if it exists, then "E<TAB>path<TAB>json on one line" for its error file.
READ_SCRIPT = (
    'for f do [ -f "$f" ] && printf "F\\t%s\\t%s\\n" "$(stat -c %Y "$f")" "$f"; '
    f'e="$f{ERROR_SUFFIX}"; [ -f "$e" ] && '
    '{ printf "E\\t%s\\t" "$f"; head -c 65536 "$e" | tr "\\n\\t" "  "; echo; }; '
    "done; exit 0"
)


def rank_files(stdout: str, nodes: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    """Each rank's file -> (rank, node) for a job on ``nodes`` whose StdOut is ``stdout``."""
    if len(nodes) < 2 or not stdout:
        return {}
    return {f"{stdout}{RANK_SUFFIX}{n}": (str(n), node) for n, node in enumerate(nodes)}


def parse_answer(text: str, files: dict[str, tuple[str, str]]) -> list[RankEvidence]:
    """``READ_SCRIPT``'s answer as one ``RankEvidence`` per rank file found (source ``rank N``)."""
    ended: dict[str, datetime] = {}
    errors: dict[str, str] = {}
    for line in text.splitlines():
        kind, _, rest = line.partition("\t")
        first, _, second = rest.partition("\t")
        if kind == "F" and first.isdigit():
            ended[second] = datetime.fromtimestamp(int(first), timezone.utc)
        elif kind == "E":
            errors[first] = second.strip()
    out = []
    for path, (rank, node) in files.items():
        if path in ended or path in errors:
            out.append(RankEvidence(rank, node, f"rank {rank}", ended=ended.get(path), error_file=errors.get(path, "")))
    return out
