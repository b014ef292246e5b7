"""Logins made in the real terminal (``Backend.terminal_login``, e.g. an OpenSSH master that asks for a
one-time code). Before the console starts, ``log_in_first`` checks each cluster that has one and, when
it is not logged in, runs its login right there, the user answering the prompts; a failure is said,
and the console starts with that cluster stale. Inside the console the login key suspends it and runs
the same ``log_in``. A command line (``yanflow-tui nodes``) logs in the same way (``log_in_needed``),
or, with no terminal, runs the login's ``batch`` form, which never prompts. No Textual here."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable, Iterator
from typing import TextIO

from yanflow_tui.backends.base import TerminalLogin
from yanflow_tui.errors import YanflowError
from yanflow_tui.hub import Hub

CHECK_TIMEOUT = 10.0
BATCH_TIMEOUT = 60.0  # a login with nobody to answer: ssh's own ConnectTimeout bounds most of it
PREFIX = "yanflow-tui: "


def _alone(argv: tuple[str, ...], timeout: float) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` with no input and no terminal to find (it cannot prompt), keeping what it says."""
    return subprocess.run(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        timeout=timeout,
        start_new_session=True,
    )


def logged_in(login: TerminalLogin) -> bool:
    try:
        return _alone(login.check, CHECK_TIMEOUT).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


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


def log_in_batch(login: TerminalLogin) -> str:
    """Run ``login.batch`` with no terminal (it never prompts): "" once logged in, else why not."""
    if not login.batch:
        return f"{login.what}: this login needs a terminal to answer its prompts"
    try:
        result = _alone(login.batch, BATCH_TIMEOUT)
    except subprocess.TimeoutExpired:
        return f"{login.what}: login timed out after {BATCH_TIMEOUT:.0f} s"
    except OSError as exc:
        return f"{login.what}: cannot run {login.batch[0]}: {exc.strerror or exc}"
    if not result.returncode:
        return ""
    said = [line.strip() for line in result.stderr.splitlines() if line.strip()]
    why = said[-1] if said else f"exit status {result.returncode}"
    return (
        f"{login.what}: login failed with no terminal to answer prompts ({why}); "
        "run the command in a terminal, or add the key to ssh-agent"
    )


def log_in_needed(
    hub: Hub, names: Iterable[str], terminal: bool, out: TextIO | None = None
) -> Iterator[tuple[str, str]]:
    """Log in each of ``names`` whose terminal login is not done yet: in this terminal, the user
    answering the prompts, when ``terminal``; else its batch form. Yields (cluster, "") for each one
    logged in now, (cluster, why not) for each that failed, one at a time."""
    for name in names:
        try:
            login = hub.backend(name).terminal_login()
            if login is None or logged_in(login):
                continue
        except YanflowError as exc:
            yield name, str(exc)
            continue
        yield name, log_in(login, out) if terminal else log_in_batch(login)


def log_in_first(hub: Hub, out: TextIO | None = None) -> dict[str, str]:
    """Before the console starts: log in each cluster whose terminal login is not done yet. Returns
    cluster -> why it failed, for those that did."""
    out = out or sys.stderr
    failed = {}
    for name, why in log_in_needed(hub, hub.names, True, out):
        if why:
            failed[name] = why
            print(
                f"{PREFIX}cluster {name}: {why}; it stays stale in the console (l on the Clusters screen retries)",
                file=out,
            )
        else:
            print(f"{PREFIX}cluster {name}: logged in", file=out)
    return failed
