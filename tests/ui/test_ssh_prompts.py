"""The console answers an SSH login's questions through its own masked prompt, against the real
one-time-code login node of the test cluster (sshd on 2224: the key, then a TOTP code through PAM):
the code typed into the prompt logs in and the Queue shows the cluster connected; a cancelled prompt
is a clear "login cancelled" error that never reopens by itself, and ``l`` on the Clusters screen
asks again. Another cluster keeps refreshing while the prompt is open. The command line asks in the
terminal."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import replace

from otphelpers import DIR, otp_cluster, otp_code
from slurmhelpers import ssh_cluster
from terminal import Terminal
from textual.widgets import Input
from uihelpers import make_app, refreshed, screen_text
from waiting import wait_for

from yanflow_tui.hub import Health
from yanflow_tui.screens.dialogs import PromptScreen


def prompt(app) -> PromptScreen | None:
    return app.screen if isinstance(app.screen, PromptScreen) else None


async def test_the_codes_typed_into_the_prompts_log_in_one_dialog_at_a_time(slurm_dir):
    """Two one-time-code clusters asking at once, and a plain one: one dialog at a time, the plain
    cluster refreshed under it, and each code typed logs its cluster in."""
    first = otp_cluster()
    second = replace(first, name="slurm-otp-b")
    plain = ssh_cluster()
    app = make_app(first, second, plain)

    def dialogs() -> list[PromptScreen]:
        return [s for s in app.screen_stack if isinstance(s, PromptScreen)]

    async with app.run_test(size=(120, 30)) as pilot:
        screen = await wait_for(pilot, lambda: prompt(app), timeout=40, what="the first prompt")
        asking = screen.question.split(":")[0]
        other = second.name if asking == first.name else first.name
        assert "One-time password" in screen.question and asking in (first.name, second.name)
        assert screen.password  # masked
        await wait_for(pilot, lambda: app.hub.backend(other).asker.asking, what="the second login waiting its turn")
        await wait_for(
            pilot,
            lambda: app.hub.snapshots[plain.name].health is Health.OK,
            timeout=40,
            what="the plain cluster refreshed under the prompt",
        )
        assert prompt(app) is screen and len(dialogs()) == 1
        assert app.hub.snapshots[asking].health is Health.CONNECTING
        screen.query_one(Input).value = await asyncio.to_thread(otp_code)
        await pilot.press("enter")
        screen = await wait_for(
            pilot, lambda: (p := prompt(app)) and p.question.startswith(f"{other}: ") and p, what="the second prompt"
        )
        assert len(dialogs()) == 1
        await wait_for(
            pilot, lambda: app.hub.snapshots[asking].health is Health.OK, timeout=40, what="the first logged in"
        )
        screen.query_one(Input).value = await asyncio.to_thread(otp_code)
        await pilot.press("enter")
        await wait_for(
            pilot, lambda: app.hub.snapshots[other].health is Health.OK, timeout=40, what="the second logged in"
        )
        await wait_for(
            pilot,
            lambda: not any(f"{c} connecting" in (t := screen_text(app)) or f"{c} error" in t for c in (asking, other)),
            what="the Queue's header says both are connected",
        )
        assert prompt(app) is None
        assert app.hub.backend(asking).transport.connects == 1


async def test_a_cancelled_prompt_says_login_cancelled_and_l_asks_again(slurm_dir):
    cluster = otp_cluster()
    app = make_app(cluster)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: prompt(app), timeout=40, what="the one-time code prompt")
        await pilot.press("escape")  # cancel
        await wait_for(
            pilot,
            lambda: "login cancelled" in app.hub.snapshots[cluster.name].message,
            timeout=40,
            what="the cancel said",
        )
        await wait_for(pilot, lambda: f"{cluster.name} login needed" in screen_text(app), what="the header's state")
        await refreshed(pilot, app, cluster.name)  # another refresh: no prompt by itself
        assert prompt(app) is None and "login cancelled" in app.hub.snapshots[cluster.name].message

        await pilot.press("5")
        await wait_for(pilot, lambda: "login cancelled" in screen_text(app), what="the Clusters screen says it")
        assert "l: log in as root" in screen_text(app)
        await pilot.press("l")
        screen = await wait_for(pilot, lambda: prompt(app), timeout=40, what="the prompt again, on l")
        screen.query_one(Input).value = await asyncio.to_thread(otp_code)
        await pilot.press("enter")
        await wait_for(
            pilot,
            lambda: app.hub.snapshots[cluster.name].health is Health.OK,
            timeout=40,
            what="logged in after l",
        )


def test_the_command_line_asks_for_the_code_in_the_terminal(slurm_dir, home):
    """``yanflow-tui jobs`` against the one-time-code node: the code is asked on the terminal
    (not echoed), and the jobs are listed."""
    otp_cluster()  # the node is up
    term = Terminal(
        [sys.executable, "-m", "yanflow_tui", "jobs", "--json", "--config", str(DIR / "yanflow-otp.yaml")], home
    )
    try:
        term.wait_text(r"slurm-otp: One-time password", timeout=40)
        code = otp_code()
        term.child.sendline(code)
        assert term.exit_code(timeout=60) == 0, term.output.decode(errors="replace")
        out = term.output.decode(errors="replace")
        assert code not in out  # masked
        assert out.rstrip().endswith("}")  # the --json object of jobs
    finally:
        term.close()
