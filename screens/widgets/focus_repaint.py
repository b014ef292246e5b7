"""Focus changes that repaint only what they change: ``FocusKeepsScreen`` (a screen) and
``FocusRepaintsLines`` (a widget that keeps what each of its lines drew).

Textual repaints the whole screen when focus moves (``Screen.focused`` is a repainting reactive),
though each widget whose look depends on focus repaints itself. It also repaints a widget whole when
it gains or loses focus: ``Widget._on_focus``/``_on_blur`` call ``refresh()``, and the ``:focus``
styles they apply at once (``has_focus``'s watcher) refresh it again from ``notify_style_update`` and
from its component classes. A table lost focus to the ``/`` box, so every line of the screen was
composed and written out again (about 50 KB at 200x50) when only the cursor's line changed colour
(issue #32).

``FocusRepaintsLines`` runs Textual's own handler with those whole refreshes held, then asks the
widget to repaint the lines that now draw differently (``refresh_changed_lines``). A change of the
frame around the lines (border, outline, padding, tint, opacity) still repaints the whole widget.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from textual import events
from textual.reactive import Reactive
from textual.screen import Screen
from textual.widget import Widget
from typing_extensions import Self  # typing.Self is 3.11+


def _frame(widget: Widget) -> tuple:
    """What Textual draws around and over a widget's lines, from its styles."""
    styles = widget.styles
    return (
        styles.border,
        styles.outline,
        styles.padding,
        styles.tint,
        styles.background_tint,
        styles.opacity,
        styles.text_opacity,
        styles.scrollbar_gutter,
    )


class FocusKeepsScreen(Screen):
    """A screen that is not repainted whole when focus moves: the widgets it moves between repaint
    what their focus changes (Textual's handlers, their ``:focus`` styles)."""

    focused: Reactive[Widget | None] = Reactive(None, repaint=False)


if TYPE_CHECKING:
    _Mixin = Widget
else:  # not a Widget: a Widget base before the widget's own would put Widget's default CSS over its bases'
    _Mixin = object


class FocusRepaintsLines(_Mixin):
    """A mixin for a widget with ``refresh_changed_lines()``: focus and blur repaint only changed lines."""

    _whole_held: bool = False  # within a focus change: a whole repaint asked for is held (``refresh``)
    _whole_asked: bool = False  # ...and one was asked for

    def refresh_changed_lines(self) -> None:
        """Repaint the lines that draw differently from what was painted last (the widget's)."""
        raise NotImplementedError

    def refresh(self, *regions, repaint: bool = True, layout: bool = False, recompose: bool = False) -> Self:
        if self._whole_held and repaint and not regions and not layout and not recompose:
            self._whole_asked = True
            return self
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def render_lines(self, crop):
        if crop.contains_region(self.size.region):
            # drawn whole (a screen painted whole takes none of its widgets' repaints): a repaint it was
            # asked for earlier is done, and must not repaint it whole again with the next line it changes
            repaints = getattr(self, "_repaint_regions", None)
            if repaints is not None:
                repaints.clear()
        return super().render_lines(crop)

    def _restyled(self, textual_handler: Callable[[], None]) -> None:
        frame = _frame(self)
        self._whole_held, self._whole_asked = True, False
        try:
            textual_handler()
        finally:
            self._whole_held = False
        if not self._whole_asked:
            return
        if _frame(self) != frame or not self.size:
            self.refresh()
        else:
            self.refresh_changed_lines()

    def _on_focus(self, event: events.Focus) -> None:
        event.prevent_default()  # Textual's handler runs here, not after this one
        self._restyled(lambda: Widget._on_focus(self, event))

    def _on_blur(self, event: events.Blur) -> None:
        event.prevent_default()
        self._restyled(lambda: Widget._on_blur(self, event))
