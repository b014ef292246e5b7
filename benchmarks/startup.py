"""Benchmark: how long `yanflow-tui` takes, in a real pseudo-terminal, to first paint and to show
this machine's node on the Nodes screen (goal: under 3 s); then, started again over the snapshot the
first run kept at exit (``snapcache``), how long until the cached Queue is painted (goal: under 0.5 s:
the header marked ``cached``, the column headers and, with made-up jobs, the first one's row, all
seen in the pty's output; the console paints it before Textual is loaded, ``earlypaint``) and until
every cached cluster shows fresh data.

    python benchmarks/startup.py [--runs 5] [--cached-jobs 10000]

``--cached-jobs N`` puts N made-up jobs into the snapshot before each cached start, as a big site's
queue would be kept (the first refresh replaces them with this machine's real ones).

It runs the installed console script with an empty HOME (so the embedded default, the local machine,
is used; a Slurm found on PATH is discovered too) and prints a table of the figures, with the CPU time
the console had used when its first frame came (user + system, read from /proc) and per start (of the
runs it waited for) beside the wall-clock figures: on a loaded machine the wall clock includes waiting
for a core, and the CPU figures are the ones to compare. Bytecode is cached as an installed console has
it (pip compiles at install): the console runs without PYTHONDONTWRITEBYTECODE, with its caches in a
private PYTHONPYCACHEPREFIX that the first, warming run fills. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import atexit
import fcntl
import os
import pty
import re
import resource
import select
import shutil
import signal
import socket
import statistics
import struct
import sys
import tempfile
import termios
import time
from pathlib import Path

ANSI = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Z0-9]|\x1b[=>78]")
HEADER = re.compile(rb"YanFlow \xc2\xb7 [^\r\n\x1b]*\xe2\x94\x82")  # a whole header line, up to its counts


DROPPED = ("YANFLOW_CONFIG", "KUBECONFIG", "DET_MASTER", "PYTHONDONTWRITEBYTECODE")
# The console's bytecode, written by the warming run (made and removed by ``main``).
PYCACHE = os.path.join(tempfile.gettempdir(), f"yanflow-bench-pyc-{os.getpid()}")


def environment(home: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DROPPED}
    env.update(HOME=home, XDG_CONFIG_HOME=f"{home}/.config", XDG_STATE_HOME=f"{home}/.state", TERM="xterm-256color")
    env["PYTHONPYCACHEPREFIX"] = PYCACHE
    return env


def cpu_of(pid: int) -> float:
    """The CPU time (user + system, s) process ``pid`` has used so far."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_run(command: list[str], home: str, cached: bool = False, first_job: str = "") -> dict[str, float]:
    """One start in ``home``. Fresh: first paint and the local node on the Nodes screen. ``cached``
    (``home`` keeps a snapshot): the first header marked ``cached`` with the Queue's column headers
    and (``first_job``, the first row's id) its first row after it, then the first header without it."""
    rows = [b"CLUSTER  ID", first_job.encode()] if first_job else [b"CLUSTER  ID"]
    start = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe(command[0], command, environment(home))
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    host = socket.gethostname().encode()
    seen = b""
    found: dict[str, float] = {}
    pressed = False
    mark = 0  # where the output stood when "2" was pressed: the node must show after it
    deadline = start + 30
    done = ("fresh data",) if cached else ("first paint", "local node")
    try:
        while time.perf_counter() < deadline and not all(k in found for k in done):
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    break
                seen += chunk
                now = time.perf_counter() - start
                if "first paint" not in found and b"Queue" in seen:
                    found["first paint"] = now
                    found["first paint cpu"] = cpu_of(pid)
                if cached:
                    plain = ANSI.sub(b"", seen)
                    headers = HEADER.findall(plain)
                    # painted: the header marked cached, then the column headers and the first cached row
                    at = next((m.end() for m in HEADER.finditer(plain) if b" cached " in m.group()), -1)
                    if "cached paint" not in found and at >= 0 and all(r in plain[at:] for r in rows):
                        found["cached paint"] = now
                        found["cached paint cpu"] = cpu_of(pid)
                    if "cached paint" in found and b" cached " not in (headers[-1] if headers else b" cached "):
                        found["fresh data"] = now
                        found["fresh data cpu"] = cpu_of(pid)
                elif pressed and host in seen[mark:]:
                    found["local node"] = now
            if not cached and "first paint" in found and not pressed:
                os.write(fd, b"2")  # show the Nodes screen
                pressed, mark = True, len(seen)
    finally:
        os.kill(pid, signal.SIGTERM)  # the console keeps its snapshot on the way out
        os.waitpid(pid, 0)
        os.close(fd)
    missing = [k for k in done + (("cached paint",) if cached else ()) if k not in found]
    if missing:
        raise SystemExit(f"the console did not reach {', '.join(missing)} within 30 s")
    return found


