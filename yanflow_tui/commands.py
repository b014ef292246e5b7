"""The command palette: "group: verb" commands that know the current screen and read-only mode."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from textual.command import DiscoveryHit, Hit, Hits, Provider

from yanflow_tui.keys import JOB_VERBS
from yanflow_tui.model import Job

if TYPE_CHECKING:
    from yanflow_tui.app import YanflowApp


@runtime_checkable
class JobCommands(Protocol):
    """A screen with a highlighted job and the job verbs (the Queue): its commands are offered."""

    def selected_job(self) -> Job | None: ...
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None: ...
    def action_open_job(self) -> None: ...
    def action_logs(self) -> None: ...
    def action_cancel(self) -> None: ...
    def action_actions(self) -> None: ...
    def action_toggle_users(self) -> None: ...
    def action_toggle_group(self) -> None: ...
    def action_verb(self, name: str) -> None: ...
    def action_toggle_mark(self) -> None: ...
    def marked_jobs(self) -> list[Job]: ...


Command = tuple[str, str, Callable[[], Any]]


class YanflowCommands(Provider):
    def _commands(self) -> list[Command]:
        app = cast("YanflowApp", self.app)  # the palette of this app only (App.COMMANDS)
        commands: list[Command] = [
            ("queue: show", "The job queue of every cluster", partial(app.action_show, "queue")),
            ("nodes: show", "Nodes and GPUs", partial(app.action_show, "nodes")),
            ("logs: show", "The log pane", partial(app.action_show, "logs")),
            ("clusters: show", "Every cluster's state, errors in full", partial(app.action_show, "clusters")),
            ("cluster: refresh", "Refresh every cluster now", app.action_refresh),
            ("app: help", "Every key on this screen", app.action_help),
            (
                "app: mouse on/off",
                "Capture the mouse, or leave it to the terminal's select and copy",
                app.action_toggle_mouse,
            ),
        ]
        for name, snap in app.hub.snapshots.items():
            if snap.login_user:
                what = f"Log in again as {snap.login_user}" if snap.login_asks else f"Password for {snap.login_user}"
                commands.append((f"cluster: log in to {name}", what, partial(app.ask_login, name)))
            elif snap.terminal_login:
                commands.append(
                    (
                        f"cluster: log in to {name}",
                        "In the terminal (the console steps aside)",
                        partial(app.ask_login, name),
                    )
                )
        for name in app.hub.names:
            if app.hub.backend(name).capabilities.scopes:
                commands.append((f"ctx: {name}", f"Switch {name}'s context", partial(app.ask_scope, name, "context")))
                commands.append(
                    (f"ns: {name}", f"Switch {name}'s namespace", partial(app.ask_scope, name, "namespace"))
                )
        if not app.read_only:
            commands.append(
                ("submit: open", "Submit a job from a spec file or the form", partial(app.action_show, "submit"))
            )
        screen = self.screen
        job = screen.selected_job() if isinstance(screen, JobCommands) else None
        if isinstance(screen, JobCommands) and job is not None:
            commands.append(("job: open", f"Describe job {job.id}", screen.action_open_job))
            commands.append(("job: logs", f"Logs of job {job.id}", screen.action_logs))
            marked = len(screen.marked_jobs())
            which = f"the {marked} marked jobs" if marked else f"job {job.id}"
            commands.append(
                ("job: mark", f"Mark or unmark job {job.id} (verbs act on every marked job)", screen.action_toggle_mark)
            )
            if not app.read_only and screen.check_action("cancel", ()):
                commands.append(("job: cancel", f"Cancel {which}", screen.action_cancel))
            if not app.read_only and screen.check_action("actions", ()):
                commands.append(("job: actions", f"Pause, activate... {which}", screen.action_actions))
            for verb in JOB_VERBS:
                if not app.read_only and screen.check_action("verb", (verb.name,)):
                    commands.append(
                        (f"job: {verb.label.lower()}", f"{verb.label}: {which}", partial(screen.action_verb, verb.name))
                    )
            commands.append(("queue: mine / all users", "Show my jobs or everyone's", screen.action_toggle_users))
            if screen.check_action("toggle_group", ()):
                commands.append(("job: expand", "Expand or collapse the group", screen.action_toggle_group))
        return commands

    async def discover(self) -> Hits:
        for name, help_text, callback in self._commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, text=name, help=help_text)
