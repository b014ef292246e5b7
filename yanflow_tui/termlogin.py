"""Logins made in the real terminal (``Backend.terminal_login``, e.g. an OpenSSH master that asks for a
one-time code). Before the console starts, ``log_in_first`` checks each cluster that has one and, when
it is not logged in, runs its login right there, the user answering the prompts; a failure is said,
and the console starts with that cluster stale. Inside the console the login key suspends it and runs
the same ``log_in``. No Textual here."""

from __future__ import annotations

import subprocess
import sys
from typing import TextIO

from yanflow_tui.backends.base import TerminalLogin
from yanflow_tui.errors import YanflowError
from yanflow_tui.hub import Hub

CHECK_TIMEOUT = 10.0
PREFIX = "yanflow-tui: "


def logged_in(login: TerminalLogin) -> bool:
    try:
        result = subprocess.run(
            login.check,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=CHECK_TIMEOUT,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0


def log_in(login: TerminalLogin, out: TextIO | None = None) -> str:
    """Run ``login.argv`` in this terminal (the user answers its prompts): "" once logged in, else why not."""
    out = out or sys.stderr
    print(f"{PREFIX}cluster {login.cluster}: logging in ({login.what}); answer its prompts here", file=out, flush=True)
    try:
        code = subprocess.run(login.argv).returncode
    except KeyboardInterrupt:
        return f"{login.what}: login interrupted"
    except OSError as exc:
        return f"{login.what}: cannot run {login.argv[0]}: {exc.strerror or exc}"
    return f"{login.what}: login failed (exit status {code})" if code else ""


def log_in_first(hub: Hub, out: TextIO | None = None) -> dict[str, str]:
    """Before the console starts: log in each cluster whose terminal login is not done yet. Returns
    cluster -> why it failed, for those that did."""
    out = out or sys.stderr
    failed = {}
    for name in hub.names:
        try:
            login = hub.backend(name).terminal_login()
            if login is None or logged_in(login):
                continue
        except YanflowError as exc:
            why = str(exc)
        else:
            why = log_in(login, out)
        if why:
            failed[name] = why
            print(
                f"{PREFIX}cluster {name}: {why}; it stays stale in the console (l on the Clusters screen retries)",
                file=out,
            )
        else:
            print(f"{PREFIX}cluster {name}: logged in", file=out)
    return failed
