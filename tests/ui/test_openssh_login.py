"""Logins in the real terminal for a cluster on the OpenSSH transport: before the console starts, the
master of a cluster that has none is started in the terminal (the user types the one-time code at
ssh's own prompt); inside the console a gone master shows "master not running: press l to log in",
and ``l`` on the Clusters screen suspends the console, runs the same login, and comes back to a
healthy cluster. The pty test types real codes to the real one-time-code sshd."""

from __future__ import annotations

import re
import sys
from contextlib import contextmanager
from dataclasses import replace

import yaml
from opensshhelpers import control, key_openssh
from otphelpers import DIR, otp_code, require_otp
from terminal import Terminal
from uihelpers import make_app, screen_text
from waiting import wait_for

from yanflow_tui import termlogin
from yanflow_tui.backends.slurm.openssh import NO_MASTER, OpenSSHTransport
from yanflow_tui.backends.slurm.transport import parse_ssh_option
from yanflow_tui.commands import YanflowCommands
from yanflow_tui.hub import Health
from yanflow_tui.screens.clusters import ClustersScreen


async def test_the_login_key_suspends_the_console_and_starts_the_master(home, sockets, slurm_dir, monkeypatch):
    cluster = replace(key_openssh(), refresh_seconds=0.5)
    app = make_app(cluster)
    ran = []
    real = termlogin.log_in
    monkeypatch.setattr(termlogin, "log_in", lambda login, out=None: (ran.append(login), real(login, out))[1])
    errors: list[str] = []
    report = app.report_error
    app.report_error = lambda title, message: (errors.append(message), report(title, message))[1]  # type: ignore[method-assign]
    login = app.hub.backend(cluster.name).terminal_login()
    assert login is not None
    try:
        async with app.run_test(size=(150, 40)) as pilot:
            await wait_for(pilot, lambda: app.hub.snapshots[cluster.name].terminal_login, what="no master")
            provider = YanflowCommands(app.screen)
            assert f"cluster: log in to {cluster.name}" in [hit.text async for hit in provider.discover()]
            await pilot.press("5")
            await wait_for(pilot, lambda: isinstance(app.screen, ClustersScreen), what="Clusters")
            await wait_for(pilot, lambda: NO_MASTER in screen_text(app), what="the stale error")
            assert "l: log in, in the terminal" in screen_text(app)
            await pilot.press("l")  # the test's terminal cannot be handed over: said, nothing run
            await wait_for(pilot, lambda: any("cannot hand over its terminal" in e for e in errors), what="refused")
            assert ran == [] and app.is_running
            suspended: list[str] = []

            @contextmanager
            def suspend():
                suspended.append("suspended")
                yield
                suspended.append("resumed")

            app.suspend = suspend  # type: ignore[method-assign]
            await pilot.press("l")
            await wait_for(pilot, lambda: suspended == ["suspended", "resumed"], what="suspend and resume")
            assert ran == [login] and {"-M", "-N", "-f"} <= set(login.argv)
            await wait_for(
                pilot, lambda: app.hub.snapshots[cluster.name].health is Health.OK, timeout=30, what="healthy"
            )
            assert not app.hub.snapshots[cluster.name].needs_login
    finally:
        control(login, "exit")


def test_the_first_login_happens_in_the_terminal_and_again_with_the_console_suspended(home, sockets, tmp_path):
    require_otp()
    cluster = yaml.safe_load((DIR / "yanflow-otp.yaml").read_text())["clusters"][0]
    cluster["ssh"]["transport"] = "openssh"
    cluster["refresh_seconds"] = 1
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"clusters": [cluster]}))
    login = OpenSSHTransport(parse_ssh_option(cluster["ssh"]), cluster=cluster["name"]).login()
    healthy = re.compile(r"slurm-otp \d+s")
    term = Terminal(
        [sys.executable, "-m", "yanflow_tui", "--config", str(config)], home, 120, 30, {"XDG_CACHE_HOME": str(sockets)}
    )
    try:
        term.wait_text("cluster slurm-otp: logging in", timeout=30)
        term.wait_text("One-time password", timeout=30)  # ssh's own prompt, before the console
        term.press(otp_code(), "enter")
        term.wait_title("Queue", timeout=30)
        term.wait(lambda text: healthy.search(text), "the cluster healthy", timeout=40)
        assert termlogin.logged_in(login)

        control(login, "exit")  # the master goes away under the console
        term.wait_text("slurm-otp login needed", timeout=30)
        term.press("5")
        term.wait_title("Clusters")
        term.wait_text(re.escape(NO_MASTER))
        term.press("l")  # the console steps aside: ssh asks in the terminal
        term.wait_text("One-time password", timeout=30)
        term.press(otp_code(), "enter")
        term.wait_title("Clusters", timeout=30)
        term.wait(lambda text: healthy.search(text) and NO_MASTER not in text, "healthy again", timeout=40)
        term.press("q")
        assert term.exit_code() == 0
        assert termlogin.logged_in(login)  # our master persists (ControlPersist) for the next start
    finally:
        term.close()
        control(login, "exit")
