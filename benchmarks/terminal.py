"""Benchmark: the console in a real pseudo-terminal, as a user sees it (issue #32).

The console (``run_console``, the installed command's path: the early paint, the Escape delay, the
driver that writes escape sequences) runs in a pty over ``synthetic.py``'s clusters (registered as
the ``synthetic`` kind, as ``console.py`` does, refreshed once an hour so that no refresh falls in a
measurement). Real key bytes go in; the time of a key is from its bytes written to the last byte of
the frame that answers it (the output read until it has been quiet ``--quiet`` seconds: the console
writes nothing while idle, so what it writes after a key is the answer, whole). The output is fed
to a VT100 emulator (``pyte``) to check the screen answered (a key whose screen did not change is
counted "unanswered", not timed).

    python benchmarks/terminal.py [--jobs 10000] [--sizes 80x24,200x50] [--presses 50]
                                  [--idle-seconds 20] [--realistic] [--json out.json]

It reports p50/p95/max per key (cursor, page, ``/``, each filter keystroke, Escape, sort, group
toggle, screen switches 1-5), the time to the first screen, then idle CPU (the console and its child
processes, from /proc) and RSS over ``--idle-seconds`` (600 for the issue's 10-minute figure) with the
bytes written meanwhile. Not part of the test suite; wall clock on whatever else the machine runs.

    python benchmarks/terminal.py --four-kinds --idle-minutes 10 [--sizes 200x50] [--modules-out FILE]
                                  [--slurm-transport openssh]

measures one idle console with four clusters configured (``fourkinds.py``: this machine, the loopback
Slurm test cluster over SSH, the Kubernetes API emulator and the fake Determined master), through the
installed command's path (``yanflow-tui --config``): after its first screen and a settling minute, the
CPU of the console and its children (those it has waited for included) over the window, the RSS of
the console alone and of its children, the bytes written, and the modules loaded (``--modules-out``;
with ``PYTHONTRACEMALLOC=1`` also where the memory is, by file). No key is pressed. The Slurm cluster
is shared: jobs other runs submit there meanwhile are refreshed work, not idle (see the screen in --json).

    python benchmarks/terminal.py --first-answer [N] [--trees BEFORE,AFTER] [--jobs 10000] [--realistic]

times, over N starts each, the first frame and the first frame that answers a key (``/`` typed as soon as
anything shows; answered when the filter box does), without a cache and from the snapshot a first run
kept when it quit.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

LOG_RATE = 200.0  # lines a second of the log that streams while keys are timed (a chatty training job)
KEYS = {"down": "\x1b[B", "pagedown": "\x1b[6~", "home": "\x1b[H", "escape": "\x1b", "enter": "\r"}


# -- the console (the child process) ------------------------------------------------------------------
def child(jobs: int, nodes: int, realistic: bool, log_rate: float) -> int:
    """The console over synthetic clusters, as ``yanflow-tui`` runs it."""
    from synthetic import SyntheticBackend

    from yanflow_tui.backends import registry
    from yanflow_tui.cli.console import run_console
    from yanflow_tui.config import ClusterConfig, Config

    registry.register("synthetic", SyntheticBackend)
    names = ("hpc", "kube", "det")
    clusters = tuple(
        ClusterConfig(
            name,
            "synthetic",
            refresh_seconds=3600.0,
            options={
                "jobs": jobs // 3 + (i < jobs % 3),
                "nodes": nodes // 3,
                "gpus_per_node": 8,
                "seed": 1,
                "realistic": realistic,
                "log_rate": log_rate,
                "lazy": True,  # made at the first fetch, in a thread: not the console's start
            },
        )
        for i, name in enumerate(names)
    )
    return run_console(Config(clusters=clusters, all_users=True))


def child_config(config: str, modules_out: str | None, eager_kubernetes: bool = False) -> int:
    """The console as ``yanflow-tui --config CONFIG`` runs it; ``modules_out``: the modules loaded, written
    there once its first minute is over (by a thread that only sleeps until then)."""
    if modules_out:
        import threading

        def write_modules() -> None:
            time.sleep(SETTLE_SECONDS)
            Path(modules_out).write_text("\n".join(sorted(sys.modules)) + "\n")
            import tracemalloc

            if tracemalloc.is_tracing():  # PYTHONTRACEMALLOC=1: where the memory is, by file, beside
                stats = tracemalloc.take_snapshot().statistics("filename")[:60]
                Path(f"{modules_out}.malloc").write_text("\n".join(map(str, stats)) + "\n")

        threading.Thread(target=write_modules, daemon=True).start()
    if eager_kubernetes:  # the import as it was before ``lazyimports`` (every API class and model), to compare
        import kubernetes  # noqa: F401
    from yanflow_tui.cli import main as console_main

    return console_main(["--config", config])


# -- the terminal -------------------------------------------------------------------------------------
class Console:
    def __init__(
        self,
        jobs: int,
        nodes: int,
        columns: int,
        lines: int,
        home: Path,
        realistic: bool = False,
        child_argv: list[str] | None = None,
        env_extra: dict[str, str] | None = None,
        python: str = sys.executable,
        log_rate: float = LOG_RATE,
    ) -> None:
        argv = [str(Path(__file__).resolve()), "--child", "--jobs", str(jobs), "--nodes", str(nodes)]
        argv += ["--realistic"] if realistic else []
        argv += ["--log-rate", str(log_rate)]
        if child_argv is not None:  # another console than the synthetic one (``--four-kinds``)
            argv = [str(Path(__file__).resolve()), *child_argv]
        self._start([python, *argv], columns, lines, home, env_extra)

    def _start(
        self, argv: list[str], columns: int, lines: int, home: Path, env_extra: dict[str, str] | None = None
    ) -> None:
        """``argv`` in a pty of ``columns`` x ``lines``, read into a VT100 emulator, with ``home`` as its HOME."""
        import pexpect
        import pyte

        self.screen = pyte.Screen(columns, lines)
        self.stream = pyte.ByteStream(self.screen)
        env = {
            **os.environ,
            "TERM": "xterm-256color",
            "COLORTERM": "truecolor",
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "LANG": "C.UTF-8",
            **(env_extra or {}),
        }
        self.child = pexpect.spawn(argv[0], argv[1:], env=env, dimensions=(lines, columns))
        # pexpect sleeps 50 ms before each send by default (``delaybeforesend``), inside the timed span of
        # every key: the figures before this was set were 50 ms too slow, for every program alike.
        self.child.delaybeforesend = None
        self.written = 0
        self.last_read = 0.0  # when the last bytes were read
        self.missed = ""  # how the last unanswered press went, and the screen's first line then

    def read(self, timeout: float) -> bool:
        """One read of what the console wrote (True), or nothing within ``timeout`` (False)."""
        import pexpect

        try:
            data = self.child.read_nonblocking(1 << 20, timeout=timeout)
        except pexpect.TIMEOUT:
            return False
        except pexpect.EOF:
            raise SystemExit(f"the console exited:\n{self.text()}") from None
        self.written += len(data)
        self.last_read = time.monotonic()
        self.stream.feed(data)
        return True

    def settle(self, quiet: float, most: float) -> float | None:
        """Read until nothing came for ``quiet`` s; the time of the last byte (None: nothing came)."""
        last = None
        end = time.monotonic() + most
        while time.monotonic() < end:
            if self.read(quiet):
                last = time.monotonic()
            elif last is not None or time.monotonic() >= end:
                break
            else:  # nothing yet: the answer may still come (up to ``most``)
                continue
        return last

    def text(self) -> str:
        return "\n".join(self.screen.display)

    def look(self) -> tuple:
        """What is on screen, text and attributes (to tell whether a key changed it)."""
        return tuple(self.screen.display), tuple(
            tuple((c.fg, c.bg, c.reverse) for c in self.screen.buffer[y].values()) for y in range(self.screen.lines)
        )

    def press(self, key: str, quiet: float) -> float | None:
        """Seconds from ``key``'s bytes to the last byte of its answer; None when the screen did not change."""
        before = self.look()
        sent = time.monotonic()
        self.child.send(KEYS.get(key, key))
        last = self.settle(quiet, most=5.0)
        if last is None or self.look() == before:
            self._missed("nothing written in 5 s" if last is None else "the screen as before")
            return None
        return last - sent

    def _missed(self, how: str) -> None:
        """Keep how the press just timed went unanswered, with the screen's first line then."""
        self.missed = f"{how}: {self.text().splitlines()[0][:60]!r}"

    def press_to(self, key: str, answered, quiet: float, most: float = 5.0) -> float | None:
        """Seconds from ``key``'s bytes to the last byte of its answer, the answer being the frame after which
        ``answered(screen text)`` holds and then ``quiet`` s of silence; None when it never holds within
        ``most`` s. For a key whose answer may pause longer than ``quiet`` before it is drawn (a screen shown
        the first time builds its widgets: Submit wrote a few bytes, then nothing for ~0.4 s, and ``press``
        counted it unanswered)."""
        before = self.look()
        sent = time.monotonic()
        self.child.send(KEYS.get(key, key))
        while not answered(self.text()):
            if time.monotonic() - sent > most:
                self._missed(f"not answered in {most:g} s")
                return None
            self.read(0.05)
        self.settle(quiet, most=most)
        if self.look() == before:
            self._missed("the screen as before")
            return None
        return self.last_read - sent

    def press_until(self, key: str, answered, most: float = 5.0) -> float | None:
        """Seconds from ``key``'s bytes to the read after which ``answered(screen text)`` holds, for a screen
        that is never quiet (a log streams); None when it did not within ``most`` s."""
        sent = time.monotonic()
        self.child.send(KEYS.get(key, key))
        while time.monotonic() - sent < most:
            if self.read(0.05) and answered(self.text()):
                return time.monotonic() - sent
        return None

    def pid_tree(self) -> list[int]:
        pids, parents = [self.child.pid], {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                except OSError:
                    continue
                parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
        for pid in pids:
            pids += [p for p, parent in parents.items() if parent == pid and p not in pids]
        return pids

    def cpu_seconds(self) -> float:
        """CPU seconds of the console and its live children, plus the children it has waited for."""
        tick = os.sysconf("SC_CLK_TCK")
        total = 0.0
        for pid in self.pid_tree():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += sum(int(f) for f in fields[11:15]) / tick  # utime stime cutime cstime
        return total

    def rss_mb(self) -> float:
        total = 0.0
        for pid in self.pid_tree():
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
        return total

    def idle(self, seconds: float) -> dict:
        """Reads for ``seconds`` with no key sent: CPU % of a core (the program and its children), the most
        RSS, and the bytes it wrote meanwhile."""
        cpu0, written0, t0 = self.cpu_seconds(), self.written, time.monotonic()
        rss = [self.rss_mb()]
        while time.monotonic() - t0 < seconds:
            self.read(min(1.0, seconds))
            rss.append(self.rss_mb())
        span = time.monotonic() - t0
        return {
            "seconds": round(span, 1),
            "cpu_percent": round(100 * (self.cpu_seconds() - cpu0) / span, 2),
            "rss_mb_max": round(max(rss), 1),
            "bytes_written": self.written - written0,
        }

    def close(self) -> None:
        self.child.terminate(force=True)

    def own_cpu_seconds(self) -> float:
        """CPU seconds of the console's own threads, its children left out."""
        fields = Path(f"/proc/{self.child.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(f) for f in fields[11:13]) / os.sysconf("SC_CLK_TCK")  # utime stime

    def own_rss_mb(self) -> float:
        """The console's own RSS, its children left out."""
        for line in Path(f"/proc/{self.child.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0


# -- one idle console with four clusters (``--four-kinds``) --------------------------------------------
SETTLE_SECONDS = 60.0  # after the first screen: every cluster's first refresh and the lazy imports done


def run_four_kinds(args, columns: int, lines: int) -> dict:
    from fourkinds import FourKinds

    with tempfile.TemporaryDirectory() as tmp, FourKinds(Path(tmp), slurm_transport=args.slurm_transport) as kinds:
        argv = ["--child-config", str(kinds.config)]
        argv += ["--modules-out", args.modules_out] if args.modules_out else []
        argv += ["--eager-kubernetes"] if args.eager_kubernetes else []
        start = time.monotonic()
        python = tree_python(args.tree) if args.tree else sys.executable
        term = Console(0, 0, columns, lines, Path(tmp), child_argv=argv, env_extra=kinds.env, python=python)
        try:
            while "shown" not in term.text():  # the Queue's counts: the first screen
                if time.monotonic() - start > 120:
                    raise SystemExit(f"no first screen after 120 s:\n{term.text()}")
                term.read(0.5)
            first = time.monotonic() - start
            settle_end = time.monotonic() + SETTLE_SECONDS
            while time.monotonic() < settle_end:
                term.read(1.0)
            cpu0, own_cpu0, written0, t0 = term.cpu_seconds(), term.own_cpu_seconds(), term.written, time.monotonic()
            own, tree, minutes = [term.own_rss_mb()], [term.rss_mb()], []
            window = args.idle_minutes * 60
            while time.monotonic() - t0 < window:
                term.read(min(1.0, window))
                own.append(term.own_rss_mb())
                tree.append(term.rss_mb())
                if time.monotonic() - t0 >= 60 * (len(minutes) + 1):
                    minutes.append(round(100 * (term.cpu_seconds() - cpu0) / (time.monotonic() - t0), 2))
            span = time.monotonic() - t0
            cpu, own_cpu = term.cpu_seconds() - cpu0, term.own_cpu_seconds() - own_cpu0
            screen = term.text()
        finally:
            term.close()
    return {
        "size": f"{columns}x{lines}",
        "tree": args.tree or str(HERE.parent),
        "clusters": f"local, slurm (ssh 127.0.0.1:2222{', ' + args.slurm_transport if args.slurm_transport else ''}), "
        "kubernetes (emulator), determined (fake master)",
        "first_screen_s": round(first, 2),
        "idle": {
            "seconds": round(span, 1),
            "cpu_percent": round(100 * cpu / span, 2),
            "cpu_seconds": round(cpu, 2),
            "cpu_percent_console_alone": round(100 * own_cpu / span, 2),
            "cpu_percent_by_minute": minutes,
            "rss_mb_console_max": round(max(own), 1),
            "rss_mb_tree_max": round(max(tree), 1),
            "bytes_written": term.written - written0,
        },
        "screen": screen,
    }


def show_four_kinds(result: dict) -> None:
    idle = result["idle"]
    print(
        f"\nfour kinds at {result['size']} ({result['clusters']}), {result['tree']}: "
        f"first screen {result['first_screen_s']} s"
    )
    print(
        f"  idle {idle['seconds']} s: CPU {idle['cpu_percent']} % of a core (console + children, "
        f"{idle['cpu_seconds']} s; the console alone {idle['cpu_percent_console_alone']} %), "
        f"RSS max {idle['rss_mb_console_max']} MB console, "
        f"{idle['rss_mb_tree_max']} MB with children, {idle['bytes_written']} bytes written"
    )
    print(f"  CPU % from the start of the window, at each minute: {idle['cpu_percent_by_minute']}")


# -- the run ------------------------------------------------------------------------------------------
def sequence(presses: int) -> list[tuple[str, str]]:
    """(label, key) in the order sent: every key ``presses`` times, each back where it started (``GROUPS``:
    the cursor is put on the first group row first, unmeasured)."""
    out: list[tuple[str, str]] = []
    out += [("cursor down", "down")] * presses
    out += [("page down", "pagedown")] * presses
    for _ in range(presses):
        out += [
            ("/ (open filter)", "/"),
            ("filter keystroke", "r"),
            ("filter keystroke", "u"),
            ("filter keystroke", "n"),
        ]
        out += [("escape (clear filter)", "escape")]
    out += [("", GROUPS)] + [("group toggle (e)", "e")] * presses
    out += [("sort (o)", "o")] * presses
    for _ in range(presses):
        out += [(f"screen {k}", k) for k in "23451"]
    return out


GROUPS = "(to the first group row)"
SCREEN_TITLES = {"1": "Queue", "2": "Nodes", "3": "Submit", "4": "Logs", "5": "Clusters"}


def to_first_group(term: Console, quiet: float) -> None:
    """The Queue's cursor on its first group row (``▸``), from the top."""
    term.press("home", quiet)
    lines = term.screen.display
    header = next(i for i, line in enumerate(lines) if " CLUSTER " in line)
    group = next((i for i in range(header + 1, len(lines)) if "▸ " in lines[i]), None)
    for _ in range((group or header + 1) - header - 1):
        term.press("down", quiet)


STREAM_KEYS = (("stream: screen 1 (queue)", "1", "YanFlow · Queue"), ("stream: screen 4 (logs)", "4", "YanFlow · Logs"))


def record(times: dict[str, list[float]], unanswered: dict[str, int], label: str, took: float | None) -> None:
    """A timed key's seconds under its label, or one more unanswered press (None: the screen did not answer)."""
    if took is None:
        unanswered[label] = unanswered.get(label, 0) + 1
    else:
        times.setdefault(label, []).append(took)


def while_streaming(term: Console, args, times: dict, unanswered: dict) -> None:
    """Keys while a log streams (``--log-rate`` lines a second): the first job's log followed on the Logs
    screen, then ``1`` and ``4`` in turn, each timed to the frame whose header names the screen it asked
    for (the output is never quiet, so the end of an answer is the header, not silence). The pane is
    closed after, so that nothing streams during the idle window."""
    term.press("1", args.quiet)
    term.press("home", args.quiet)
    term.child.send("l")
    end = time.monotonic() + 30
    while "following" not in term.text() or "YanFlow · Logs" not in term.screen.display[0]:
        if time.monotonic() > end:
            raise SystemExit(f"no log followed 30 s after l:\n{term.text()}")
        term.read(0.2)
    for _ in range(args.presses):
        for label, key, header in STREAM_KEYS:
            took = term.press_until(key, lambda _text, header=header: header in term.screen.display[0])
            record(times, unanswered, label, took)
    term.child.send("x")  # close the pane (the Logs screen shows)
    term.settle(args.quiet, most=5)
    term.press("1", args.quiet)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]


def every_cluster_shown(text: str) -> bool:
    """The Queue's first screen with every cluster's jobs: the footer, the counts, and no cluster still
    "connecting" in the header (its first line, which a narrow terminal cuts after the clusters)."""
    head = text.splitlines()[0] if text else ""
    return "Open" in text and "shown" in head and "connecting" not in head


AT_ONCE = [("at once: / (open filter)", "/"), ("at once: filter keystroke", "r"), ("", "escape")]
AFTER_IDLE = [("after idle: / (open filter)", "/"), ("after idle: filter keystroke", "r"), ("", "escape")]


def run_one(args, columns: int, lines: int, python: str = sys.executable) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        start = time.monotonic()
        term = Console(
            args.jobs, args.nodes, columns, lines, home, args.realistic, python=python, log_rate=args.log_rate
        )
        times: dict[str, list[float]] = {}
        unanswered: dict[str, int] = {}
        missed: dict[str, str] = {}  # the first unanswered press of each label, and how it went

        def timed(steps: list[tuple[str, str]]) -> None:
            for label, key in steps:
                if key == GROUPS:
                    to_first_group(term, args.quiet)
                    continue
                if label.startswith("screen "):  # to the frame that shows it: a first show is slow and not silent
                    took = term.press_to(
                        key, lambda text, key=key: f"YanFlow · {SCREEN_TITLES[key]}" in text, args.quiet
                    )
                else:
                    took = term.press(key, args.quiet)
                if label:
                    record(times, unanswered, label, took)
                    if took is None:
                        missed.setdefault(label, term.missed)

        try:
            # the footer, the counts, and every cluster's jobs: the synthetic data is made in the console at
            # its first fetch (``lazy``), and a frame before it (a cluster "connecting") is no screen to type into
            while not every_cluster_shown(term.text()):
                if time.monotonic() - start > 300:
                    raise SystemExit(f"no first screen after 300 s:\n{term.text()}")
                term.read(0.5)
            first = time.monotonic() - start
            timed(AT_ONCE)  # typed as soon as the first screen shows: no settling, nothing moved first
            term.settle(args.quiet * 4, most=60)
            timed(sequence(args.presses))
            while_streaming(term, args, times, unanswered)
            term.settle(args.quiet * 4, most=30)
            idle = term.idle(args.idle_seconds)
            timed(AFTER_IDLE)
        finally:
            term.close()
    keys = {
        label: {
            "n": len(v),
            "p50_ms": round(1000 * statistics.median(v), 1),
            "p95_ms": round(1000 * percentile(v, 95), 1),
            "max_ms": round(1000 * max(v), 1),
            "unanswered": unanswered.get(label, 0),
        }
        for label, v in times.items()
    }
    for label, n in unanswered.items():
        keys.setdefault(label, {"n": 0, "unanswered": n})
    return {
        "size": f"{columns}x{lines}",
        "jobs": args.jobs,
        "first_screen_s": round(first, 2),
        "keys": keys,
        "idle": idle,
        "missed": missed,
    }


# -- the first frame that answers a key (``--first-answer``) ------------------------------------------------
FIRST_ANSWER_STARTS = 10  # starts timed per size and cache state


def first_answer(args, columns: int, lines: int, python: str = sys.executable) -> dict:
    """Seconds from the console's start to its first frame, and to the first frame that answers a key:
    ``/`` typed as soon as anything is on screen, answered when the filter box shows. Without a cache (a
    fresh HOME each start) and from a cached snapshot (the HOME of a first run that quit with ``q``, which
    keeps the snapshot; the cached Queue is painted before Textual loads and the key is held for it)."""
    out: dict = {"size": f"{columns}x{lines}", "jobs": args.jobs}
    with tempfile.TemporaryDirectory() as kept:
        keep_home = Path(kept)
        term = Console(args.jobs, args.nodes, columns, lines, keep_home, args.realistic, python=python)
        try:
            while "shown" not in term.text():
                term.read(0.5)
            term.settle(args.quiet * 4, most=60)
            term.child.send("q")
            while term.child.isalive():
                try:
                    term.read(0.5)
                except SystemExit:
                    break
        finally:
            term.close()
        for label, cached in (("no cache", False), ("cached", True)):
            firsts, answers = [], []
            for _ in range(args.first_answer):
                with tempfile.TemporaryDirectory() as fresh:
                    home = keep_home if cached else Path(fresh)
                    start = time.monotonic()
                    term = Console(args.jobs, args.nodes, columns, lines, home, args.realistic, python=python)
                    try:
                        while "YanFlow" not in term.text():
                            term.read(0.01)
                        firsts.append(time.monotonic() - start)
                        term.child.send("/")
                        while "filter:" not in term.text():
                            if time.monotonic() - start > 60:
                                raise SystemExit(f"no answer to / after 60 s:\n{term.text()}")
                            term.read(0.01)
                        answers.append(time.monotonic() - start)
                    finally:
                        term.close()
            out[label] = {
                "first_frame_s": [round(statistics.median(firsts), 2), round(max(firsts), 2)],
                "first_answer_s": [round(statistics.median(answers), 2), round(max(answers), 2)],
                "starts": len(answers),
            }
    return out


def show_first_answer(result: dict) -> None:
    print(f"\n{result['jobs']} jobs at {result['size']}" + (f" ({result['tree']})" if "tree" in result else ""))
    print("| start | first frame, median / most (s) | first frame answering / (s) | starts |")
    print("|---|---|---|---|")
    for label in ("no cache", "cached"):
        r = result[label]
        first, answer = r["first_frame_s"], r["first_answer_s"]
        print(f"| {label} | {first[0]} / {first[1]} | {answer[0]} / {answer[1]} | {r['starts']} |")


def show(result: dict) -> None:
    print(f"\n{result['jobs']} jobs at {result['size']}: first screen {result['first_screen_s']} s")
    print(f"  {'key':24} {'n':>4} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'unanswered':>10}")
    for label, k in result["keys"].items():
        if k["n"]:
            print(f"  {label:24} {k['n']:>4} {k['p50_ms']:>8} {k['p95_ms']:>8} {k['max_ms']:>8} {k['unanswered']:>10}")
        else:
            print(f"  {label:24} {0:>4} {'-':>8} {'-':>8} {'-':>8} {k['unanswered']:>10}")
    idle = result["idle"]
    print(
        f"  idle {idle['seconds']} s: CPU {idle['cpu_percent']} % of a core (console + children), "
        f"RSS max {idle['rss_mb_max']} MB, {idle['bytes_written']} bytes written"
    )
    for label, how in result.get("missed", {}).items():
        print(f"  first unanswered {label}: {how}")


def tree_python(tree: str) -> str:
    """The Python of a checkout's own ``.venv`` (where its ``yanflow_tui`` is installed, editable)."""
    python = Path(tree).resolve() / ".venv" / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"{tree}: no .venv/bin/python (make one: python -m venv .venv && .venv/bin/pip install -e .)")
    return str(python)


def show_pair(before: dict, after: dict) -> None:
    print(f"\n{after['jobs']} jobs at {after['size']}, before -> after (p50 / p95 / max ms):")
    print(f"  first screen: {before['first_screen_s']} -> {after['first_screen_s']} s")
    for label, k in after["keys"].items():
        b = before["keys"].get(label, {"n": 0})
        cell = lambda f: " / ".join(str(f.get(x, "-")) for x in ("p50_ms", "p95_ms", "max_ms"))  # noqa: E731
        print(f"  {label:30} n {b['n']:>3}/{k['n']:<3} {cell(b):>24} -> {cell(k)}")
    bi, ai = before["idle"], after["idle"]
    print(
        f"  idle: CPU {bi['cpu_percent']} -> {ai['cpu_percent']} % of a core, RSS {bi['rss_mb_max']} -> "
        f"{ai['rss_mb_max']} MB, bytes {bi['bytes_written']} -> {ai['bytes_written']}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=300)
    parser.add_argument("--sizes", default="80x24,200x50")
    parser.add_argument("--presses", type=int, default=50, help="presses per key (at least 50 for a p95)")
    parser.add_argument("--quiet", type=float, default=0.25, help="s of silence that end a key's answer")
    parser.add_argument("--idle-seconds", type=float, default=20.0, help="the idle window (600: the issue's)")
    parser.add_argument("--json", help="write the figures there too")
    parser.add_argument(
        "--realistic", action="store_true", help="hundreds of users, names of every width, 1,000-task arrays"
    )
    parser.add_argument("--four-kinds", action="store_true", help="idle only: local, Slurm, Kubernetes, Determined")
    parser.add_argument("--idle-minutes", type=float, default=10.0, help="the idle window of --four-kinds")
    parser.add_argument("--slurm-transport", default="", help="--four-kinds: openssh (the system ssh) or asyncssh")
    parser.add_argument(
        "--eager-kubernetes", action="store_true", help="--four-kinds: the kubernetes client imported whole, as before"
    )
    parser.add_argument("--modules-out", help="--four-kinds: the console's loaded modules, written there")
    parser.add_argument(
        "--log-rate", type=float, default=LOG_RATE, help="lines a second of the log streaming while keys are timed"
    )
    parser.add_argument(
        "--trees",
        help="BEFORE,AFTER: two checkouts, each run with its own .venv, alternated in this run (sizes in turn)",
    )
    parser.add_argument(
        "--tree", help="--four-kinds: the console of that checkout (its own .venv), e.g. two runs side by side"
    )
    parser.add_argument(
        "--first-answer",
        type=int,
        nargs="?",
        const=FIRST_ANSWER_STARTS,
        help="only the time to the first frame that answers a key, without and with a cache (N starts each)",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child-config", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.jobs, args.nodes, args.realistic, args.log_rate)
    if args.child_config:
        return child_config(args.child_config, args.modules_out, args.eager_kubernetes)
    results = []
    for size in args.sizes.split(","):
        columns, lines = map(int, size.lower().split("x"))
        if args.four_kinds:
            results.append(run_four_kinds(args, columns, lines))
            show_four_kinds(results[-1])
            continue
        if args.first_answer:
            for tree in args.trees.split(",") if args.trees else [""]:
                python = tree_python(tree) if tree else sys.executable
                results.append({**({"tree": tree} if tree else {}), **first_answer(args, columns, lines, python)})
                show_first_answer(results[-1])
            continue
        if args.trees:  # before and after, in this run: each size in both trees, one after the other
            pair = []
            for tree in args.trees.split(","):
                pair.append({"tree": tree, **run_one(args, columns, lines, python=tree_python(tree))})
                show(pair[-1])
            show_pair(*pair)
            results += pair
            continue
        results.append(run_one(args, columns, lines))
        show(results[-1])
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
