"""Benchmark: ``squeue --json`` against ``squeue -o`` (our delimited format) on N queued jobs of the
real test cluster (``scripts/slurm-cluster up`` first). Submits N held jobs, times each form (command
wall time, then Python parse time: the text by the tests' reference parser, ``tests/slurmreference.py``,
the JSON by ``parse_squeue_json``, each then ``build_jobs``, each form with its own caches) a few times,
prints the medians, and cancels the jobs.

    SLURM_CONF=/tmp/yanflow-slurm/etc/slurm.conf python benchmarks/slurm_formats.py [N]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent / "tests"))  # the reference parser
from slurmreference import ReferenceCaches, parse_squeue_text

from yanflow_tui.backends.slurm import parse

NAME = "yanflow-bench"
RUNS = 3


def sh(argv, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=True, **kw)


def submit(n: int) -> None:
    # 10k separate sbatch calls, 8 at a time, each job held so nothing runs.
    script = f"seq {n} | xargs -P 8 -I{{}} sbatch --hold --parsable -J {NAME}-{{}} -o /dev/null --wrap true >/dev/null"
    subprocess.run(["/bin/sh", "-c", script], check=True)


def timed(argv, env=None) -> tuple[float, str]:
    start = time.perf_counter()
    out = sh(argv, env=env).stdout
    return time.perf_counter() - start, out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    if "SLURM_CONF" not in os.environ:
        os.environ["SLURM_CONF"] = "/tmp/yanflow-slurm/etc/slurm.conf"
    env = dict(os.environ, SLURM_TIME_FORMAT="%s")
    queued = len(sh(["squeue", "-h", "-o", "%i"]).stdout.split())
    t0 = time.perf_counter()
    if queued < n:
        submit(n - queued)
    print(
        f"queue: {len(sh(['squeue', '-h', '-o', '%i']).stdout.split())} jobs "
        f"(submitted in {time.perf_counter() - t0:.1f} s)"
    )
    text_form = ["squeue", "-h", "-a", "-t", "all", "-o", parse.SQUEUE_FORMAT]
    json_form = ["squeue", "-a", "-t", "all", "--json"]
    results = {}
    for label, argv, parser in (
        ("-o", text_form, parse_squeue_text),
        ("--json", json_form, parse.parse_squeue_json),
    ):
        caches = ReferenceCaches()
        cmd, prs, rows = [], [], 0
        for _ in range(RUNS):
            wall, out = timed(argv, env)
            start = time.perf_counter()
            jobs = parse.build_jobs(parser(out, caches), "bench", caches)
            prs.append(time.perf_counter() - start)
            cmd.append(wall)
            rows = len(jobs)
        results[label] = (statistics.median(cmd), statistics.median(prs), rows, len(out))
    for label, (cmd, prs, rows, size) in results.items():
        print(
            f"squeue {label:7s} command {cmd:6.2f} s  parse {prs:6.2f} s  total {cmd + prs:6.2f} s  "
            f"rows {rows}  output {size / 1e6:.1f} MB"
        )
    ratio = sum(results["--json"][:2]) / max(1e-9, sum(results["-o"][:2]))
    print(f"--json / -o total time: {ratio:.1f}x")
    if "--keep" not in sys.argv:
        subprocess.run(
            ["/bin/sh", "-c", f"squeue -h -o '%i %j' | awk '$2 ~ /^{NAME}-/ {{print $1}}' | xargs -r -n 500 scancel"],
            check=False,
        )


if __name__ == "__main__":
    main()
