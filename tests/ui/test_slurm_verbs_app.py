"""Pilot tests of the Queue's job verbs against the REAL loopback Slurm cluster over SSH: space marks
rows (a visible mark, a count in the header) and cancel acts on every marked job after one
confirmation; a verb key (hold) asks, then changes what ``scontrol`` shows; with read-only, every
verb key is refused and no command reaches the cluster."""

from __future__ import annotations

import re
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

from sitehelpers import accounted, site_cluster, site_sbatch, site_slurm
from slurmhelpers import live_state, slurm, ssh_cluster
from textual.widgets import Input
from uihelpers import make_app, prompt_ready, screen_text
from waiting import async_wait_until, wait_for

from yanflow_tui.commands import YanflowCommands
from yanflow_tui.keys import JOB_VERBS
from yanflow_tui.screens.dialogs import ChoiceScreen, ConfirmScreen
from yanflow_tui.screens.models.queueview import MARK
from yanflow_tui.screens.queue import JobTable, QueueScreen
from yanflow_tui.screens.submit.screen import SubmitScreen


def mutations(app) -> list[tuple[str, ...]]:
    """The commands run on the app's cluster that change it (scontrol's reads, e.g. ``show job``, are not)."""
    return [
        argv
        for argv in app.hub.backend(app.hub.names[0]).transport.history
        if argv[0] in ("sbatch", "scancel")
        or (argv[0] == "scontrol" and argv[1] in ("hold", "release", "requeue", "update"))
    ]


def cluster():
    return replace(ssh_cluster(nodes_refresh_seconds=0.5), refresh_seconds=0.5)


def rows(app) -> list[str]:
    return app.screen.query_one(JobTable).row_keys


def sbatch(name: str) -> str:
    out = slurm(
        "sbatch", "--parsable", "-p", "cpu", "--mem=100M", "-o", "/dev/null", "-J", name, "--begin=now+1hour",
        "-t", "00:05:00", "--wrap=sleep 60",
    )  # fmt: skip
    return out.strip().split(";")[0]


def reason(job_id: str) -> str:
    return shown(job_id)["Reason"]


@asynccontextmanager
async def queue_on_new_job(slurm_jobs, name: str, *, read_only: bool = False):
    """The console on the test cluster with the Queue's cursor on a new pending job ``name``: yields
    the pilot, the app and the job's id."""
    c = cluster()
    job_id = slurm_jobs.add(sbatch(name))
    app = make_app(c, read_only=read_only)
    async with app.run_test(size=(160, 45)) as pilot:
        await cursor_on(pilot, app, f"{c.name}/{job_id}")
        yield pilot, app, job_id


async def cursor_on(pilot, app, key: str) -> None:
    """Waits for the job's row, then puts the Queue's cursor on it."""
    await wait_for(pilot, lambda: key in rows(app), what="row")
    app.screen.query_one(JobTable).move_cursor_to_key(key)
    await pilot.pause()


def noted(app) -> list[str]:
    """The messages the app notifies from now on (still shown as before)."""
    notes: list[str] = []
    notify = app.notify
    app.notify = lambda message, *args, **kwargs: (notes.append(message), notify(message, *args, **kwargs))[1]
    return notes


async def palette_names(app) -> list[str]:
    return [hit.text async for hit in YanflowCommands(app.screen).discover()]


async def test_space_marks_three_jobs_and_one_confirmation_cancels_them_all(home, slurm_dir, slurm_jobs):
    c = cluster()
    ids = [slurm_jobs.add(sbatch(f"yf-mark-{i}")) for i in range(3)]
    other = slurm_jobs.add(sbatch("yf-mark-not"))
    app = make_app(c)
    async with app.run_test(size=(160, 45)) as pilot:
        keys = [f"{c.name}/{i}" for i in ids]
        await wait_for(pilot, lambda: set(keys) <= set(rows(app)), what="rows")
        table = app.screen.query_one(JobTable)
        for key in keys:
            table.move_cursor_to_key(key)
            await pilot.pause()
            await pilot.press("space")
        screen = app.screen
        assert isinstance(screen, QueueScreen) and screen.marked == set(keys)
        await wait_for(pilot, lambda: all(MARK in (table.row_text(k) or "") for k in keys), what="marks drawn")
        assert MARK not in (table.row_text(f"{c.name}/{other}") or "")
        await wait_for(pilot, lambda: "3 marked" in screen_text(app), what="the count")
        assert "job: cancel" in await palette_names(app)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirm")
        assert "3 jobs" in screen_text(app)
        await pilot.press("y")
        await async_wait_until(
            lambda: all(live_state(i) in ("CANCELLED", None) for i in ids), 30, "all three cancelled"
        )
        assert isinstance(app.screen, QueueScreen)  # one confirmation, not three
        assert live_state(other) == "PENDING"
        scancels = [a for a in app.hub.backend(c.name).transport.history if a[0] == "scancel"]
        assert sorted(a[-1] for a in scancels) == sorted(ids)
        await wait_for(pilot, lambda: not screen.marked, what="marks cleared")