FIRST_JOB = "9000000"  # the id of the first made-up job (the Queue's first row)


def add_jobs(home: str, count: int) -> None:
    """Add ``count`` made-up jobs (this user's, in every state) to each cluster of the snapshot in ``home``."""
    import getpass
    from datetime import datetime, timezone

    from yanflow_tui import snapcache
    from yanflow_tui.hub import ClusterSnapshot, Health
    from yanflow_tui.model import Job, JobState

    path = Path(home) / ".state" / "yanflow" / snapcache.FILE_NAME
    clusters = snapcache.decode(path.read_bytes())
    states, user, now = list(JobState), getpass.getuser(), datetime.now(timezone.utc)
    snaps = []
    for name, c in clusters.items():
        jobs = tuple(
            Job(
                f"9{i:06d}",
                name,
                f"train-{i % 97}-{i}",
                user,
                states[i % len(states)],
                nodes=(f"n{i % 64:02d}",),
                gpus=i % 9,
                submit_time=now,
                start_time=now,
                details=(("Partition", "gpu"),),
            )
            for i in range(count)
        )
        snaps.append(ClusterSnapshot(name, c.kind, False, Health(c.health), "", c.updated, c.jobs + jobs, c.nodes))
    snapcache.save(path, snaps, time.time())


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def row(name: str, values: list[float], goal: str = "") -> str:
    return f"{name:<46}{statistics.median(values):>10.2f}{max(values):>10.2f}   {goal}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cached-jobs", type=int, default=0, metavar="N", help="made-up jobs in the snapshot")
    args = parser.parse_args()
    script = shutil.which("yanflow-tui") or ""
    command = [script] if script else [sys.executable, "-m", "yanflow_tui"]
    os.makedirs(PYCACHE, mode=0o700)
    atexit.register(shutil.rmtree, PYCACHE, True)  # however the benchmark ends
    warm = tempfile.mkdtemp(prefix="yanflow-bench-")
    one_run(command, warm)  # warm the page cache and bytecode
    shutil.rmtree(warm, ignore_errors=True)
    fresh, cached = [], []
    cpu0 = cpu_seconds()
    for _ in range(args.runs):
        home = tempfile.mkdtemp(prefix="yanflow-bench-")
        try:
            fresh.append(one_run(command, home))
        finally:
            shutil.rmtree(home, ignore_errors=True)
    cpu1 = cpu_seconds()
    home = tempfile.mkdtemp(prefix="yanflow-bench-")
    try:
        one_run(command, home)  # leaves the snapshot the later starts paint from
        cpu2 = cpu_seconds()
        for _ in range(args.runs):
            if args.cached_jobs:
                add_jobs(home, args.cached_jobs)  # again: each start keeps its own fresh state at exit
            cached.append(one_run(command, home, cached=True, first_job=FIRST_JOB if args.cached_jobs else ""))
        cpu3 = cpu_seconds()
    finally:
        shutil.rmtree(home, ignore_errors=True)
    print(f"{'metric':<46}{'median':>10}{'max':>10}   goal")
    print(row("first paint, no snapshot (s)", [r["first paint"] for r in fresh]))
    print(row("  CPU until then (s)", [r["first paint cpu"] for r in fresh]))
    print(row("local node on Nodes screen (s)", [r["local node"] for r in fresh], "< 3.00"))
    jobs = f", {args.cached_jobs:,} jobs" if args.cached_jobs else ""
    print(row(f"first paint from the snapshot{jobs} (s)", [r["cached paint"] for r in cached], "< 0.50"))
    print(row("  CPU until then (s)", [r["cached paint cpu"] for r in cached], "(the wall figure without waiting)"))
    print(row("fresh data replaces it (s)", [r["fresh data"] for r in cached], "none set (issue 17: was 2.2-2.5 s)"))
    print(row("  CPU until then (s)", [r["fresh data cpu"] for r in cached]))
    print(f"CPU per start (user+sys, s): {(cpu1 - cpu0) / args.runs:.2f} fresh, {(cpu3 - cpu2) / args.runs:.2f} cached")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
