"""A real terminal for tests: the console runs in a pseudo-terminal (``pexpect``), is fed the bytes a
terminal sends for each key, and its screen is read back through a VT100 emulator (``pyte``).
Every wait polls the emulated screen for a condition, with a timeout; nothing sleeps."""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pexpect
import pyte
from waiting import wait_until

ROOT = Path(__file__).resolve().parent.parent
KEYS = {
    "escape": "\x1b",
    "tab": "\t",
    "shift+tab": "\x1b[Z",
    "enter": "\r",
    "ctrl+o": "\x0f",
    "backspace": "\x7f",
    "down": "\x1b[B",
    "up": "\x1b[A",
    "f2": "\x1bOQ",
}


class Terminal:
    """One console process in a pty of ``columns`` x ``lines``."""

    def __init__(
        self, argv: list[str], home: Path, columns: int = 80, lines: int = 24, env: dict[str, str] | None = None
    ) -> None:
        self.columns, self.lines = columns, lines
        self.screen = pyte.Screen(columns, lines)
        self.stream = pyte.ByteStream(self.screen)
        self.output = bytearray()  # every byte the console wrote
        self.last_output = time.monotonic()  # when it last wrote
        base = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "TERM": "xterm-256color",
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "YANFLOW_DISCOVER": "local",
            "LANG": "C.UTF-8",
            "COLORTERM": "truecolor",
        }
        # `python -m yanflow_tui` runs as the installed `yanflow-tui` command, as a user starts it: run from the
        # checkout, `-m` would put the checkout's own yanflow_tui/ first on sys.path and hide the installed
        # package (the Python matrix installs a wheel, not the checkout).
        if list(argv[:3]) == [sys.executable, "-m", "yanflow_tui"]:
            argv = [str(Path(sys.executable).with_name("yanflow-tui")), *argv[3:]]
        self.child = pexpect.spawn(
            argv[0], argv[1:], cwd=str(ROOT), env={**base, **(env or {})}, dimensions=(lines, columns)
        )

    @classmethod
    def console(cls, home: Path, columns: int = 80, lines: int = 24, *args: str) -> Terminal:
        """The console over the fake backend (``tests/fakes/console.py``)."""
        return cls([sys.executable, str(ROOT / "tests" / "fakes" / "console.py"), *args], home, columns, lines)

    @classmethod
    def console_shown(cls, tmp_path: Path, columns: int = 80, lines: int = 24, *args: str) -> Terminal:
        """``console`` with a new HOME under ``tmp_path``, once its first row and its footer are drawn."""
        home = tmp_path / "home"
        home.mkdir()
        term = cls.console(home, columns, lines, *args)
        try:
            term.wait_text("hpc/101|101")
            term.wait_text("Open")  # the footer
        except BaseException:
            term.close()
            raise
        return term

    # -- reading -----------------------------------------------------------------------------------
    def pump(self, timeout: float = 0.05) -> bool:
        """Feed what the console wrote to the emulator; False once it has exited."""
        try:
            data = self.child.read_nonblocking(65536, timeout=timeout)
        except pexpect.TIMEOUT:
            return True
        except pexpect.EOF:
            return False
        self.output += data
        self.last_output = time.monotonic()
        self.stream.feed(data)
        return True

    def quiet_for(self) -> float:
        """Seconds since the console last wrote anything."""
        return time.monotonic() - self.last_output

    def text(self) -> str:
        return "\n".join(self.screen.display)

    def line(self, row: int) -> str:
        return self.screen.display[row]

    def wait(self, condition: Callable[[str], object], what: str, timeout: float = 15.0) -> object:
        """Read the console's output until ``condition(text)`` holds for the screen (``waiting.wait_until``)."""
        alive = True

        def check() -> object:
            value = condition(self.text())
            if not value and not alive:
                raise AssertionError(f"the console exited while waiting for {what}:\n{self.text()}")
            return value

        def read(seconds: float) -> None:
            nonlocal alive
            alive = self.pump(seconds)

        read(0)
        try:
            return wait_until(check, timeout, what, pause=read)
        except AssertionError as exc:
            if not str(exc).startswith("timed out"):
                raise
            raise AssertionError(f"{exc}; the screen:\n{self.text()}") from None

    def wait_text(self, pattern: str, timeout: float = 15.0) -> None:
        self.wait(lambda text: re.search(pattern, text), f"/{pattern}/", timeout)

    def wait_gone(self, pattern: str, timeout: float = 15.0) -> None:
        self.wait(lambda text: not re.search(pattern, text), f"no /{pattern}/", timeout)

    def title(self) -> str:
        """The screen's name in the header (``YanFlow · Queue``)."""
        found = re.search(r"YanFlow · (\w+)", self.line(0))
        return found.group(1) if found else ""

    def wait_title(self, name: str, timeout: float = 15.0) -> None:
        self.wait(lambda text: self.title() == name, f"the {name} screen", timeout)

    # -- typing ------------------------------------------------------------------------------------
    def press(self, *keys: str) -> None:
        """Send each key as a terminal sends it: a name from ``KEYS``, or the text itself."""
        self.child.send("".join(KEYS.get(key, key) for key in keys))

    def exit_code(self, timeout: float = 15.0) -> int:
        deadline = time.monotonic() + timeout
        while self.pump() and time.monotonic() < deadline:
            pass
        self.child.close()
        return self.child.exitstatus if self.child.exitstatus is not None else -(self.child.signalstatus or 0)

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)
