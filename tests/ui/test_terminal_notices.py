"""A word when a job ends, and copying, as a real terminal receives them: the console runs in a pty
(``terminal.Terminal``) over the fake backend, and the raw bytes it wrote are searched for the bell,
the desktop notices (OSC 9, OSC 777) and the clipboard's OSC 52; inside tmux, wrapped for its
passthrough, and kept by a real tmux server with ``set-clipboard on``."""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
import sys

import pytest
from terminal import ROOT, Terminal
from waiting import wait_until

CONSOLE = [sys.executable, str(ROOT / "tests" / "fakes" / "console.py")]
OSC9 = re.compile(rb"\x1b\]9;YanFlow: job 101 \(train-resnet\) on hpc: failed, exit code 3\x07")
OSC777 = re.compile(rb"\x1b\]777;notify;YanFlow;job 101 \(train-resnet\) on hpc: failed, exit code 3\x07")


@pytest.fixture
def tty_home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    return home


def bells(raw: bytes) -> int:
    """The BELs that are the bell: not the end of an OSC string (Textual's pointer shape, our notices)."""
    return re.sub(rb"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)", b"", raw).count(b"\x07")


def ended_console(home, *args: str, env: dict[str, str] | None = None) -> Terminal:
    term = Terminal([*CONSOLE, "--job-ends", *args], home, 100, 30, env=env)
    term.wait_text("train-resnet")
    return term


def test_a_job_that_ends_rings_and_says_so(tty_home):
    term = ended_console(tty_home)
    try:
        term.wait_text(r"job 101 \(train-resnet\) on hpc: failed")  # the toast
        wait_until(lambda: term.pump() and OSC777.search(term.output), what="the desktop notice")
        raw = bytes(term.output)
        assert len(OSC9.findall(raw)) == 1 and len(OSC777.findall(raw)) == 1
        assert bells(raw) == 1
    finally:
        term.close()


def test_notices_off_say_nothing(tty_home):
    term = ended_console(tty_home, "--no-notices")
    try:
        term.wait(lambda text: "FAILED" in text or "failed" in text.split("train-resnet")[1][:40], "job 101 failed")
        raw = bytes(term.output)
        assert b"\x1b]9;" not in raw and b"\x1b]777;" not in raw
        assert bells(raw) == 0
        assert "job ended" not in term.text()
    finally:
        term.close()


def test_inside_tmux_the_notice_is_wrapped(tty_home):
    term = ended_console(tty_home, env={"TMUX": "/tmp/tmux-0/default,1,0"})
    try:
        wrapped = rb"\x1bPtmux;\x1b\x1b\]9;YanFlow: job 101 \(train-resnet\) on hpc: failed, exit code 3\x07\x1b\\"
        wait_until(lambda: term.pump() and re.search(wrapped, term.output), what="the wrapped desktop notice")
    finally:
        term.close()


def copied(raw: bytes) -> list[str]:
    """The texts of the plain OSC 52 sequences (not those wrapped for tmux, whose ESC is doubled)."""
    found = re.findall(rb"(?<!\x1b)\x1b\]52;c;([A-Za-z0-9+/=]*)\x07", raw)
    return [base64.b64decode(m).decode() for m in found]


def highlighted_id(term: Terminal) -> str:
    """The id of the Queue's first job row (the highlighted one)."""
    found = re.search(r"\b(10[1-3])\b", term.text())
    assert found, term.text()
    return found.group(1)


def test_y_copies_the_job_id(tty_home):
    term = Terminal(CONSOLE, tty_home, 100, 30)
    try:
        term.wait_text("train-resnet")
        first = highlighted_id(term)
        term.press("y")
        term.wait_text(f"copied job id: {first}")
        assert copied(bytes(term.output)) == [first]
        assert b"\x1bPtmux;" not in term.output
    finally:
        term.close()


def test_y_in_tmux_wraps_the_copy(tty_home):
    term = Terminal(CONSOLE, tty_home, 100, 30, env={"TMUX": "/tmp/tmux-0/default,1,0"})
    try:
        term.wait_text("train-resnet")
        first = highlighted_id(term)
        term.press("y")
        term.wait_text(f"copied job id: {first}")
        b64 = base64.b64encode(first.encode())
        assert b"\x1bPtmux;\x1b\x1b]52;c;" + b64 + b"\x07\x1b\\" in term.output
        assert copied(bytes(term.output)) == [first]  # and plain, for tmux's own set-clipboard
    finally:
        term.close()


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_y_reaches_a_real_tmux_buffer(tty_home, tmp_path):
    """A private tmux server with ``set-clipboard on``: the copy becomes its paste buffer."""
    socket = f"yf-notice-{tmp_path.name}"[:40]

    def tmux(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True, timeout=20)

    env = (
        f"HOME={tty_home} XDG_CONFIG_HOME={tty_home}/.config XDG_STATE_HOME={tty_home}/.local/state "
        "YANFLOW_DISCOVER=local TERM=tmux-256color LANG=C.UTF-8"
    )
    command = f"cd {ROOT} && env {env} {' '.join(CONSOLE)}"
    assert tmux("-f", "/dev/null", "new-session", "-d", "-x", "100", "-y", "30", command).returncode == 0
    try:
        tmux("set-option", "-g", "set-clipboard", "on")
        wait_until(lambda: "train-resnet" in tmux("capture-pane", "-p").stdout, what="the console in tmux")
        first = re.search(r"\b(10[1-3])\b", tmux("capture-pane", "-p").stdout).group(1)
        tmux("send-keys", "y")
        wait_until(lambda: tmux("show-buffer").stdout == first, what="tmux's paste buffer to hold the id")
    finally:
        tmux("kill-server")
