"""What a switch between the main screens (``1``-``5``) costs, kept to the new screen's own redraw:
``QuickSwitch`` (on the app) and ``StylesKept`` (on each main screen).

Textual's ``switch_mode`` holds every update back for 50 ms (``delay_update``, to mask a screen being
built) and applies the whole stylesheet again to every widget of the screen it shows
(``ScreenResume.refresh_styles``). For a screen that was shown before, there is nothing to mask and no
style to change: the 50 ms were most of a switch's time in a terminal, and the styles 40 % of its CPU.
Here, such a switch holds updates back only until the screen has handled its ``ScreenResume`` (its
data redrawn, its layout refreshed: then it paints once), and keeps its styles unless what they
depend on app-wide changed while it was hidden. A screen shown for the first time is switched to as
Textual does it."""

from __future__ import annotations

from collections.abc import Callable

from textual import events
from textual.app import App
from textual.screen import Screen
from textual.widget import AwaitMount

SWITCH_BOUND = 0.05  # seconds after which updates go on anyway, as Textual's own delay (a screen that never resumes)


class QuickSwitch(App):
    """The app's side: ``switch_mode`` to a screen shown before holds updates only until it resumed."""

    _modes_shown: set[str]  # the modes whose screen was shown (mounted): set by ``switch_mode``
    _switching_back = False  # inside ``switch_mode`` to such a mode
    _release: Callable[[], None] | None = None  # ends the held updates of the switch in progress

    def switch_mode(self, mode: str) -> AwaitMount:
        shown = self.__dict__.setdefault("_modes_shown", {self.current_mode})
        self._switching_back = mode in shown and mode != self.current_mode
        try:
            return super().switch_mode(mode)
        finally:
            self._switching_back = False
            shown.add(mode)

    def delay_update(self, delay: float = 0.05) -> None:
        if not self._switching_back or not hasattr(self, "_end_batch"):  # (a Textual without it: its own way)
            super().delay_update(delay)
            return
        self._begin_batch()
        released = False

        def release() -> None:
            nonlocal released
            if released:
                return
            released = True
            if self._release is release:
                self._release = None
            self._end_batch()
            if not self._batch_count:
                self.screen.refresh()

        self._release = release
        self.set_timer(SWITCH_BOUND, release, name="switch bound")

    def screen_resumed(self) -> None:
        """The screen switched to has handled its ``ScreenResume``: updates go on (it paints once)."""
        if self._release is not None:
            self._release()


class StylesKept(Screen):
    """A main screen shown again keeps the styles it was hidden with, unless what styles depend on
    app-wide changed meanwhile (``_style_inputs``): a new theme or stylesheet (Textual's CSS update
    count, which ``switch_mode`` brings the screen up to before it resumes), the app's focus, the ANSI
    colour mode. A widget of a hidden screen whose classes or pseudo-classes change is restyled by
    Textual on its own, as on a screen on show. Then it tells the app it has resumed (``QuickSwitch``)."""

    _styled_with: tuple[object, ...] | None = None  # ``_style_inputs`` when it was hidden

    def _style_inputs(self) -> tuple[object, ...] | None:
        """What a screen's styles depend on beyond its own widgets; None: not known (restyled)."""
        app = self.app
        count = getattr(app, "_css_update_count", None)  # (Textual's; without it, always restyled)
        if count is None:
            return None
        return (count, app.theme, app.app_focus, app.ansi_color, app.stylesheet)

    def _on_screen_suspend(self) -> None:
        self._styled_with = self._style_inputs()

    def _on_screen_resume(self, event: events.ScreenResume) -> None:
        inputs = self._style_inputs()
        if inputs is not None and inputs == self._styled_with:
            event.refresh_styles = False  # (read by Screen's own handler, which runs after this one)
        self._styled_with = None
        app = self.app
        if isinstance(app, QuickSwitch):  # after Screen's handler: its layout refreshed, then one paint
            self.call_later(app.screen_resumed)
