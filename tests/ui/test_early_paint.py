"""The early paint in a real terminal: the console (``python -m yanflow_tui`` over this machine, the
``local`` cluster) starts over the last run's snapshot, paints the cached Queue before Textual is
loaded (``yanflow_tui.earlypaint``), and Textual takes over the same alternate screen, which it enters
once; the fresh data then replaces the cached. After the console (a quit, an error before Textual
took over) the terminal is as before: the normal screen, the cursor shown, echo and line editing on
(``stty`` run after it in the same terminal says so)."""

from __future__ import annotations

import getpass
import os
import re
import sys
import time
from pathlib import Path

import pytest
from terminal import Terminal

from yanflow_tui import earlypaint, snapcache
from yanflow_tui.hub import ClusterSnapshot, Health
from yanflow_tui.model import Job, JobState

ALT_ON, ALT_OFF = b"\x1b[?1049h", b"\x1b[?1049l"
ENTER = earlypaint.ENTER.encode()
BRACKETED_PASTE = b"\x1b[?2004h"


@pytest.fixture
def tty_home(tmp_path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


def keep_snapshot(home: Path, age: float = 300.0, jobs: int = 3, name: str = "local", kind: str = "local") -> None:
    """The snapshot a last run kept: cluster ``name`` with ``jobs`` jobs of mine (one named with escapes)."""
    me = getpass.getuser()
    made = tuple(
        Job(f"77{i:03d}", name, f"cached-run-{i}", me, JobState.RUNNING, nodes=("n1",)) for i in range(jobs)
    ) + (Job("78000", name, "evil\x1b]0;title\x07\x1b[2J", me, JobState.PENDING),)
    snap = ClusterSnapshot(name, kind, False, Health.OK, "", time.time() - age, made)
    path = home / ".local" / "state" / "yanflow" / snapcache.FILE_NAME
    snapcache.save(path, [snap], time.time(), {name: me})


def slow_slurm(home: Path) -> dict[str, str]:
    """The environment of a console whose one cluster, ``slow``, is a Slurm through local commands that
    never answer (each ``squeue``, ``sinfo``... sleeps): its first refresh cannot replace the cached data
    before Textual has shown it, however quick the machine."""
    stubs = home / "slow-slurm-bin"
    stubs.mkdir()
    for command in ("squeue", "sinfo", "scontrol", "sacct", "sbatch", "scancel", "sprio", "sshare"):
        stub = stubs / command
        stub.write_text("#!/bin/sh\nexec sleep 60\n")
        stub.chmod(0o755)
    config = home / "slow.yaml"
    config.write_text("clusters:\n  - name: slow\n    kind: slurm\n")
    return {"PATH": f"{stubs}:{os.environ.get('PATH', '/usr/bin:/bin')}", "YANFLOW_CONFIG": str(config)}


def console(
    home: Path, columns: int, lines: int, env: dict[str, str] | None = None, then_stty: bool = True
) -> Terminal:
    """The console in a pty; when it ends, ``stty -a`` in the same terminal shows its modes."""
    command = f"{sys.executable} -m yanflow_tui; echo EXIT=$?; stty -a" if then_stty else ""
    return Terminal(["/bin/sh", "-c", command], home, columns, lines, env=env)


def modes_after(term: Terminal) -> str:
    """What the shell printed after the console: its exit status and ``stty -a``."""
    term.exit_code()
    output = bytes(term.output).decode(errors="replace")
    return output[output.rindex("EXIT=") :]


@pytest.mark.parametrize("size", [(80, 24), (44, 9)])
def test_the_cached_queue_is_painted_before_textual_which_takes_over_the_screen_and_the_terminal_comes_back(
    tty_home, size
):
    keep_snapshot(tty_home, jobs=30)
    term = console(tty_home, *size)
    try:
        term.wait(lambda text: "cached 5m" in text and "77000" in text, "the cached Queue")
        painted = bytes(term.output)
        assert painted.startswith(ENTER)  # drawn by the early paint, before Textual
        assert b"\x1b]0;title" not in painted and b"\x1b[2J" not in painted  # the cluster's text cleaned
        assert "evil" not in term.text() or "title" in term.text()  # (the row, if shown, is plain text)
        term.wait_text("Open")  # Textual's footer: it took over
        term.wait_gone("cached")  # the first refresh: this machine's real (empty) queue
        assert "77000" not in term.text()
        term.press("q")
        text = modes_after(term)
    finally:
        term.close()
    output = bytes(term.output)
    assert output.count(ALT_ON) == 1  # Textual did not enter it again (nor save the paint's cursor)
    assert output.count(ALT_OFF) == 1 and output.index(ALT_OFF) > output.index(b"Open")
    assert "EXIT=0" in text
    modes = text
    assert re.search(r"(?<!-)\becho\b", modes) and re.search(r"(?<!-)\bicanon\b", modes)
    assert b"\x1b[?25h" in output[output.rindex(ALT_OFF) - 40 :]  # the cursor shown again


def test_an_error_before_textual_takes_over_gives_the_normal_screen_and_the_modes_back(tty_home):
    keep_snapshot(tty_home)
    config = tty_home / ".config" / "yanflow" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("clusters:\n  - name: local\n    kind: local\nkeymap:\n  no-such-binding: x\n")
    term = console(tty_home, 80, 24)
    try:
        text = modes_after(term)
    finally:
        term.close()
    output = bytes(term.output)
    assert output.startswith(ENTER)
    leave = output.index(earlypaint.LEAVE.encode())
    assert output.index(b"no-such-binding") > leave  # the error is said on the normal screen
    assert "EXIT=1" in text or "EXIT=2" in text
    modes = text
    assert re.search(r"(?<!-)\becho\b", modes) and re.search(r"(?<!-)\bicanon\b", modes)


@pytest.mark.parametrize("case", ["no snapshot", "switched off"])
def test_no_early_paint_without_a_snapshot_or_when_switched_off(tty_home, case):
    env = {}
    if case == "switched off":  # a cluster slower than Textual's first frame: the cached data shows until it answers
        keep_snapshot(tty_home, name="slow", kind="slurm")
        env.update(slow_slurm(tty_home), **{earlypaint.DISABLE_ENV: "1"})
    term = console(tty_home, 80, 24, env=env)
    try:
        term.wait_text("Open")  # Textual's first frame
        if case == "switched off":
            term.wait_text("cached 5m")  # Textual shows the cached data itself
        term.press("q")
        text = modes_after(term)
    finally:
        term.close()
    output = bytes(term.output)
    assert not output.startswith(ENTER) and ENTER not in output
    assert output.count(ALT_ON) == 1 and "EXIT=0" in text


def typed_during_the_paint(home: Path, keys: tuple[str, ...], env: dict[str, str] | None = None) -> Terminal:
    """The console, with ``keys`` typed as soon as the cached Queue is painted, before Textual has
    drawn anything (its footer is not on screen yet)."""
    term = Terminal([sys.executable, "-m", "yanflow_tui"], home, 80, 24, env=env)
    term.wait(lambda text: bytes(term.output).startswith(ENTER) and "77000" in text, "the cached Queue")
    assert "Open" not in term.text()  # Textual has not drawn yet: what is on screen is the paint
    for key in keys:
        term.press(key)
        term.pump(0.03)  # (typed by hand: one read each)
    return term


def test_a_key_typed_while_the_cached_queue_shows_reaches_the_live_console(tty_home):
    """``2`` typed over the paint opens Nodes once the console is ready: it is not typed into the
    filter (before, it filtered the Queue on "2")."""
    keep_snapshot(tty_home, jobs=30)
    term = typed_during_the_paint(tty_home, ("2",))
    try:
        term.wait_title("Nodes")
        assert "filter hides" not in term.text()
    finally:
        term.close()


def test_keys_typed_while_the_cached_queue_shows_arrive_in_order_enter_included(tty_home):
    """``/``, a filter's text and Enter, typed over the paint: the filter is opened, filled and
    applied, in that order (Enter read as Enter, not as a newline)."""
    keep_snapshot(tty_home, jobs=30, name="slow", kind="slurm")
    term = typed_during_the_paint(tty_home, ("/", "77012", "enter", "down"), env=slow_slurm(tty_home))
    try:
        term.wait_text(r"shown 1 of 31")
        term.wait(lambda text: "77012" in text and "77000" not in text, "only the filtered job")
        assert term.title() == "Queue"
    finally:
        term.close()


def test_slash_and_a_filter_typed_over_the_paint_are_drawn_at_once_then_the_live_console_has_them(tty_home):
    """The paint answers ``/`` and the text typed into the box itself (``earlyecho``), in the last line,
    before Textual's driver has taken over the terminal; the live console then gets the same keys and
    filters with them."""
    keep_snapshot(tty_home, jobs=30, name="slow", kind="slurm")
    term = typed_during_the_paint(tty_home, ("/", "zq"), env=slow_slurm(tty_home))
    try:
        term.wait(lambda text: "zq" in term.line(23), "the typed text in the last line")
        term.wait(  # the live console filtered on "zq", its box in the last line
            lambda text: "shown 0 of 31" in text and "77000" not in text and "zq" in term.line(23), "filtered"
        )
        assert term.title() == "Queue"
        output = bytes(term.output)
        driver = output.find(BRACKETED_PASTE)  # written by Textual's driver when it takes over the terminal
        assert driver > 0 and b"zq" in output[:driver], "not drawn before Textual took over"
    finally:
        term.close()
