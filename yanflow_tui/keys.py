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
- ``JOB_VERBS``: the job verbs beyond cancel (hold, resubmit...) and the Queue keys they are on.
"""

from __future__ import annotations

import sys
from collections import deque
from dataclasses import dataclass
from functools import partial
from typing import Any

from textual import events
from textual.app import App
from textual.dom import DOMNode
from textual.widget import Widget
from textual.widgets import Input, Select

APP_KEYS = ("1", "2", "3", "4", "5", "question_mark", "q", "r")  # app-wide single keys; ctrl+p besides
# The job detail's curve keys, by binding id (remappable with the keymap like every binding).
CURVE_KEYS = {"curves-tag": "c", "curves-x-axis": "w", "curves-smoothing": "m"}
# The Submit screen's "open in $EDITOR" (free in Input and TextArea too, unlike ctrl+e, so it works from a field).
EDITOR_KEYS = {"submit-open-editor": "ctrl+g"}
# Where Textual defines TextArea: ``is_typing`` looks it up there instead of importing it, which would cost
# the first paint ~30 ms (none can be on screen before its module is loaded; a test pins the path).
TEXT_AREA_MODULE = "textual.widgets._text_area"
MAX_HOLD = 5.0  # s a key may wait for the one before it: a handler that never answers holds no key for longer


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

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded:
            if self._waiting_keys is None:
                self._waiting_keys = deque()
            self._waiting_keys.append(event)
            if not self._key_busy:
                await self._deliver_keys()
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
        await self._deliver_keys()


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
    # Offer the backend's ``verb_defaults`` (e.g. the doubled time limit) prefilled before confirming.
    prefill: bool = False


JOB_VERBS = (
    JobVerb("resubmit", "resubmit", "R", "Resubmit", "resubmit-job"),
    JobVerb(
        "resubmit_more",
        "resubmit",
        "M",
        "Resubmit with more time/memory",
        "resubmit-job-more",
        (("more", "yes"),),
        prefill=True,
    ),
    JobVerb("hold", "hold", "h", "Hold", "hold-job"),
    JobVerb("release", "release", "L", "Release", "release-job"),
    JobVerb("requeue", "requeue", "Q", "Requeue", "requeue-job"),
    JobVerb("edit", "edit", "E", "Edit time/partition/QOS", "edit-job"),
    JobVerb("signal", "signal", "k", "Signal", "signal-job"),
)
JOB_VERB = {v.name: v for v in JOB_VERBS}
