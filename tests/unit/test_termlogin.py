"""Logins made in the terminal before the console starts (``termlogin.log_in_first``), over fake
backends whose ``terminal_login`` runs small local commands: one already logged in is left alone, one
that is not runs its login, and a failure is said and does not stop the rest."""

from __future__ import annotations

import io

from fakes.backend import FakeBackend

from yanflow_tui import termlogin
from yanflow_tui.backends.base import TerminalLogin
from yanflow_tui.config import ClusterConfig, Config
from yanflow_tui.errors import BackendError
from yanflow_tui.hub import Hub


def test_each_cluster_not_logged_in_logs_in_first_and_a_failure_is_said(register_backend, tmp_path):
    ran = tmp_path / "ran"
    logins = {
        "done": TerminalLogin("done", "already", ("sh", "-c", f"echo done >> {ran}"), ("true",)),
        "new": TerminalLogin("new", "ssh master for new", ("sh", "-c", f"echo new >> {ran}"), ("false",)),
        "bad": TerminalLogin("bad", "ssh master for bad", ("sh", "-c", "exit 255"), ("false",)),
    }

    class Terminal(FakeBackend):
        kind = "terminal"

        def terminal_login(self) -> TerminalLogin | None:
            if self.name == "broken":
                raise BackendError("ssh broken: ssh -G failed: bad config line")
            return logins.get(self.name)

    register_backend(Terminal)
    names = ("done", "new", "bad", "broken", "plain")
    hub = Hub(Config(clusters=tuple(ClusterConfig(n, "terminal") for n in names)))
    out = io.StringIO()
    failed = termlogin.log_in_first(hub, out)
    assert ran.read_text() == "new\n"  # only the one not logged in ran its login
    assert failed == {
        "bad": "ssh master for bad: login failed (exit status 255)",
        "broken": "ssh broken: ssh -G failed: bad config line",
    }
    text = out.getvalue()
    assert "cluster new: logging in (ssh master for new); answer its prompts here" in text
    assert "cluster new: logged in" in text and "cluster done" not in text and "plain" not in text
    assert "cluster bad: ssh master for bad: login failed (exit status 255); it stays stale" in text
