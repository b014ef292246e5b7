"""The dialogs before a job verb runs: what the verb needs (a signal from a short list; the field
to edit and its new value), then one confirmation for every job it is for (the highlighted job, or
every marked one). Nothing here touches a backend: ``done(args)`` runs the verb."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from textual.app import App

from yanflow_tui.backends.base import SIGNALS
from yanflow_tui.keys import JobVerb
from yanflow_tui.model import Job
from yanflow_tui.screens.dialogs import ChoiceScreen, ConfirmScreen, PromptScreen

SHOWN_IDS = 6  # ids named in a question about several jobs; the rest are counted
EDIT_FIELDS = {"time limit": "time", "partition": "partition", "QOS": "qos"}
EDIT_HINTS = {"time limit": " (e.g. 30, 01:30:00 or 2-00:00:00)", "partition": "", "QOS": ""}
VALUE_LABELS = {"time": "time limit", "mem": "memory (per node, or per CPU where the job asked so)"}


def targets_text(jobs: Sequence[Job]) -> str:
    """``job 12 (train) on hpc``, or ``3 jobs: hpc/12, hpc/13, hpc/14``."""
    if len(jobs) == 1:
        job = jobs[0]
        return f"job {job.id} ({job.name}) on {job.cluster}"
    named = ", ".join(f"{j.cluster}/{j.id}" for j in jobs[:SHOWN_IDS])
    more = f" and {len(jobs) - SHOWN_IDS} more" if len(jobs) > SHOWN_IDS else ""
    return f"{len(jobs)} jobs: {named}{more}"


def confirm(
    app: App,
    question: str,
    args: dict[str, str],
    done: Callable[[dict[str, str]], None],
    check: Callable[[dict[str, str]], str] | None = None,
) -> None:
    """Ask ``question``; on yes, ``done(args)``. ``check(args)`` first: a problem it names is shown
    instead of the question."""
    problem = check(args) if check is not None else ""
    if problem:
        app.notify(problem, title="Not sent", severity="error", markup=False)
        return

    def answered(yes: bool | None) -> None:
        if yes:
            done(args)

    app.push_screen(ConfirmScreen(question), answered)


def ask(
    app: App,
    verb: JobVerb,
    jobs: Sequence[Job],
    done: Callable[[dict[str, str]], None],
    check: Callable[[dict[str, str]], str] | None = None,
    now: dict[str, str] | None = None,
) -> None:
    """Ask what ``verb`` needs for ``jobs``, check it (``check(args)``: a problem, or ""), confirm once,
    then ``done(args)``. ``now``: the values the job has (``verb_defaults``), prefilled where asked."""
    what = targets_text(jobs)
    if verb.verb == "signal":

        def signal_chosen(signal: str | None) -> None:
            if signal:
                confirm(app, f"Send SIG{signal} to {what}?", {"signal": signal}, done, check)

        app.push_screen(ChoiceScreen(f"Signal for {what}", list(SIGNALS)), signal_chosen)
        return
    if verb.verb == "edit":

        def field_chosen(label: str | None) -> None:
            if not label:
                return

            def value_given(value: str | None) -> None:
                if value:
                    confirm(app, f"Set the {label} of {what} to {value}?", {EDIT_FIELDS[label]: value}, done, check)

            current = (now or {}).get(EDIT_FIELDS[label], "")
            app.push_screen(PromptScreen(f"New {label} for {what}{EDIT_HINTS[label]}", current), value_given)

        app.push_screen(ChoiceScreen(f"Edit {what}", list(EDIT_FIELDS)), field_chosen)
        return
    args = dict(verb.args)
    if args.get("more"):
        question = (
            f"Resubmit {what} with twice the time limit (after a TIMEOUT) or twice the memory (after an OUT_OF_MEMORY)?"
        )
    else:
        question = f"{verb.label} {what}?"
    confirm(app, question, args, done, check)


def ask_values(
    app: App,
    verb: JobVerb,
    job: Job,
    defaults: dict[str, str],
    done: Callable[[dict[str, str]], None],
    check: Callable[[dict[str, str]], str] | None = None,
) -> None:
    """One prompt per value the backend suggested (``verb_defaults``), each prefilled, e.g. the new job's
    time limit doubled after a TIMEOUT; then one confirmation naming them; then ``done(values)``."""
    keys = list(defaults)
    values: dict[str, str] = {}

    def next_prompt() -> None:
        if len(values) == len(keys):
            said = ", ".join(f"{VALUE_LABELS.get(k, k).split(' (')[0]} {v}" for k, v in values.items())
            confirm(app, f"{verb.label.split(' with')[0]} {targets_text([job])} with {said}?", values, done, check)
            return
        key = keys[len(values)]

        def given(value: str | None) -> None:
            if value:
                values[key] = value
                next_prompt()

        label = VALUE_LABELS.get(key, key)
        app.push_screen(PromptScreen(f"{label.capitalize()} for the new job (from job {job.id})", defaults[key]), given)

    next_prompt()
