"""A cache file that cannot be used never stops a start: the console (``python -m yanflow_tui`` over
this machine, in a real terminal) starts over a ``snapshot.json`` or ``firstpaint.json`` that is nested
too deeply, too big, of the wrong types, not UTF-8, unreadable, cut short or not a regular file; it
says so in one line and sets the file aside (``NAME.bad``, mode 0600), so the next start is quiet."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import sys
from pathlib import Path

import pytest
from terminal import Terminal
from test_early_paint import keep_snapshot

from yanflow_tui import __version__, snapcache

FILES = (snapcache.FILE_NAME, snapcache.PAINT_FILE)
NOBODY = 65534
KINDS = ("depth", "size", "type", "encoding", "permissions", "truncation", "fifo")


def spoil(path: Path, kind: str) -> None:
    """Make the cache file ``path`` (a good one, as the last run kept it) bad in the way ``kind`` says."""
    limit = snapcache.MAX_BYTES if path.name == snapcache.FILE_NAME else snapcache.PAINT_MAX_BYTES
    if kind == "depth":
        path.write_bytes(b"[" * 100_000)
    elif kind == "size":  # sparse: nothing is written
        with path.open("r+b") as fh:
            fh.truncate(limit + 1)
    elif kind == "type":
        wrong = {"format": 1, "yanflow": __version__, "saved": 0, "clusters": {"local": {"kind": "local", "jobs": 5}}}
        path.write_text(json.dumps(wrong) if path.name == snapcache.FILE_NAME else "[1, 2, 3]")
    elif kind == "encoding":
        path.write_bytes(b'{"format": 1, "yanflow": "\xff\xfe\xfa"}')
    elif kind == "permissions":
        path.chmod(0)  # (when the tests run as root, the console runs as another user: ``console``)
    elif kind == "truncation":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif kind == "fifo":  # a pipe nobody writes to: opening it for reading would wait forever
        path.unlink()
        os.mkfifo(path, 0o600)


def console(home: Path, unreadable: Path | None) -> Terminal:
    """The console in a pty. When the tests run as root (who can read any file) and a file must be
    ``unreadable``, the console runs as an unprivileged user who owns the rest of ``home``."""
    argv = [sys.executable, "-m", "yanflow_tui"]
    if unreadable is not None and os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        assert setpriv, "setpriv (util-linux) is needed to run the console as an unprivileged user"
        for path in [home, *home.rglob("*")]:
            if path != unreadable:
                os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
        for parent in home.parents:  # the way in
            if parent.stat().st_mode & 0o001 == 0:
                parent.chmod(parent.stat().st_mode | 0o001)
        argv = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]
    return Terminal(argv, home, 120, 30)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", FILES)
def test_a_bad_cache_file_is_set_aside_with_a_one_line_note_and_the_console_starts(tmp_path, name, kind):
    home = tmp_path / "home"
    home.mkdir()
    keep_snapshot(home, jobs=3)
    state = home / ".local" / "state" / "yanflow"
    bad = state / name
    spoil(bad, kind)
    term = console(home, bad if kind == "permissions" else None)
    try:
        term.wait_text("Open", timeout=30)  # Textual's footer: the console started
        note = "setasideas" + name + snapcache.BAD_SUFFIX  # the toast's words, wherever it wraps them
        term.wait(lambda text: note in re.sub(r"[^a-z.]", "", text), "the note")
        term.press("q")
        code = term.exit_code()
    finally:
        term.close()
    assert code == 0, term.text()
    assert stat.S_ISREG(os.lstat(bad).st_mode)  # written again, good, at exit
    assert snapcache.read(state / snapcache.FILE_NAME)[1] == "" and snapcache.read_paint(bad)[1] == ""
    kept = state / (name + snapcache.BAD_SUFFIX)
    mode = os.lstat(kept).st_mode
    if stat.S_ISREG(mode) and kind != "permissions":  # (not ours to chmod when another user runs)
        assert stat.S_IMODE(mode) == 0o600
    output = bytes(term.output)
    assert b"Traceback" not in output and b"unexpected" not in output
    log = (state / "yanflow.log").read_text()
    notes = [line for line in log.splitlines() if "set aside as " + kept.name in line]
    assert notes, log
