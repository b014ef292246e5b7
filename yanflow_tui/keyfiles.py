"""Key material that a client library will only read from files (the Kubernetes client writes
client-key-data, client-certificate-data and CA data to temp files; Python's ssl loads a client
key from a path only). It goes to one private 0700 directory per process, under
``$TMPDIR/yanflow-keys-UID/PID-START``, which is removed at exit (``q``, a crash), on SIGHUP and
SIGTERM (``install_exit_signals``), and, after a SIGKILL or a power cut, by the next start's
``sweep`` once its process is gone.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import signal
import stat
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from yanflow_tui.errors import YanflowError

log = logging.getLogger(__name__)
EXIT_SIGNALS = (signal.SIGHUP, signal.SIGTERM)
_lock = threading.Lock()
_dir: Path | None = None


def base_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"yanflow-keys-{os.getuid()}"


def _start_time(pid: int) -> str:
    """The process's start time in clock ticks since boot (tells a reused PID apart), or ""."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return text.rpartition(")")[2].split()[19]  # field 22 of stat(5), counted after "(comm)"


def _tag(pid: int) -> str:
    return f"{pid}-{_start_time(pid) or 'x'}"


def _alive(tag: str) -> bool:
    pid_text, _, start = tag.partition("-")
    if not pid_text.isascii() or not pid_text.isdigit():
        return True  # not one of ours: leave it
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return start in ("", "x") or _start_time(pid) in ("", start)


def _own_base() -> Path:
    base = base_dir()
    try:
        base.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = os.lstat(base)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
        raise YanflowError(f"{base} is not a private directory of this user (mode 0700); remove it and start again")
    return base


def sweep() -> list[Path]:
    """Remove the key directories of processes that are gone; returns what was removed."""
    removed: list[Path] = []
    base = base_dir()
    try:
        entries = list(base.iterdir())
    except OSError:
        return removed
    for entry in entries:
        if entry != _dir and not _alive(entry.name):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def private_dir() -> str:
    """This process's key directory (created 0700 on first use, after a sweep)."""
    global _dir
    with _lock:
        if _dir is None:
            base = _own_base()
            sweep()
            path = base / _tag(os.getpid())
            shutil.rmtree(path, ignore_errors=True)  # a stale one of a reused PID
            path.mkdir(mode=0o700)
            atexit.register(remove)
            _dir = path
        return str(_dir)


def remove() -> None:
    """Delete this process's key files now. Safe to call from a signal handler, and again."""
    global _dir
    path = _dir
    if path is not None and path.exists():
        shutil.rmtree(path, ignore_errors=True)
    _dir = None


EXIT_GRACE = 5.0  # seconds a clean exit on a signal may take


INTERRUPT_GRACE = 15.0  # seconds the commands' own stops may take after Ctrl-C (a TensorBoard, a remote one)


def _exit_later(code: int, grace: float = EXIT_GRACE) -> None:
    time.sleep(grace)
    waiting = sorted(t.name for t in threading.enumerate() if t is not threading.current_thread())
    log.warning("the exit still waited %.0f s after the signal; ended (threads: %s)", grace, ", ".join(waiting))
    os._exit(code)


def bound_interrupt() -> Callable[[], None]:
    """Inside ``asyncio.run`` (its SIGINT handler in place): the first Ctrl-C still cancels the command, whose
    finally blocks stop what it started, and the process also ends with 130 ``INTERRUPT_GRACE`` seconds later
    if it has not ended by then: ``asyncio.run`` joins every worker thread at its end, and one blocked on a
    read would hold the exit forever (a second Ctrl-C too). Returns what puts asyncio's handler back."""
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous) or threading.current_thread() is not threading.main_thread():
        return lambda: None
    started: list[threading.Thread] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        if not started:
            started.append(threading.Thread(target=_exit_later, args=(130, INTERRUPT_GRACE), daemon=True))
            started[0].start()
        previous(signum, frame)

    signal.signal(signal.SIGINT, handler)

    def restore() -> None:
        if signal.getsignal(signal.SIGINT) is handler:
            signal.signal(signal.SIGINT, previous)

    return restore


def install_exit_signals(on_signal: Callable[[int], None] | None = None) -> None:
    """SIGHUP (terminal closed) and SIGTERM remove the key files at once, then end the process
    cleanly: ``on_signal(signum)`` when given (the TUI asks the app to exit), else ``SystemExit``
    so finally blocks and atexit handlers run. A clean exit that hangs (``asyncio.run`` joining a
    worker thread blocked on a network read, e.g. ``logs --follow``) ends the process anyway
    ``EXIT_GRACE`` seconds later."""

    def handler(signum: int, frame: FrameType | None) -> None:
        remove()
        if on_signal is not None:
            on_signal(signum)
            return
        threading.Thread(target=_exit_later, args=(128 + signum,), daemon=True).start()
        raise SystemExit(128 + signum)

    for sig in EXIT_SIGNALS:
        signal.signal(sig, handler)
