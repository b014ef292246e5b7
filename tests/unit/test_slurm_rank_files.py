"""Slurm's per-rank evidence (``backends/slurm/ranks.py``): its one shell command run here over real
files (a rank file's mtime, torchrun's error file beside it, a rank with no file), and its answer parsed."""

from __future__ import annotations

import json
import os
import subprocess

from yanflow_tui.backends.slurm import ranks
from yanflow_tui.firstfailure import error_file_failure


def test_rank_files_their_times_and_torchruns_error_file(tmp_path):
    out = tmp_path / "job 7.out"  # a space in the path, as a user's output may have
    files = ranks.rank_files(str(out), ("g1", "g2", "g3"))
    assert list(files.values()) == [("0", "g1"), ("1", "g2"), ("2", "g3")]
    for n in (0, 1):
        path = f"{out}.rank{n}"
        open(path, "w").close()
        os.utime(path, (1_800_000_000 + n, 1_800_000_000 + n))
    error = {"message": {"message": "Traceback\n\tx\nValueError: bad", "extraInfo": {"timestamp": "1800000000"}}}
    with open(f"{out}.rank1.error.json", "w") as f:
        json.dump(error, f, indent=2)
    answer = subprocess.run(["sh", "-c", ranks.READ_SCRIPT, "sh", *files], capture_output=True, text=True, check=True)
    evidence = ranks.parse_answer(answer.stdout, files)
    assert [(e.rank, e.node, e.source) for e in evidence] == [("0", "g1", "rank 0"), ("1", "g2", "rank 1")]
    assert [int(e.ended.timestamp()) for e in evidence if e.ended] == [1_800_000_000, 1_800_000_001]
    assert evidence[0].error_file == ""
    found = error_file_failure(evidence[1].error_file)
    assert found is not None and found[0] == "ValueError: bad" and int(found[1].timestamp()) == 1_800_000_000


def test_a_single_node_job_has_no_rank_files():
    assert ranks.rank_files("/x/job.out", ("g1",)) == {}
