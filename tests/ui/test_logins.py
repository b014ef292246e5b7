"""Logins that never block, over the real Slurm test cluster and fake Determined masters: the prompt
of a master that needs a password leaves every other cluster refreshing (the screen under it keeps
redrawing), a master that cannot be reached says so without asking for a password, and a failed or
dismissed prompt never reopens by itself."""

from __future__ import annotations

from dethelpers import cluster, seed
from private_sshd import free_port
from slurmhelpers import slurm, ssh_cluster
from textual.widgets import Input
from uihelpers import make_app, prompt_ready, refreshed, screen_text
from waiting import wait_for

from yanflow_tui.config import ClusterConfig
from yanflow_tui.screens.queue import JobTable, QueueScreen


def prompt_open(app) -> bool:
    return type(app.screen).__name__ == "PromptScreen"


async def test_a_login_prompt_never_delays_the_slurm_rows_and_an_unreachable_master_never_prompts(master, slurm_jobs):
    seed(master)
    job = slurm_jobs.add(
        slurm("sbatch", "--parsable", "-J", "yf-login-wait", "-o", "/dev/null", "--wrap", "sleep 300")
        .strip()
        .split(";")[0]
    )
    dead = ClusterConfig("dead", "determined", options={"master": f"http://127.0.0.1:{free_port()}", "user": "alice"})
    slurm_cluster = ssh_cluster()
    app = make_app(cluster(master, user="alice"), dead, slurm_cluster)
    asked: list[str] = []
    ask = app.ask_login
    app.ask_login = lambda name: (asked.append(name), ask(name))  # type: ignore[method-assign]
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: prompt_open(app), what="password prompt")
        queue = app.screen_stack[0]
        assert isinstance(queue, QueueScreen)
        key = f"{slurm_cluster.name}/{job}"
        await wait_for(pilot, lambda: key in queue.query_one(JobTable).row_keys, what="Slurm row under the prompt")
        assert prompt_open(app)  # the rows came while it was open
        await wait_for(
            pilot,
            lambda: "cannot reach the master" in app.hub.snapshots["dead"].message,
            what="the dead master's error",
        )
        # The header under the prompt catches up with every cluster: Slurm's state (not "connecting"), the
        # dead master's error, det waiting for its login. (Under load a Slurm refresh can be mid-reconnect
        # when the dead master's error is first drawn, so wait for the whole line, not its first paint.)
        slurm_ok = f"{slurm_cluster.name} connecting"
        await wait_for(
            pilot,
            lambda: all(s in (t := screen_text(app)) for s in ("dead error", "det login needed")) and slurm_ok not in t,
            timeout=60,
            what="every cluster's state drawn under the prompt",
        )
        assert prompt_open(app)
        assert asked == ["det"] and app.hub.snapshots["dead"].login_user == ""
        await pilot.press("escape")  # not now
        await wait_for(pilot, lambda: not prompt_open(app), what="prompt closed")
        reads = app.hub.snapshots["det"].failures
        await refreshed(pilot, app, "det")  # another refresh of det, its snapshot handled by the app
        assert app.hub.snapshots["det"].failures > reads
        assert not prompt_open(app) and asked == ["det"]


async def test_a_wrong_password_on_a_real_master_does_not_reopen_the_prompt(master):
    seed(master)
    app = make_app(cluster(master, user="alice"))
    async with app.run_test(size=(120, 30)) as pilot:
        prompt = await wait_for(pilot, lambda: prompt_ready(app), what="password prompt")  # (its Input mounted)
        prompt.query_one(Input).value = "not-the-password"
        await pilot.press("enter")
        await wait_for(pilot, lambda: not prompt_open(app), what="prompt closed")
        failures = app.hub.snapshots["det"].failures
        await refreshed(pilot, app, "det")  # a refresh after the failure, its snapshot handled by the app
        assert app.hub.snapshots["det"].failures > failures
        assert not prompt_open(app)
        assert "det login needed" in screen_text(app)