async def test_hold_key_confirms_then_holds_and_release_lets_it_go(home, slurm_dir, slurm_jobs):
    async with queue_on_new_job(slurm_jobs, "yf-ui-hold") as (pilot, app, job_id):
        assert "job: hold" in await palette_names(app)
        await pilot.press("h")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirm")
        assert f"Hold job {job_id}" in screen_text(app)
        await pilot.press("y")
        await async_wait_until(lambda: reason(job_id).startswith("JobHeld"), 20, "held")
        await wait_for(pilot, lambda: isinstance(app.screen, QueueScreen), what="back")
        await pilot.press("L")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirm release")
        await pilot.press("y")
        await async_wait_until(lambda: not reason(job_id).startswith("JobHeld"), 20, "released")


async def test_signal_key_offers_the_short_list(home, slurm_dir, slurm_jobs):
    async with queue_on_new_job(slurm_jobs, "yf-ui-signal") as (pilot, app, job_id):
        await pilot.press("k")
        choice = await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen) and app.screen, what="signals")
        assert choice.choices[:2] == ["TERM", "INT"] and "KILL" in choice.choices
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, QueueScreen), what="back")
        assert mutations(app) == []


async def test_read_only_refuses_every_verb_key_and_runs_nothing(home, slurm_dir, slurm_jobs):
    async with queue_on_new_job(slurm_jobs, "yf-ui-ro", read_only=True) as (pilot, app, job_id):
        notes = noted(app)
        await pilot.press("space")  # marking is not a change: it works read-only too
        names = await palette_names(app)
        for verb in JOB_VERBS:
            assert f"job: {verb.label.lower()}" not in names
            await pilot.press(verb.key)
            await wait_for(
                pilot, lambda v=verb: any(f"read-only: {v.verb} refused" in n for n in notes), what=verb.name
            )
            assert isinstance(app.screen, QueueScreen)
        await pilot.press("c")
        await wait_for(pilot, lambda: any("read-only: cancel refused" in n for n in notes), what="cancel")
        assert mutations(app) == []
        assert reason(job_id) == "BeginTime"


def shown(job_id: str) -> dict[str, str]:
    return dict(re.findall(r"(\S+?)=(\S*)", slurm("scontrol", "-o", "show", "job", job_id)))


async def test_edit_key_asks_the_field_and_value_then_scontrol_shows_it(home, slurm_dir, slurm_jobs):
    async with queue_on_new_job(slurm_jobs, "yf-ui-edit") as (pilot, app, job_id):
        notes = noted(app)

        async def edit_time(value: str) -> None:
            await pilot.press("E")
            await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen), what="fields")
            await pilot.press("enter")  # the first: time limit
            prompt = await wait_for(pilot, lambda: prompt_ready(app), what="prompt")
            assert prompt.query_one(Input).value == shown(job_id)["TimeLimit"]  # the time limit now, to change
            await pilot.press(*value, "enter")  # (typed over it: the prefilled text is selected)

        await edit_time("soon")  # checked before the confirmation: said, and nothing is asked or sent
        await wait_for(pilot, lambda: any("not a Slurm time limit: 'soon'" in n for n in notes), what="the problem")
        assert isinstance(app.screen, QueueScreen) and mutations(app) == []
        await edit_time("00:13:00")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirm")
        assert f"Set the time limit of job {job_id}" in screen_text(app)
        await pilot.press("y")
        await async_wait_until(lambda: shown(job_id)["TimeLimit"] == "00:13:00", 20, "edited")


async def test_two_marked_jobs_are_held_after_one_confirmation(home, slurm_dir, slurm_jobs):
    c = cluster()
    ids = [slurm_jobs.add(sbatch(f"yf-ui-hold2-{i}")) for i in range(2)]
    app = make_app(c)
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_for(pilot, lambda: {f"{c.name}/{i}" for i in ids} <= set(rows(app)), what="rows")
        table = app.screen.query_one(JobTable)
        for job_id in ids:
            table.move_cursor_to_key(f"{c.name}/{job_id}")
            await pilot.pause()
            await pilot.press("space")
        await pilot.press("h")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirm")
        assert "Hold 2 jobs" in screen_text(app)
        await pilot.press("y")
        await async_wait_until(lambda: all(shown(i)["Reason"].startswith("JobHeld") for i in ids), 20, "both held")
        assert isinstance(app.screen, QueueScreen)


