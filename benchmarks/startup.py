"""Benchmark: how long `yanflow-tui` takes, in a real pseudo-terminal, to first paint and to show
this machine's node on the Nodes screen (goal: under 3 s).

    python benchmarks/startup.py [--runs 5]

It runs the installed console script with an empty HOME (so the embedded default, the local machine,
is used) and prints a table of the figures. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
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


def one_run(command: list[str]) -> tuple[float, float]:
    home = tempfile.mkdtemp(prefix="yanflow-bench-")
    env = {k: v for k, v in os.environ.items() if k not in ("YANFLOW_CONFIG", "KUBECONFIG", "DET_MASTER")}
    env.update(HOME=home, XDG_CONFIG_HOME=f"{home}/.config", XDG_STATE_HOME=f"{home}/.state", TERM="xterm-256color")
    start = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe(command[0], command, env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    host = socket.gethostname().encode()
    seen = b""
    first_paint = node_shown = None
    pressed = False
    mark = 0  # where the output stood when "2" was pressed: the node must show after it
    deadline = start + 30
    try:
        while time.perf_counter() < deadline and node_shown is None:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    break
                seen += chunk
                if first_paint is None and b"Queue" in seen:
                    first_paint = time.perf_counter() - start
                if pressed and host in seen[mark:]:
                    node_shown = time.perf_counter() - start
            if first_paint is not None and not pressed:
                os.write(fd, b"2")  # show the Nodes screen
                pressed, mark = True, len(seen)
    finally:
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
        os.close(fd)
        shutil.rmtree(home, ignore_errors=True)
    if first_paint is None or node_shown is None:
        raise SystemExit("the console did not show the local node within 30 s")
    return first_paint, node_shown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    script = shutil.which("yanflow-tui") or ""
    command = [script] if script else [sys.executable, "-m", "yanflow_tui"]
    one_run(command)  # warm the page cache and bytecode
    results = [one_run(command) for _ in range(args.runs)]
    paints, nodes = [r[0] for r in results], [r[1] for r in results]
    print(f"{'metric':<34}{'median':>10}{'max':>10}   goal")
    print(f"{'first paint (s)':<34}{statistics.median(paints):>10.2f}{max(paints):>10.2f}")
    print(f"{'local node on Nodes screen (s)':<34}{statistics.median(nodes):>10.2f}{max(nodes):>10.2f}   < 3.00")


if __name__ == "__main__":
    main()
