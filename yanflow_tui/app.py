"""The Textual app: modes for Queue, Nodes, Submit, Logs and Clusters, one refresh worker per cluster,
and the app-wide keys (the keyboard model is in ``yanflow_tui.keys``). Screens own their own
handlers; this module only routes data and modes, and owns the state every screen shares.

Data flow: each cluster's refresh worker awaits ``hub.refresh(name)``; the app publishes the
snapshot on ``snapshots_changed`` (one typed channel), and every ``LiveScreen`` on show redraws
from ``hub.snapshots``. The "mine / all users" view is the app's (``set_all_users``); a job's log
opens with ``open_logs`` (the Logs screen's ``open``). A worker that fails unhandled is said in one
line and its traceback goes to the console's log (``report_failure``).

Logins never block: a cluster that needs a password shows ``login needed``; the prompt opens by
itself at most once per cluster (and not over another dialog), is a dialog under which every screen
keeps redrawing, and opens again only when asked (``l`` on the Clusters screen, or the palette).
A cluster that logs in in the real terminal (``Backend.terminal_login``, e.g. an OpenSSH master) is
never prompted for by itself: the same key suspends the console and runs that login there.
A backend's own questions while it connects (an SSH login's one-time code, a key's passphrase) come
through its ``prompter``: a masked dialog, one at a time, the others queued; a login that asked and
then failed or was cancelled is started again by the same ``l``.

A cluster with ``capabilities.scopes`` switches its context or namespace live (``ask_scope``: the palette's
``ctx`` / ``ns``, or ``c`` / ``n`` on the Clusters screen); the cluster refreshes at once."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path

from textual import events, work
from textual.app import App, ScreenStackError, SuspendNotSupported
from textual.binding import Binding
from textual.command import CommandPalette
from textual.driver import Driver
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.signal import Signal
from textual.worker import Worker, WorkerState

from yanflow_tui import applog, earlykeys, escdelay, keyfiles, snapcache, termlogin
from yanflow_tui.appnotices import TerminalWords
from yanflow_tui.backends import registry
from yanflow_tui.backends.base import SCOPE_ALL
from yanflow_tui.commands import YanflowCommands
from yanflow_tui.config import Config, check_names
from yanflow_tui.earlykeys import HeldKeys
from yanflow_tui.earlypaint import EarlyPaint
from yanflow_tui.errors import SpecError, UIConfigError, YanflowError
from yanflow_tui.hub import ClusterSnapshot, Health, Hub, error_text
from yanflow_tui.idlegpus import IdleTracker, notices
from yanflow_tui.inside import Forwards
from yanflow_tui.keys import SerialKeys, is_typing
from yanflow_tui.model import Job
from yanflow_tui.notices import EndWatch
from yanflow_tui.sanitize import clean
from yanflow_tui.screens.base import DataScreen
from yanflow_tui.screens.queue import QueueScreen
from yanflow_tui.screens.switching import QuickSwitch
from yanflow_tui.screens.widgets.cluster_bar import ClusterBar
from yanflow_tui.speed import Heap, map_big_blocks
from yanflow_tui.tensorboards import TensorBoards
from yanflow_tui.yamldoc import join

HERE = Path(__file__).parent
log = logging.getLogger(__name__)
MUTATING_MODES = {"submit"}


COALESCE_SECONDS = 0.1
# The header's ages (``ClusterBar``) are drawn as of the last refresh, and move on by themselves once a
# minute: between refreshes an idle console writes nothing to the terminal (each write costs an SSH link).
HEADER_TICK_SECONDS = 60.0
AFTER_CHANGE_SECONDS = (1.0, 3.0, 6.0)  # refreshed again after a change, for the nodes it frees
EXIT_GRACE_SECONDS = 5.0
DARK_THEME, LIGHT_THEME = "textual-dark", "textual-light"


def binding_ids() -> set[str]:
    """The registry a ``keymap:`` is checked against: the id of every binding of the app, its
    screens, dialogs and widgets (each class of this package: the app imports only what the first
    screen needs, so every module of ``yanflow_tui.screens`` is imported here)."""
    ids: set[str] = set()
    for cls in _yanflow_classes():  # every module loaded: its classes' bindings count
        ids.update(b.id for b in cls.__dict__.get("BINDINGS", ()) if isinstance(b, Binding) and b.id)
    return ids


READ_ONLY_TWIN = "-read-only"  # a binding's refusal in read-only mode: on the same key, remapped with it


def check_ui_config(config: Config, themes: Iterable[str] | None = None) -> None:
    """The config's ``theme:`` and ``keymap:`` against the app (its ``themes``, Textual's own by
    default; the ids of its bindings), and no ``keymap:`` key taken by another binding of the same
    screen: a ``UIConfigError`` (``file:line: keymap.<id>: ...``) naming the binding that holds it. Run by
    the app at startup and by every headless command alike (only with a theme or a keymap given)."""
    if themes is None:
        from textual.theme import BUILTIN_THEMES

        themes = BUILTIN_THEMES
    problems: list[tuple[str, int, str, str]] = []
    try:
        check_names(config, themes, binding_ids() if config.keymap else ())
    except SpecError as exc:
        problems += exc.problems
    for binding_id, why in keymap_clashes(config.keymap) if config.keymap else ():
        path = join("keymap", binding_id)
        problems.append((config.source, config.lines.get(path, 0), path, why))
    if problems:
        raise UIConfigError(sorted(problems, key=lambda p: p[1]))


def keymap_clashes(keymap: dict[str, str]) -> list[tuple[str, str]]:
    """(binding id, why) for each ``keymap`` entry whose key another binding of the same screen (the
    screen's own, or the app's, which work on every screen) holds once the keymap is applied."""
    app_bindings = _own_bindings(YanflowApp)
    found: dict[str, str] = {}
    for cls in _yanflow_classes():
        if not issubclass(cls, Screen):
            continue
        scope = [*_own_bindings(cls), *app_bindings]
        keys = {id(b): _keys(b, keymap) for b in scope}
        where = getattr(cls, "TITLE_TEXT", "") or cls.__name__.removesuffix("Screen")
        for binding in scope:
            if binding.id not in keymap or binding.id in found:
                continue
            for other in scope:
                if _twin(other.id) == binding.id or other.id == binding.id:
                    continue
                taken = keys[id(binding)] & keys[id(other)]
                if taken:
                    key = sorted(taken)[0]
                    found[binding.id] = (
                        f"key {key!r} is taken by {other.id} ({other.description or other.action}) on the {where}"
                        f" screen; choose another key, or remap {other.id} too"
                    )
                    break
    return list(found.items())


def _twin(binding_id: str | None) -> str:
    """The binding a read-only refusal stands in for (its own id otherwise)."""
    return (binding_id or "").removesuffix(READ_ONLY_TWIN)


def _keys(binding: Binding, keymap: dict[str, str]) -> frozenset[str]:
    keys = keymap.get(_twin(binding.id), binding.key)
    return frozenset(k.strip() for k in keys.split(",") if k.strip())


def _own_bindings(cls: type) -> list[Binding]:
    """The bindings with an id ``cls`` and its bases of this package declare (the nearest wins per id)."""
    out: dict[str, Binding] = {}
    for klass in cls.__mro__:
        if klass.__module__.startswith("yanflow_tui."):
            for b in klass.__dict__.get("BINDINGS", ()):
                if isinstance(b, Binding) and b.id and b.id not in out:
                    out[b.id] = b
    return list(out.values())


def _yanflow_classes() -> list[type]:
    """Every DOM class of this package (each module of ``yanflow_tui.screens`` imported first)."""
    import pkgutil

    from textual.dom import DOMNode

    from yanflow_tui import screens

    for module in pkgutil.walk_packages(screens.__path__, f"{screens.__name__}."):
        importlib.import_module(module.name)
    found: list[type] = []
    todo: list[type] = [DOMNode]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("yanflow_tui."):
            found.append(cls)
    return found


def takeover_driver(early: EarlyPaint | None, keys: HeldKeys | None = None) -> type[Driver]:
    """Textual's Linux driver, starting on the screen ``early`` painted: the terminal's modes it
    restores at exit are the ones from before the paint, and the alternate screen, entered already,
    is not entered again (a second enter would save the cursor of the paint, not the shell's). With
    ``keys``, the keys typed while the paint showed and those the driver reads before the console is
    ready are held there (``earlykeys``) until ``YanflowApp`` says it is ready (``when_ready``). With
    no paint (``early`` None), only the latter: the keys typed before the first frame wait for it."""

    class TakeOver(escdelay.driver()):  # type: ignore[misc]  # (a class made at run time)
        def start_application_mode(self) -> None:
            self._skip_alt = early is not None and early.on_screen
            modes, typed = early.takes_over() if early is not None else (None, [])
            if keys is not None:
                keys.attach(super().process_message)
                keys.add(earlykeys.parse(typed))
            super().start_application_mode()
            if modes is not None:
                self.attrs_before = modes

        def process_message(self, message: Message) -> None:
            if keys is None or not keys.hold(message):
                super().process_message(message)

        def write(self, data: str) -> None:
            if data == ALT_SCREEN and getattr(self, "_skip_alt", False):
                self._skip_alt = False
                return
            super().write(data)

    return TakeOver


ALT_SCREEN = "\x1b[?1049h"


# The first paint imports only the Queue: every other screen and dialog is imported when first shown.
def _screen_from(module: str, name: str) -> Screen:
    """A new ``name`` screen from ``yanflow_tui.screens.<module>``, that module imported when first needed."""
    screen: Screen = getattr(importlib.import_module(f"yanflow_tui.screens.{module}"), name)()
    return screen


class YanflowApp(QuickSwitch, SerialKeys, TerminalWords):
    TITLE = "YanFlow"
    # The first screen's styles are read with the app's: read when it is shown, they would parse every
    # rule again (Textual reparses the whole stylesheet for a screen's own CSS), delaying the first paint.
    CSS_PATH = [HERE / "app.tcss", QueueScreen.CSS_PATH]
    MODES = {
        "queue": QueueScreen,
        "nodes": partial(_screen_from, "nodes", "NodesScreen"),
        "submit": partial(_screen_from, "submit.screen", "SubmitScreen"),
        "logs": partial(_screen_from, "logs.screen", "LogsScreen"),
        "clusters": partial(_screen_from, "clusters", "ClustersScreen"),
    }
    DEFAULT_MODE = "queue"
    COMMANDS = App.COMMANDS | {YanflowCommands}
    # The app-wide keys are priority bindings: they run whatever widget has the focus, except where
    # it takes them as text (check_action); escape is the last resort, after the screen's own.
    BINDINGS = [
        Binding("1", "show('queue')", "Queue", id="show-queue", priority=True),
        Binding("2", "show('nodes')", "Nodes", id="show-nodes", priority=True),
        Binding("3", "show('submit')", "Submit", id="show-submit", priority=True),
        Binding("4", "show('logs')", "Logs", id="show-logs", priority=True),
        Binding("5", "show('clusters')", "Clusters", id="show-clusters", priority=True),
        Binding("r", "refresh", "Refresh", id="refresh", priority=True),
        Binding("ctrl+t", "toggle_theme", "Light/Dark", id="toggle-theme"),
        Binding("f2", "toggle_mouse", "Mouse on/off", show=False, id="toggle-mouse"),
        Binding("question_mark", "help", "Help", id="help", priority=True),
        Binding("q", "quit", "Quit", id="quit", priority=True),
        Binding("3", "refuse('submit')", "Submit (read-only)", show=False, id="show-submit-read-only", priority=True),
        Binding("escape", "back", "Back to the Queue", show=False, id="back"),
    ]
    TYPED_ACTIONS = {"show", "refresh", "help", "quit", "refuse"}  # single-key actions: text while typing

    clock = staticmethod(time.time)  # tests pin it for deterministic snapshots

    def __init__(
        self,
        config: Config,
        hub: Hub | None = None,
        snapshot_file: Path | None = None,
        cache_note: str | None = None,
        driver_class: type[Driver] | None = None,
        when_ready: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(driver_class=driver_class)
        self._when_ready = when_ready  # (the console: keys typed before it was ready, ``takeover_driver``)
        self._header_time: float | None = None  # (``header_time``)
        # a typo is a located error, not ignored (the ids are gathered only when there is a keymap to check)
        check_ui_config(config, self.available_themes)
        self.config = config
        self.hub = hub or Hub(config)
        # Where the last run's snapshot is kept (``snapcache``): shown marked cached until each cluster's
        # first refresh, written again at exit. None (tests): nothing read or kept. ``cache_note``: the
        # caller read it into ``hub`` already (the console, to paint it before Textual: ``earlypaint``).
        self.snapshot_file = snapshot_file
        self.heap = Heap()  # no full GC pass over the jobs while a key waits (yanflow_tui.speed)
        map_big_blocks()  # a refresh's big blocks given back when freed, not kept in the heap (same module)
        self._cache_note = cache_note or ""
        if snapshot_file is not None:  # the console (not a test's app): no GC pass until the first refresh or tick
            self.heap.hold()
            if cache_note is None:
                self._cache_note = snapcache.restore(self.hub, snapshot_file)
        self.read_only = config.read_only or all(c.read_only for c in config.clusters)
        self._wake: dict[str, asyncio.Event] = {}
        # Every refresh's snapshot, to the screens on show (``LiveScreen`` subscribes on mount).
        self.snapshots_changed: Signal[ClusterSnapshot] = Signal(self, "snapshots_changed")
        self._signals: list[int] = []
        self._asked_login: set[str] = set()  # clusters whose prompt opened by itself: never again by itself
        self._asking = asyncio.Lock()  # one backend question on screen at a time; the others wait their turn
        self.all_users = config.all_users  # False: the queue shows my jobs where a cluster knows who I am
        self.mouse_reporting = config.mouse  # the console reads the mouse; off: the terminal's own select/copy
        self.forwards = Forwards()  # port-forwards opened from the detail view, closed at exit
        self.tensorboards = TensorBoards()  # TensorBoards started from the detail view (``t``), stopped at exit
        self.end_watch = EndWatch(config.notify)  # which of my jobs' ends to announce (``appnotices``)
        # Since when each allocated GPU is under the idle threshold, across refreshes: the Queue's and the
        # detail's idle marks read it, and each idle episode is told once (``_track_idle``). Tests set its clock.
        self.idle = IdleTracker(config.idle_gpus)

    # -- lifecycle ---------------------------------------------------------------------------------
    def clear_selection(self) -> None:
        """As Textual's, also before the first screen is on its stack: on Python 3.12+ Textual starts tasks
        eagerly, so the Queue's filter box mounts (and its selection watcher asks for the screen) while
        ``_init_mode`` is still building the stack, and Textual 8 catches only ``NoScreen`` there."""
        try:
            super().clear_selection()
        except ScreenStackError:
            pass

    def on_ready(self) -> None:
        """The first screen is mounted, focused and drawn: the keys typed before go to it now."""
        if self._when_ready is not None:
            self._when_ready()

    def on_mount(self) -> None:
        if self.config.theme:  # checked in __init__
            self.theme = self.config.theme
        if self.config.keymap:  # a key's read-only refusal moves with it
            keymap = dict(self.config.keymap)
            self.set_keymap({**{f"{key}-read-only": keys for key, keys in keymap.items()}, **keymap})
        # the view the queue starts in: backends that filter on the server (Slurm -u, Determined)
        # ask for my jobs only, everyone's only after ``u`` or with ``all_users: true``
        self._tell_all_users()
        for name in self.hub.names:
            self._wake[name] = asyncio.Event()
            self.hub.backend(name).set_change_callback(partial(self.request_refresh, name))
            self.hub.backend(name).set_mutation_callback(partial(self.after_change, name))
            self.hub.backend(name).prompter = partial(self._ask_user, name)
            self.run_worker(
                self._refresh_loop(name),
                name=f"refresh {name}",
                group=f"refresh:{name}",
                exclusive=True,
                exit_on_error=False,
            )
        self.set_interval(1.0, self._tick)
        if self._cache_note:
            self.notify(self._cache_note, severity="warning")
        for note in registry.notes():  # backend plugins left out: the other clusters work
            self.notify(clean(note), title="backend plugin", severity="warning", timeout=12, markup=False)
        loop = asyncio.get_running_loop()
        for sig in keyfiles.EXIT_SIGNALS:
            try:
                loop.add_signal_handler(sig, self._exit_on_signal, sig)
            except (ValueError, RuntimeError, NotImplementedError):  # not the main thread (some tests)
                continue
            self._signals.append(sig)

    def _exit_on_signal(self, signum: int) -> None:
        """SIGHUP (the terminal closed) or SIGTERM: key files go at once, then the app exits as on
        ``q``; if that hangs (a dead terminal), the process ends anyway a few seconds later."""
        keyfiles.remove()
        self.exit(return_code=128 + signum)
        deadline = threading.Timer(EXIT_GRACE_SECONDS, os._exit, (128 + signum,))
        deadline.daemon = True  # a clean exit does not wait for it
        deadline.start()

    async def _replace_screen(self, screen: Screen) -> Screen:
        """Textual's hook for a screen popped or switched away: one removed (not installed, on no
        stack) is garbage the heap's next full collection frees (``Heap.dropped``)."""
        replaced = await super()._replace_screen(screen)
        if not screen.is_attached:
            self.heap.dropped()
        return replaced

    async def on_unmount(self) -> None:
        self.heap.release()
        loop = asyncio.get_running_loop()
        for sig in self._signals:
            loop.remove_signal_handler(sig)
        if self.mouse_reporting and not self.config.mouse:
            self._set_mouse_reporting(False)  # turned on here: Textual only turns off what it turned on
        await self.forwards.close_all()
        await self.tensorboards.stop_all()
        if self.snapshot_file is not None:
            await asyncio.to_thread(snapcache.keep, self.hub, self.snapshot_file, time.time())
        await self.hub.close()

    async def _refresh_loop(self, name: str) -> None:
        """Refresh one cluster forever; one slow or broken cluster never holds back another."""
        wake = self._wake[name]
        while True:
            snapshot = await self.hub.refresh(name)
            self.call_later(self._cluster_updated, snapshot)  # after what the app has queued already
            try:
                await asyncio.wait_for(wake.wait(), self.hub.next_delay(name))
                await asyncio.sleep(COALESCE_SECONDS)  # a burst of pushed changes -> one refresh
            except (TimeoutError, asyncio.TimeoutError):
                pass
            wake.clear()

    def after_change(self, name: str) -> None:
        """A mutating call on cluster ``name`` succeeded (submit, cancel, a verb): its jobs and nodes
        are refreshed at once, and again shortly after (``AFTER_CHANGE_SECONDS``): a scheduler takes
        a moment to free a cancelled job's nodes, which would otherwise show allocated until the
        next node poll."""
        self.request_refresh(name)
        for delay in AFTER_CHANGE_SECONDS:
            self.set_timer(delay, partial(self._refresh_afresh, name))

    def _refresh_afresh(self, name: str) -> None:
        self.hub.backend(name).invalidate()  # its cached nodes too
        self.request_refresh(name)

    def request_refresh(self, name: str | None = None) -> None:
        for cluster, event in self._wake.items():
            if name is None or cluster == name:
                event.set()

    def _cluster_updated(self, snap: ClusterSnapshot) -> None:
        """A cluster's refresh finished (successfully or not): the screens on show redraw (a screen
        still composing draws itself once mounted; one torn down at exit has nothing to redraw)."""
        self._track_idle(snap)
        self.snapshots_changed.publish(snap)
        self.announce_ends(snap)
        self._header_time = self.clock()
        self._redraw_headers()
        self.call_after_refresh(self.heap.settled)  # the new rows are drawn: they are long-lived now
        if snap.login_user and snap.name not in self._asked_login and not self._dialog_open():
            self.ask_login(snap.name)

    def _track_idle(self, snap: ClusterSnapshot) -> None:
        """The idle set after this refresh (once per refresh, never per row), and one notice per job for
        the GPU idle episodes that began with it, for the jobs the console lists (mine, or everyone's)."""
        if snap.cached or snap.health is not Health.OK:  # old readings: the episodes wait for fresh ones
            return
        told = self.idle.update(snap.name, snap.nodes)
        if told:
            listed = {job.id for job in snap.jobs}
            for line in notices((e for e in told if e.job_id in listed), self.idle.rule):
                self.notify(clean(line), title="idle GPUs", severity="warning", timeout=10, markup=False)

    def _dialog_open(self) -> bool:
        screen = self._drawable_screen()
        return screen is None or isinstance(screen, ModalScreen)

    async def _ask_user(self, name: str, question: str, secret: bool) -> str | None:
        """A backend's question while it connects (its ``prompter``): a dialog, masked when ``secret``,
        after any other backend's question has been answered. None when the user cancels."""
        from yanflow_tui.screens.dialogs import PromptScreen

        async with self._asking:
            self._asked_login.add(name)  # a login that asked is never asked again by itself
            answered: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()

            def done(answer: str | None) -> None:
                if not answered.done():
                    answered.set_result(answer)

            screen = PromptScreen(f"{name}: {question}", password=secret)
            self.push_screen(screen, done)
            try:
                answer = await answered
            except asyncio.CancelledError:  # the connect was given up (closing): the dialog goes too
                if screen.is_active:
                    screen.dismiss(None)
                raise
        if answer and secret:
            applog.add_secret(answer)  # whatever a failure says, the log never holds it
        return answer

    def ask_login(self, name: str) -> None:
        """Prompt for the password of a cluster that needs one; it goes to the backend only. The
        other clusters keep refreshing, and the screens under the prompt keep redrawing. A cluster
        that logs in in the terminal does that instead (``_log_in_in_terminal``); a login that asks its
        own questions (``login_asks``) starts again, and asks them."""
        snap = self.hub.snapshots[name]
        user = snap.login_user
        if not user and snap.terminal_login:
            self._log_in_in_terminal(name)
            return
        self._asked_login.add(name)
        if snap.login_asks:
            self._retry_login(name)
            return

        from yanflow_tui.screens.dialogs import PromptScreen

        def answered(password: str | None) -> None:
            if password:
                self._login(name, password)

        self.push_screen(PromptScreen(f"Password for {user} on {name}:", password=True), answered)

    def _log_in_in_terminal(self, name: str) -> None:
        """Hand the terminal to the cluster's own login (the user answers its prompts there), then come
        back and refresh. The event loop waits meanwhile, as Textual's ``suspend`` expects (nothing can
        draw while suspended); every cluster refreshes once it is back, as their data aged meanwhile."""
        try:
            login = self.hub.backend(name).terminal_login()
        except YanflowError as exc:
            self.report_error("Login failed", f"{name}: {error_text(exc)}")
            return
        if login is None:
            return
        try:
            with self.suspend():
                why = termlogin.log_in(login)
        except SuspendNotSupported:
            why = "this console cannot hand over its terminal: log in before starting it"
        if why:
            self.report_error("Login failed", f"{name}: {why} (to try again: 5, then l)")
        else:
            self.notify(clean(f"logged in to {name}"), markup=False)
        self.request_refresh()

    @work(group="login", exit_on_error=False)
    async def _login(self, name: str, password: str) -> None:
        applog.add_secret(password)  # whatever a failure says, the log never holds it
        try:
            await self.hub.call(self.hub.backend(name).login(password))
        except Exception as exc:
            self.report_error("Login failed", f"{name}: {error_text(exc)} (to try again: 5, then l)")
            self.request_refresh(name)
            return
        self.notify(clean(f"logged in to {name}"), markup=False)
        self.request_refresh(name)

    @work(group="login", exit_on_error=False)
    async def _retry_login(self, name: str) -> None:
        backend = self.hub.backend(name)
        try:
            await self.hub.call(backend.retry_login(), backend=backend)
        except Exception as exc:
            self.report_error("Login failed", f"{name}: {error_text(exc)} (to try again: 5, then l)")
            self.request_refresh(name)
            return
        self.notify(clean(f"logged in to {name}"), markup=False)
        self.request_refresh(name)

    def ask_scope(self, name: str, kind: str) -> None:
        """Offer the cluster's scopes of ``kind`` (contexts, namespaces) and switch to the one picked."""
        self._choose_scope(name, kind)

    @work(group="scope", exit_on_error=False)
    async def _choose_scope(self, name: str, kind: str) -> None:
        from yanflow_tui.screens.dialogs import ChoiceScreen

        backend = self.hub.backend(name)
        try:
            choices = await self.hub.call(backend.scopes(kind))
        except Exception as exc:
            self.report_error(f"No {kind} to switch", f"{name}: {error_text(exc)}")
            return
        current = backend.scope(kind)
        labels = {
            (f"all {kind}s" if value == SCOPE_ALL else value) + ("  (now)" if value == current else ""): value
            for value in choices
        }

        def picked(label: str | None) -> None:
            if label is not None and labels[label] != current:
                self._set_scope(name, kind, labels[label])

        values = list(labels.values())
        now = values.index(current) if current in values else 0  # the cursor starts on the one in use
        self.push_screen(ChoiceScreen(f"{kind.capitalize()} of {name}:", list(labels), initial=now), picked)

    @work(group="scope", exit_on_error=False)
    async def _set_scope(self, name: str, kind: str, value: str) -> None:
        try:
            shown = await self.hub.call(self.hub.backend(name).set_scope(kind, value))
        except Exception as exc:
            self.report_error(f"{kind.capitalize()} not switched", f"{name}: {error_text(exc)}")
            return
        self.notify(clean(f"{name}: {shown}"), markup=False)
        self.request_refresh(name)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one handler of failed workers: the app's own, and those of screens and widgets (they
        forward theirs: ``screens.failures``). Every worker runs with ``exit_on_error=False`` and
        handles the failures it expects itself; one that still fails is said in one line, with its
        traceback in the console's log."""
        worker = event.worker
        if event.state is WorkerState.ERROR and worker.error is not None:
            self.report_failure(worker.name or worker.group, worker.error)

    def report_failure(self, what: str, error: BaseException) -> None:
        """An unexpected failure (a bug): one line on the screen, the traceback in the log."""
        log.error("%s failed", what, exc_info=error)
        self.notify(
            clean(f"{what} failed: {error_text(error)} (the traceback is in the log: 5 shows where)"),
            severity="error",
            timeout=8,
            markup=False,
        )

    def _drawable_screen(self) -> Screen | None:
        """The current screen; None at exit, when data may still arrive after the screens are gone."""
        try:
            return self.screen
        except ScreenStackError:
            return None

    def shows(self, screen: Screen) -> bool:
        """Whether ``screen`` is on show: the current one, or one the dialogs over it show through to."""
        return screen in self._drawable_screens()

    def _drawable_screens(self) -> list[Screen]:
        """The current screen and, while dialogs are open, every screen they show through to."""
        try:
            stack = list(self.screen_stack)
        except ScreenStackError:
            return []
        shown: list[Screen] = []
        for screen in reversed(stack):
            shown.append(screen)
            if not isinstance(screen, ModalScreen):
                break
        return shown

    def idle_for(self) -> float:
        """Seconds since the last key: idle work (the Queue's warming) waits while keys come."""
        return self.heap.idle_for()

    def settled(self) -> None:
        """What a screen made (rows, texts) lives on: out of the collector's sight (``speed.Heap``)."""
        self.heap.settled()

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            self.heap.key_pressed()
        await super().on_event(event)

    def header_time(self) -> float:
        """The time the header's ages are drawn at: the last refresh's, or a minute after it when none
        came since (``HEADER_TICK_SECONDS``)."""
        if self._header_time is None:
            self._header_time = self.clock()
        return self._header_time

    def _tick(self) -> None:
        """Every second: the heap's turn; the headers only when their ages are a minute old."""
        self.heap.tick()
        if self._header_time is not None and self.clock() - self._header_time < HEADER_TICK_SECONDS:
            return
        self._header_time = self.clock()
        self._redraw_headers()

    def _redraw_headers(self) -> None:
        for screen in self._drawable_screens():
            for bar in screen.query(ClusterBar):
                bar.redraw()
            if isinstance(screen, DataScreen):
                screen.ages_ticked()

    # -- actions -----------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in self.TYPED_ACTIONS and (is_typing(self.focused) or isinstance(self.screen, CommandPalette)):
            return None  # the key is text for the field being typed in
        if action == "show" and parameters and parameters[0] not in self.MODES:
            return False  # a screen this build does not have (5: Clusters)
        if action == "show" and parameters and parameters[0] in MUTATING_MODES and self.read_only:
            return False
        if action == "refuse":  # a mutating key in read-only mode (hidden, like the key it stands for)
            screen = self.screen
            refused = isinstance(screen, DataScreen) and bool(parameters) and screen.refuses(str(parameters[0]))
            return self.read_only or refused
        return True

    def action_refuse(self, what: str) -> None:
        """Say why a mutating key does nothing: the console or the job's cluster is read-only."""
        where = "--read-only / read_only: true" if self.read_only else "the cluster is read_only: true"
        self.notify(f"read-only: {what} refused ({where})", severity="warning", timeout=4, markup=False)

    def action_show(self, mode: str) -> None:
        """Go to a main screen: a dialog or pushed screen over this one is closed (declined) first."""
        if mode in MUTATING_MODES and self.read_only:
            self.notify("read-only: submitting is disabled", severity="warning", markup=False)
            return
        self._close_pushed()
        if self.current_mode != mode:
            self.switch_mode(mode)
            self._close_pushed()

    def open_in_submit(self, path: str, values: dict[str, str], cluster: str = "") -> None:
        """The Submit form with the job file ``path`` loaded, ``values`` (form texts by field key) set
        over what the file says, for ``cluster``: e.g. a job given back by its cluster with a larger time limit."""
        from yanflow_tui.screens.submit.screen import SubmitScreen  # imported on first show (startup)

        self.action_show("submit")
        screen = self.screen
        if isinstance(screen, SubmitScreen):
            screen.load_file(path, values, cluster)

    async def action_back(self) -> None:
        """Escape with nothing left to leave on this screen: close a pushed screen, or go to the Queue."""
        if isinstance(self.screen, CommandPalette):
            return
        if len(self.screen_stack) > 1:
            self.screen.dismiss()
        elif self.current_mode != "queue":
            self.switch_mode("queue")

    def _close_pushed(self) -> None:
        while len(self.screen_stack) > 1 and not isinstance(self.screen, CommandPalette):
            self.screen.dismiss()

    def action_toggle_mouse(self) -> None:
        """Capture the mouse, or leave it to the terminal (selecting and copying text without a modifier)."""
        self.mouse_reporting = not self.mouse_reporting
        self._set_mouse_reporting(self.mouse_reporting)
        self.notify(
            "mouse: the console's" if self.mouse_reporting else "mouse: the terminal's (select and copy)",
            timeout=2,
            markup=False,
        )

    def _set_mouse_reporting(self, on: bool) -> None:
        """Switch the terminal's mouse reporting (the DEC modes Textual's driver sets) on or off."""
        driver = self._driver  # Textual has no public switch for this after start
        if driver is None or self.is_headless:
            return
        mode = "h" if on else "l"
        driver.write("".join(f"\x1b[?{n}{mode}" for n in (1000, 1003, 1015, 1006)))
        driver.flush()

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
        from yanflow_tui.screens.dialogs import HelpScreen

        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss()
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

    def open_logs(self, job: Job, at: tuple[str, int] | None = None) -> None:
        """Show the Logs screen following ``job``; ``at``: (log source, line) to show, marked, once there
        (the first failure's line in its rank's log)."""
        from yanflow_tui.screens.logs.screen import LogsScreen

        self.switch_mode("logs")  # nothing when it is on already
        logs = self.screen_stack[0]
        if isinstance(logs, LogsScreen):
            logs.open(job, at)

    def set_all_users(self, all_users: bool) -> None:
        """The Queue's view: everyone's jobs, or mine (where a cluster knows who I am). Backends that
        filter on the server are told, and every cluster refreshes."""
        self.all_users = all_users
        self._tell_all_users()
        self.request_refresh()

    def _tell_all_users(self) -> None:
        for name in self.hub.names:
            self.hub.backend(name).set_all_users(self.all_users)

    @contextlib.contextmanager
    def suspend(self) -> Iterator[None]:
        """Textual's ``suspend`` (the terminal handed to a shell, an editor, a login), with the console
        taken back however the block ends. Textual resumes only when the block ends normally: an
        exception in it (a shell whose exec handshake was refused, an editor not found) left the
        terminal in cooked mode with no input read, a console no key could reach. The exception comes
        out after the console is back."""
        failure: BaseException | None = None
        with super().suspend():
            try:
                yield
            except BaseException as exc:  # noqa: B036 -- raised again below, once the console is back
                failure = exc
        if failure is not None:
            raise failure

    def report_error(self, title: str, message: str) -> None:
        self.notify(clean(message), title=title, severity="error", timeout=8, markup=False)
