"""The console over the real Determined backend and the fake master: the password prompt,
experiments grouped with their trials, and the slot map."""

from __future__ import annotations

from dethelpers import PASSWORD, cluster, seed
from textual.widgets import Input
from uihelpers import make_app, prompt_ready, screen_text
from waiting import wait_for

from yanflow_tui.screens.queue import JobTable


def rows(app) -> list[str]:
    return app.screen.query_one(JobTable).row_keys


async def logged_in(pilot, app) -> JobTable:
    """The password typed into the prompt; the Queue's table once it shows experiment 12, on its row."""
    prompt = await wait_for(pilot, lambda: prompt_ready(app), what="password prompt")
    prompt.query_one(Input).value = PASSWORD
    await pilot.press("enter")
    await wait_for(pilot, lambda: "det/exp-12" in rows(app), what="experiment row")
    table = app.screen.query_one(JobTable)
    table.move_cursor_to_key("det/exp-12")
    return table


async def test_prompted_password_logs_in_and_experiments_show_with_their_trials(master, caplog):
    import logging

    caplog.set_level(logging.DEBUG)
    seed(master)
    app = make_app(cluster(master, user="alice"))
    async with app.run_test(size=(160, 40)) as pilot:
        await logged_in(pilot, app)
        assert not [r for r in rows(app) if "trial-" in r]  # trials start collapsed
        await pilot.press("e")
        await wait_for(pilot, lambda: len([r for r in rows(app) if "trial-" in r]) == 3, what="trials")
        assert "det/exp-13" not in rows(app)  # bob's experiment: mine by default, filtered by the master
        experiments = [r for r in master.requests if r.path == "/api/v1/experiments"]
        assert experiments and all(r.query.get("users") == ["alice"] for r in experiments)
        await pilot.press("u")  # everyone's
        await wait_for(pilot, lambda: "det/exp-13" in rows(app), what="bob's experiment")
        assert "users" not in [r for r in master.requests if r.path == "/api/v1/experiments"][-1].query
        await pilot.press("2")
        await wait_for(pilot, lambda: "agent-a" in screen_text(app), what="agents on the Nodes screen")
    assert PASSWORD not in caplog.text
    assert all(PASSWORD not in repr(r) for r in master.requests)


async def test_x_on_an_experiment_or_a_trial_says_plainly_that_determined_offers_no_shell(master):
    seed(master)
    app = make_app(cluster(master, user="alice"))
    async with app.run_test(size=(160, 40)) as pilot:
        table = await logged_in(pilot, app)
        await pilot.press("e")
        trial = await wait_for(pilot, lambda: next((r for r in rows(app) if "trial-" in r), None), what="trials")

        def said() -> list[tuple[str, str]]:
            return [(str(n.title), str(n.message)) for n in app._notifications if "no shell" in str(n.message)]

        for key in ("det/exp-12", trial):
            table.move_cursor_to_key(key)
            await pilot.press("x")
            await wait_for(pilot, lambda: len(said()) == 1, what=f"the reason for {key}")
            title, message = said()[0]
            assert title == "No shell" and message.startswith("Determined offers no shell into a running trial")
            assert "det shell start" in message and "Traceback" not in message
            app.clear_notifications()
        await pilot.press("enter")  # the detail of the trial: x says the same
        await wait_for(pilot, lambda: type(app.screen).__name__ == "JobDetailScreen", what="the detail")
        await pilot.press("x")
        await wait_for(pilot, lambda: len(said()) == 1, what="the reason in the detail")
