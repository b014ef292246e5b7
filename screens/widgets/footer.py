"""The key footer: Textual's ``Footer``, updated in place where it can be, and without its watcher leak."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from textual.widgets import Footer as TextualFooter
from textual.widgets._footer import FooterKey

from yanflow_tui.keys import is_typing

if TYPE_CHECKING:
    from textual.screen import Screen


class _Shown(NamedTuple):
    """One key as Textual's ``Footer.compose`` would yield it (``sig``: what a mounted key cannot change)."""

    sig: tuple[str, str, str, str, bool]  # key, display, description, action, is the palette key
    enabled: bool
    tooltip: str


def _sig(key: FooterKey) -> tuple[str, str, str, str, bool]:
    return (key.key, key.key_display, key.description, key.action, key.has_class("-command-palette"))


class Footer(TextualFooter):
    """Textual's Footer (8.2.8), with two changes:

    - Speed. Textual recomposes the whole footer on every bindings change: ~19 ``FooterKey`` widgets
      mounted and styled, 100-200 ms with a 10k-job queue on screen, which a cursor key moving onto
      a job with other keys waited behind. Here the keys already mounted are kept: an enabled flag
      or tooltip that changed is set on its key, and keys no longer offered are hidden (and shown
      again when they come back, in the same order). Only a new key, or keys in another order,
      recompose. While a text field has the focus (``keys.is_typing``), the keys it hides (Textual
      leaves out every key the field takes as text) are left as they were: hidden, then shown again
      on leaving the field, they laid the whole screen out again on each ``/`` and each escape (the
      footer is docked under it), a frame after the one that showed the box. Those keys are still text
      in the field.
    - Its leak: each recompose binds every new ``FooterKey``'s ``compact`` to the footer with
      ``data_bind``, a watcher kept on the footer that is only dropped when ``compact`` changes,
      which it never does. Every focus change or ``refresh_bindings`` thus kept ~19 dead keys (about
      20 KB each, with their styles and caches) alive for good. Here the watchers of keys no longer
      mounted are dropped after each recompose."""

    recomposed = 0  # full recomposes (tests check that a mere enable/disable makes none)

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen:
            self.call_after_refresh(self._update_keys)

    async def _update_keys(self) -> None:
        if not self.is_attached:
            return
        wanted = self._wanted()
        if wanted is None or not self._update_in_place(wanted):
            await self.recompose()

    async def recompose(self) -> None:
        self.recomposed += 1
        await super().recompose()
        self.prune_watchers()

    def _wanted(self) -> list[_Shown] | None:
        """The keys ``compose`` would yield now, in order; None when it would group some (a
        binding group of several keys), which only a recompose draws."""
        active = self.screen.active_bindings
        first: dict[str, _Shown] = {}  # one key per action, as compose shows them
        app = self.app
        for _, binding, enabled, tooltip in active.values():
            if not binding.show:
                continue
            if binding.group is not None:
                return None
            if binding.action not in first:
                shown = (binding.key, app.get_key_display(binding), binding.description, binding.action, False)
                first[binding.action] = _Shown(shown, enabled, tooltip)
        out = list(first.values())
        if self.show_command_palette and app.ENABLE_COMMAND_PALETTE:
            palette = active.get(app.COMMAND_PALETTE_BINDING)
            if palette is not None:
                _, binding, enabled, _tooltip = palette
                sig = (binding.key, app.get_key_display(binding), binding.description, binding.action, True)
                out.append(_Shown(sig, enabled, binding.tooltip or binding.description))
        return out

    def _update_in_place(self, wanted: Sequence[_Shown]) -> bool:
        """Show ``wanted`` with the keys mounted (hiding the others); False when they cannot."""
        keys = list(self.children)
        if not wanted or not all(isinstance(key, FooterKey) for key in keys):
            return False
        plan: list[tuple[FooterKey, _Shown | None]] = []
        i = 0
        for key in keys:
            assert isinstance(key, FooterKey)
            if i < len(wanted) and _sig(key) == wanted[i].sig:
                plan.append((key, wanted[i]))
                i += 1
            else:
                plan.append((key, None))
        if i < len(wanted):  # a key that is not mounted, or the order changed
            return False
        typing = is_typing(self.app.focused)
        for key, shown in plan:
            if shown is None:
                if not typing:  # (while typing: left as they were)
                    key.display = False
                continue
            key.display = True
            if key._disabled == shown.enabled:
                key._disabled = not shown.enabled
                key.set_class(not shown.enabled, "-disabled")
            tooltip = shown.tooltip or None
            if key.tooltip != tooltip:
                key.tooltip = tooltip
        return True

    def prune_watchers(self) -> None:
        watchers = getattr(self, "__watchers", None)  # textual.reactive keeps them under this name
        for bound in (watchers or {}).values():
            bound[:] = [
                (node, callback) for node, callback in bound if node is self or (not node._closing and node.is_attached)
            ]
