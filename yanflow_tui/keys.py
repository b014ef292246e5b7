"""The keyboard model: which widget is typed into, the app-wide keys, and the gate that hands keys
to the UI one at a time.

- A *text field* (``Input``, ``TextArea``, an open ``Select`` list being searched) takes printable
  keys as text. Everywhere else the app-wide keys (``APP_KEYS``) run, on every screen and dialog.
- Escape leaves a text field for the screen's main widget; with nothing to leave it goes back to
  the Queue (the screens' own escape bindings raise ``SkipAction`` when they have nothing to do).
- ``SerialKeys`` delivers a key that may move focus (anything but a character typed into a text
  field) only after the UI has handled the one before: Textual forwards each key to the widget
  focused *when the key is read*, so keys read in one burst would all go to the widget focused
  before the first one (a Tab, an Enter, an Escape) moved the focus.
- ``SerialKeys.keys_in_flight`` says a key is posted and what it changed not painted yet; work that
  streams in the background (a log read at full speed) waits on ``keys_handled`` at its yields
  (``background_turn``), so that the key's hops from widget to widget are not each queued behind a
  slice of that work, nor is its frame (on a busy machine, a process that waits gets the CPU back
  sooner when the frame is due).
- ``JOB_VERBS``: the job verbs beyond cancel (hold, resubmit...) and the Queue keys they are on.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import deque
from dataclasses import dataclass
from functools import partial
from typing import Any

from textual import events
from textual.app import App
from textual.dom import DOMNode
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Select

APP_KEYS = ("1", "2", "3", "4", "5", "question_mark", "q", "r")  # app-wide single keys; ctrl+p besides
# The job detail's curve keys, by binding id (remappable with the keymap like every binding).
CURVE_KEYS = {"curves-tag": "c", "curves-x-axis": "w", "curves-smoothing": "m"}
# The Submit screen's "open in $EDITOR" (free in Input and TextArea too, unlike ctrl+e, so it works from a field).
EDITOR_KEYS = {"submit-open-editor": "ctrl+g"}
# Escape's twin: a key the terminal sends at once, where a lone Escape waits out the escape delay (``escdelay``).
# ``CANCEL_KEY`` does what Escape does on every screen and dialog: leaves or clears a text field, closes a
# pushed screen (emacs's keyboard-quit; ctrl+[ is Escape's own byte, so it is no twin). The Submit screen's
# ctrl+g is its editor key, so a field is left there on ``LEAVE_FIELD_KEY``; its "where soonest" panel closes
# on the key that opened it (ctrl+f). A test holds every Escape binding to a twin.
CANCEL_KEY = "ctrl+g"
LEAVE_FIELD_KEY = "ctrl+n"
# Where Textual defines TextArea: ``is_typing`` looks it up there instead of importing it, which would cost
# the first paint ~30 ms (none can be on screen before its module is loaded; a test pins the path).
TEXT_AREA_MODULE = "textual.widgets._text_area"
MAX_HOLD = 5.0  # s a key may wait for the one before it: a handler that never answers holds no key for longer
KEY_HOLD = 0.1  # s keys in flight may hold background work (``background_turn``) before it goes on beside them


def is_typing(widget: Widget | None) -> bool:
    """Whether printable keys are text for ``widget``: a text field, or an open Select's search."""
    if widget is None:
        return False
    if isinstance(widget, Input):
        return True
    text_area = sys.modules.get(TEXT_AREA_MODULE)
    if text_area is not None and isinstance(widget, text_area.TextArea):
        return not widget.read_only
    node: DOMNode | None = widget
    while node is not None and not isinstance(node, Select):
        node = node.parent
    return isinstance(node, Select) and node.expanded


def key_path(app: App[Any]) -> list[DOMNode]:
    """The nodes a key to the focused widget passes on its way up: the widget, its ancestors, the app."""
    node: DOMNode | None = app.focused or app.screen
    path: list[DOMNode] = []
    while node is not None:
        path.append(node)
        node = node.parent
    return path


