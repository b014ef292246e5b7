"""The key footer: Textual's ``Footer`` without its watcher leak."""

from __future__ import annotations

from textual.widgets import Footer as TextualFooter


class Footer(TextualFooter):
    """Textual's Footer without its leak (8.2.8): each recompose binds every new ``FooterKey``'s
    ``compact`` to the footer with ``data_bind``, a watcher kept on the footer that is only dropped
    when ``compact`` changes, which it never does. Every focus change or ``refresh_bindings`` thus
    kept ~19 dead keys (about 20 KB each, with their styles and caches) alive for good. Here the
    watchers of keys no longer mounted are dropped after each recompose."""

    async def recompose(self) -> None:
        await super().recompose()
        self.prune_watchers()

    def prune_watchers(self) -> None:
        watchers = getattr(self, "__watchers", None)  # textual.reactive keeps them under this name
        for bound in (watchers or {}).values():
            bound[:] = [
                (node, callback) for node, callback in bound if node is self or (not node._closing and node.is_attached)
            ]