async def test_more_after_a_timeout_opens_the_form_with_the_doubled_time_then_submits_it(home, site_dir, site_jobs):
    """On the site cluster (accounting, scripts stored, jobs purged 5 s after they end): the job is known
    only to sacct by then, so its options and its script come from accounting. ``M`` opens the Submit
    form on the job's script (its options as #SBATCH lines, in a private file) with the time doubled;
    Submit sends it, the doubled time as an override, the body unchanged."""
    job_id = site_sbatch(
        site_jobs, "-p", "batch", "--mem=100M", "-o", "/dev/null", "-J", "yf-ui-timeout", "-t", "1", "--wrap=sleep 300"
    )
    await async_wait_until(
        lambda: (a := accounted(job_id)) and a["state"]["current"] == "TIMEOUT", 180, "timed out, in accounting"
    )
    app = make_app(site_cluster())
    async with app.run_test(size=(160, 60)) as pilot:
        name = app.hub.names[0]
        key = f"{name}/{job_id}"
        await cursor_on(pilot, app, key)
        await pilot.press("M")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, SubmitScreen) and app.screen, what="the form")
        shown = lambda wid: next((box.value for box in screen.query(f"#{wid}").results(Input)), None)  # noqa: E731
        await wait_for(pilot, lambda: shown("slurm-time") == "00:02:00", what="the doubled time")  # 1 minute, doubled
        assert screen.query_one("#name", Input).value == "yf-ui-timeout"
        assert screen.query_one("#memory", Input).value == "100M"
        mode, written = mode_and_text(Path(screen.query_one("#spec-path", Input).value))
        assert mode == 0o600
        assert written.startswith("#!") and "#SBATCH --job-name=yf-ui-timeout\n" in written
        assert "#SBATCH --time=1\n" in written and written.rstrip().endswith("sleep 300")
        preview = await wait_for(
            pilot,
            lambda: (p := str(screen.query_one("#preview").render())).startswith("# sbatch") and p,
            what="preview",
        )
        assert "--time=00:02:00" in preview.split("\n", 1)[0]  # the form's change, over the script's line
        await pilot.press("ctrl+s")
        _, new = await wait_for(pilot, lambda: screen.last_submitted, what="submitted")
        site_jobs.append(new)
        fields = dict(re.findall(r"(\S+?)=(\S*)", site_slurm("scontrol", "-o", "show", "job", new)))
        assert fields["TimeLimit"] == "00:02:00" and fields["MinMemoryNode"] == "100M"
        assert fields["JobName"] == "yf-ui-timeout"
        script = site_slurm("scontrol", "write", "batch_script", new, "-")
        assert script == written  # the script as the form loaded it: our lines, then the body unchanged


def mode_and_text(path: Path) -> tuple[int, str]:
    return path.stat().st_mode & 0o777, path.read_text()


def site_job_named(name: str, other_than: str) -> str:
    out = site_slurm("squeue", "-h", "-a", "-t", "all", "-o", "%i|%j")
    found = [i for i, n in (line.split("|", 1) for line in out.splitlines()) if n == name and i != other_than]
    return found[0] if found else ""


async def test_more_on_a_pending_job_says_what_it_is_for_and_does_nothing(home, slurm_dir, slurm_jobs):
    """M on a PENDING job: M is for jobs that ended by TIMEOUT or OUT_OF_MEMORY; nothing opens or runs."""
    async with queue_on_new_job(slurm_jobs, "yf-ui-more-pending") as (pilot, app, job_id):
        errors: list[str] = []
        report = app.report_error
        app.report_error = lambda title, text, *a, **k: (errors.append(text), report(title, text, *a, **k))[1]
        await pilot.press("M")
        said = await wait_for(pilot, lambda: errors and errors[-1], what="the refusal")
        assert "ended PENDING" not in said
        assert f"job {job_id} is PENDING: nothing done" in said and "only for a job that ended by TIMEOUT" in said
        assert isinstance(app.screen, QueueScreen) and mutations(app) == []


async def test_resubmit_opens_the_submit_form_on_the_jobs_script_to_review(home, slurm_dir, slurm_jobs):
    """R, as the README says: the Submit form on the job's script (its options as #SBATCH lines), nothing
    sent until Submit."""
    async with queue_on_new_job(slurm_jobs, "yf-ui-resubmit") as (pilot, app, job_id):
        await pilot.press("R")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, SubmitScreen) and app.screen, what="the form")
        name = lambda: next((box.value for box in screen.query("#name").results(Input)), None)  # noqa: E731
        await wait_for(pilot, lambda: name() == "yf-ui-resubmit", what="the job's script loaded")
        mode, written = mode_and_text(Path(screen.query_one("#spec-path", Input).value))
        assert mode == 0o600 and "#SBATCH --job-name=yf-ui-resubmit\n" in written
        assert not [argv for argv in mutations(app) if argv[0] == "sbatch"]  # to review first


async def test_edit_prompts_are_filled_with_the_jobs_values_now(home, slurm_dir, slurm_jobs):
    """E: the time limit, partition and QOS prompts each start from what the job has now (00:05:00, cpu)."""
    async with queue_on_new_job(slurm_jobs, "yf-ui-edit-now") as (pilot, app, job_id):
        now = shown(job_id)
        assert (now["TimeLimit"], now["Partition"]) == ("00:05:00", "cpu")
        qos = "" if now["QOS"] == "(null)" else now["QOS"]  # none without accounting: an empty prompt
        for downs, expected in ((0, now["TimeLimit"]), (1, now["Partition"]), (2, qos)):
            await pilot.press("E")
            await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen), what="fields")
            await pilot.press(*["down"] * downs, "enter")
            prompt = await wait_for(pilot, lambda: prompt_ready(app), what="prompt")
            assert prompt.query_one(Input).value == expected
            await pilot.press("escape")
            await wait_for(pilot, lambda: isinstance(app.screen, QueueScreen), what="back on the Queue")
        assert mutations(app) == []
