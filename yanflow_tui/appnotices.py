"""What the console says outside its frames, for the app (``YanflowApp`` inherits ``TerminalWords``):
a word when one of my jobs ends (a toast, the bell, a desktop notice; which jobs is ``notices.EndWatch``'s
call) and a copy to the terminal's clipboard (``copy_text``, OSC 52). Each escape sequence
(``termseq``) goes through Textual's driver, whose writer thread sends every write whole: never in
the middle of a frame."""

from __future__ import annotations

import logging

from textual.app import App
from textual.notifications import SeverityLevel

from yanflow_tui.errors import YanflowError
from yanflow_tui.hub import ClusterSnapshot, Hub
from yanflow_tui.model import JobState
from yanflow_tui.notices import EndWatch, ended_text
from yanflow_tui.sanitize import clean
from yanflow_tui.termseq import copy_sequence, desktop_notice, in_tmux

log = logging.getLogger(__name__)
TITLE = "YanFlow"


class TerminalWords(App[None]):
    """The app's bell, desktop notices and clipboard. Needs ``hub`` and ``end_watch`` set by the app."""

    hub: Hub
    end_watch: EndWatch

    def write_sequence(self, sequence: str) -> None:
        """Raw ``sequence`` to the terminal the app draws on (nothing when headless: tests' pilots)."""
        if self.is_headless or self._driver is None:
            return
        try:
            self._driver.write(sequence)
            self._driver.flush()
        except (AssertionError, OSError, ValueError) as exc:  # no writer (the app suspended, or exiting)
            log.info("not written to the terminal: %s", exc)

    def copy_to_clipboard(self, text: str) -> None:
        """As Textual's (its own copies come here too), passed through tmux when inside it."""
        self._clipboard = text
        self.write_sequence(copy_sequence(text, in_tmux()))

    def copy_text(self, text: str, what: str) -> None:
        """Copy ``text`` and say so: ``copied job id: 101`` (a long or multi-line text by ``what`` alone)."""
        self.copy_to_clipboard(text)
        shown = f": {text}" if len(text) <= 80 and "\n" not in text else ""
        self.notify(clean(f"copied {what}{shown}"), timeout=3, markup=False)

    def announce_ends(self, snap: ClusterSnapshot) -> None:
        """The jobs of this refresh that ended, each said once (``notices``)."""
        if not self.end_watch.settings.on:
            return
        try:
            me = self.hub.backend(snap.name).current_user
        except (KeyError, YanflowError):  # a cluster gone from the config
            return
        settings = self.end_watch.settings
        for job in self.end_watch.update(snap, me):
            text = ended_text(job)
            log.info("job ended: %s", text)
            severity: SeverityLevel = "information" if job.state is JobState.COMPLETED else "warning"
            self.notify(clean(text), title="job ended", severity=severity, timeout=10, markup=False)
            if settings.bell:
                self.bell()
            if settings.desktop:
                self.write_sequence(desktop_notice(TITLE, text, in_tmux()))
