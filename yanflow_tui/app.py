"""The Textual app: modes for Queue, Nodes, Submit and Logs, one refresh worker per cluster, and the
app-wide keys. Screens own their own handlers; this module only routes data and modes."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from textual import on, work
from textual.app import App, ScreenStackError
from textual.binding import Binding
from textual.css.query import NoMatches

from yanflow_tui.commands import YanflowCommands
from yanflow_tui.config import Config
from yanflow_tui.hub import Hub, error_text
from yanflow_tui.messages import ClusterUpdated
from yanflow_tui.model import Job
from yanflow_tui.sanitize import clean
from yanflow_tui.screens.dialogs import HelpScreen, PromptScreen
from yanflow_tui.screens.logs import LogsScreen
from yanflow_tui.screens.nodes import NodesScreen
from yanflow_tui.screens.queue import QueueScreen
from yanflow_tui.screens.submit import SubmitScreen
from yanflow_tui.screens.widgets import ClusterBar

HERE = Path(__file__).parent
MUTATING_MODES = {"submit"}


COALESCE_SECONDS = 0.1
DARK_THEME, LIGHT_THEME = "textual-dark", "textual-light"


class YanflowApp(App[None]):
    TITLE = "YanFlow"
    CSS_PATH = [HERE / "app.tcss"]
    MODES = {"queue": QueueScreen, "nodes": NodesScreen, "submit": SubmitScreen, "logs": LogsScreen}
    DEFAULT_MODE = "queue"
    COMMANDS = App.COMMANDS | {YanflowCommands}
    BINDINGS = [
        Binding("1", "show('queue')", "Queue", id="show-queue"),
        Binding("2", "show('nodes')", "Nodes", id="show-nodes"),
        Binding("3", "show('submit')", "Submit", id="show-submit"),
        Binding("4", "show('logs')", "Logs", id="show-logs"),
        Binding("r", "refresh", "Refresh", id="refresh"),
        Binding("ctrl+t", "toggle_theme", "Light/Dark", id="toggle-theme"),
        Binding("question_mark", "help", "Help", id="help"),
        Binding("q", "quit", "Quit", id="quit"),
    ]

    clock = staticmethod(time.time)  # tests pin it for deterministic snapshots

    def __init__(self, config: Config, hub: Hub | None = None) -> None:
        super().__init__()
        self.config = config
        self.hub = hub or Hub(config)
        self.read_only = config.read_only or all(c.read_only for c in config.clusters)
        self._wake: dict[str, asyncio.Event] = {}
        self.pending_logs: Job | None = None
        self._asked_login: set[str] = set()
        self.all_users = config.all_users  # False: the queue shows my jobs where a cluster knows who I am

    # -- lifecycle ---------------------------------------------------------------------------------
    def on_mount(self) -> None:
        if self.config.theme and self.config.theme in self.available_themes:
            self.theme = self.config.theme
        if self.config.keymap:
            self.set_keymap(self.config.keymap)
        for name in self.hub.names:
            self._wake[name] = asyncio.Event()
            self.hub.backend(name).set_change_callback(lambda name=name: self.request_refresh(name))
            # the view the queue starts in: backends that filter on the server (Slurm -u, Determined)
            # ask for my jobs only, everyone's only after ``u`` or with ``all_users: true``
            self.hub.backend(name).set_all_users(self.all_users)
            self.run_worker(self._refresh_loop(name), name=f"refresh {name}", group=f"refresh:{name}",
                            exclusive=True, exit_on_error=False)
        self.set_interval(1.0, self._tick)

    async def on_unmount(self) -> None:
        await self.hub.close()

    async def _refresh_loop(self, name: str) -> None:
        """Refresh one cluster forever; one slow or broken cluster never holds back another."""
        wake = self._wake[name]
        while True:
            snapshot = await self.hub.refresh(name)
            self.post_message(ClusterUpdated(snapshot))
            try:
                await asyncio.wait_for(wake.wait(), self.hub.next_delay(name))
                await asyncio.sleep(COALESCE_SECONDS)  # a burst of pushed changes -> one refresh
            except asyncio.TimeoutError:
                pass
            wake.clear()

    def request_refresh(self, name: str | None = None) -> None:
        for cluster, event in self._wake.items():
            if name is None or cluster == name:
                event.set()

    @on(ClusterUpdated)
    def _cluster_updated(self, message: ClusterUpdated) -> None:
        screen = self._drawable_screen()
        # A screen just switched to may not have composed yet (its own on_mount draws it), and one
        # being torn down at exit has lost its widgets already: neither has anything to redraw.
        refresh_data = getattr(screen, "refresh_data", None)  # DataScreens, and dialogs that show live data
        if refresh_data is not None and screen.is_mounted:
            try:
                refresh_data()
            except NoMatches:
                pass
        self._tick()
        snap = message.snapshot
        if not snap.login_user:  # logged in (or never needed to): a later expiry asks again
            self._asked_login.discard(snap.name)
        elif snap.name not in self._asked_login:
            self.ask_login(snap.name)

    def ask_login(self, name: str) -> None:
        """Prompt for the password of a cluster that needs one; it goes to the backend only."""
        user = self.hub.snapshots[name].login_user
        self._asked_login.add(name)

        def answered(password: str | None) -> None:
            if password:
                self._login(name, password)

        self.push_screen(PromptScreen(f"Password for {user} on {name}:", password=True), answered)

    @work(group="login", exit_on_error=False)
    async def _login(self, name: str, password: str) -> None:
        try:
            await self.hub.call(self.hub.backend(name).login(password))
        except Exception as exc:  # noqa: BLE001 - shown, and the user may try again
            self._asked_login.discard(name)
            self.report_error("Login failed", error_text(exc))
            return
        self.notify(clean(f"logged in to {name}"), markup=False)
        self.request_refresh(name)

    def _drawable_screen(self):
        """The current screen; None at exit, when data may still arrive after the screens are gone."""
        try:
            return self.screen
        except ScreenStackError:
            return None

    def _tick(self) -> None:
        screen = self._drawable_screen()
        for bar in screen.query(ClusterBar) if screen is not None else ():
            bar.refresh()

    # -- actions -----------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "show" and parameters and parameters[0] in MUTATING_MODES and self.read_only:
            return False
        return True

    def action_show(self, mode: str) -> None:
        if mode in MUTATING_MODES and self.read_only:
            self.notify("read-only: submitting is disabled", severity="warning", markup=False)
            return
        if self.current_mode != mode:
            self.switch_mode(mode)

    def action_refresh(self) -> None:
        for name in self.hub.names:
            self.hub.backend(name).invalidate()
        self.request_refresh()
        self.notify("refreshing every cluster", timeout=1.5, markup=False)

    def action_toggle_theme(self) -> None:
        """Switch between the light and the dark theme (the configured one is the starting point)."""
        self.theme = LIGHT_THEME if self.current_theme.dark else DARK_THEME
        self.notify(f"theme: {self.theme}", timeout=1.5, markup=False)

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        rows = []
        seen = set()
        for key, active in self.screen.active_bindings.items():
            binding = active.binding
            if not active.enabled or not binding.description or (binding.id or key) in seen:
                continue
            seen.add(binding.id or key)
            rows.append((self.get_key_display(binding), binding.description, binding.id or ""))
        rows.sort(key=lambda row: not row[2])  # the console's own keys first, then navigation
        self.push_screen(HelpScreen(rows))

    def open_logs(self, job: Job) -> None:
        """Show the Logs screen following ``job``."""
        self.pending_logs = job
        if self.current_mode == "logs" and isinstance(self.screen, LogsScreen):
            self.screen.on_screen_resume()
        else:
            self.switch_mode("logs")

    def take_pending_logs(self) -> Job | None:
        job, self.pending_logs = self.pending_logs, None
        return job

    def report_error(self, title: str, message: str) -> None:
        self.notify(clean(message), title=title, severity="error", timeout=8, markup=False)