class SerialKeys(App[None]):
    """An ``App`` base: keys typed faster than the UI answers reach the widget that has the focus
    once the key before them was handled (its bindings run, the messages it posted along its path,
    e.g. ``Input.Submitted``, handled), never the widget that had it when they were read."""

    _waiting_keys: deque[events.Key] | None = None
    _key_turn = 0
    _key_busy = False
    _keys_unread = 0  # keys posted to the app and not read from its queue yet
    _keys_quiet: asyncio.Event | None = None  # set when no key is in flight (made when first waited on)
    _keys_held_since: float | None = None  # when keys in flight first held a caller of ``keys_handled``
    _keys_painting = 0  # the turn of the last key handled, until the frame after it has painted

    def post_message(self, message: Message) -> bool:
        posted = super().post_message(message)
        if posted and isinstance(message, events.Key) and not message.is_forwarded:  # (forwarded: bubbling back)
            self._keys_unread += 1  # the driver posts from the event loop (``Driver.send_message``)
        return posted

    @property
    def keys_in_flight(self) -> bool:
        """A key was posted and what it changed is not on screen yet: waiting in the app's queue, waiting
        for the one before it, on its way along the focused widget's path, or handled and waiting for the
        next frame (a character typed into a text field: until the app has read it)."""
        return self._keys_unread > 0 or bool(self._waiting_keys) or self._key_busy or bool(self._keys_painting)

    async def keys_handled(self, most: float) -> None:
        """Return once no key is in flight. Keys hold a caller ``most`` seconds at most in all, from the
        first wait while they are in flight until none is: past that it returns at once (after a turn
        of the loop), so that keys that keep coming, or one that is never handled, starve no one."""
        if not self.keys_in_flight:
            return
        now = time.monotonic()
        if self._keys_held_since is None:
            self._keys_held_since = now
        left = self._keys_held_since + most - now
        if left <= 0:
            await asyncio.sleep(0)
            return
        if self._keys_quiet is None:
            self._keys_quiet = asyncio.Event()
        self._keys_quiet.clear()  # (set only while no key is in flight)
        try:
            await asyncio.wait_for(self._keys_quiet.wait(), left)
        except (TimeoutError, asyncio.TimeoutError):
            pass

    def _keys_moved(self) -> None:
        if not self.keys_in_flight:
            self._keys_held_since = None
            if self._keys_quiet is not None:
                self._keys_quiet.set()

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded:
            self._keys_unread = max(0, self._keys_unread - 1)
            if self._waiting_keys is None:
                self._waiting_keys = deque()
            self._waiting_keys.append(event)
            try:
                if not self._key_busy:
                    await self._deliver_keys()
            finally:
                self._keys_moved()
            return
        await super().on_event(event)

    async def _deliver_keys(self) -> None:
        while self._waiting_keys and not self._key_busy:
            event = self._waiting_keys.popleft()
            typing = event.is_printable and is_typing(self.focused)
            path = key_path(self)
            await super().on_event(event)
            if typing:
                continue  # a character for the field that has the focus: it moves nothing
            self._key_busy = True
            self._key_turn += 1
            turn = self._key_turn
            # Twice along the path: the key with its bindings, then what their actions posted; then
            # the screen on show now (a screen switched to focuses its main widget first).
            self._settle(turn, path + path + [None])
            self.set_timer(MAX_HOLD, partial(self._key_done, turn))

    def _settle(self, turn: int, nodes: list[DOMNode | None]) -> None:
        """Follow the key up its path: a callback on each node runs after what is queued there."""
        if turn != self._key_turn:
            return
        while nodes:
            node = nodes[0] if nodes[0] is not None else self.screen
            rest = nodes[1:]
            if node.call_later(self._settle, turn, rest):
                return
            nodes = rest
        self.call_later(self._key_done, turn)

    async def _key_done(self, turn: int) -> None:
        if turn != self._key_turn or not self._key_busy:
            return
        self._key_busy = False
        self._keys_painting = turn  # in flight until what it changed is on screen
        self.call_after_refresh(self._key_painted, turn)
        try:
            await self._deliver_keys()
        finally:
            self._keys_moved()

    def _key_painted(self, turn: int) -> None:
        if self._keys_painting == turn:
            self._keys_painting = 0
            self._keys_moved()


async def background_turn(app: App[Any], most: float | None = None) -> None:
    """A turn of the event loop for work that runs in the background in slices (a log streamed at
    full speed): while a key is in flight it waits until the key is handled (``keys_handled``: at
    most ``most`` seconds, ``KEY_HOLD`` by default), so that the key's hops are not each queued behind
    one of its slices."""
    if isinstance(app, SerialKeys) and app.keys_in_flight:
        await app.keys_handled(KEY_HOLD if most is None else most)
    else:
        await asyncio.sleep(0)


@dataclass(frozen=True)
class JobVerb:
    """A job verb beyond cancel on a key of its own in the Queue (and a "job: ..." palette command):
    the backend verb it runs (one of ``Capabilities.actions``) with fixed arguments, if any."""

    name: str  # the Queue's ``verb(name)`` action
    verb: str  # ``Backend.perform``'s action
    key: str
    label: str
    binding_id: str
    args: tuple[tuple[str, str], ...] = ()
    # For one job, the backend's ``verb_defaults`` (e.g. the doubled time limit, a field's value now)
    # prefilled before confirming.
    prefill: bool = False
    # ...or, before that, the Submit form on the job's file where the backend gives one (``job_files``),
    # to review and submit.
    form: bool = False


JOB_VERBS = (
    JobVerb("resubmit", "resubmit", "R", "Resubmit", "resubmit-job", prefill=True, form=True),
    JobVerb(
        "resubmit_more",
        "resubmit",
        "M",
        "Resubmit with more time/memory",
        "resubmit-job-more",
        (("more", "yes"),),
        prefill=True,
        form=True,
    ),
    JobVerb("hold", "hold", "h", "Hold", "hold-job"),
    JobVerb("release", "release", "L", "Release", "release-job"),
    JobVerb("requeue", "requeue", "Q", "Requeue", "requeue-job"),
    JobVerb("edit", "edit", "E", "Edit time/partition/QOS", "edit-job", prefill=True),
    JobVerb("signal", "signal", "k", "Signal", "signal-job"),
)
JOB_VERB = {v.name: v for v in JOB_VERBS}
