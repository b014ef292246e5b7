"""A read-only sweep of the console (issue 28 point 2): every screen, every key bound on it, the detail of
every job with every key bound there (``t``, ``f``, ``l``...), and every command of the palette, each
undone before the next (dialogs closed, the screen shown again). Tests then check what the cluster
received: the Kubernetes emulator's requests against a view-only RBAC role, Slurm's commands."""

from __future__ import annotations

from textual.command import CommandPalette
from textual.screen import ModalScreen
from textual.widgets import Input

from yanflow_tui.commands import YanflowCommands
from yanflow_tui.screens.detail import JobDetailScreen
from yanflow_tui.screens.queue import JobTable

MODES = ("queue", "nodes", "logs", "clusters")
# Never pressed: they end the session (quit), suspend it, or open the palette (swept apart)
SKIPPED_KEYS = {"q", "ctrl+q", "ctrl+c", "ctrl+z", "ctrl+p"}


async def _calm(pilot, app, keep=None) -> None:
    """Close what the last key opened (a dialog, the palette, a focused field) down to ``keep`` (the screen
    the sweep is on; None: the mode's own screen)."""
    for _ in range(6):
        await pilot.pause()
        screen = app.screen
        if keep is not None and screen is keep and not isinstance(app.focused, Input):
            return
        if keep is None and not isinstance(screen, ModalScreen | CommandPalette) and not isinstance(app.focused, Input):
            return
        await pilot.press("escape")


def _keys(app) -> list[str]:
    return [key for key in app.active_bindings if key not in SKIPPED_KEYS and key != "escape"]


async def _show(pilot, app, mode: str) -> None:
    await _calm(pilot, app)
    if app.current_mode != mode:
        await app.switch_mode(mode)
    await pilot.pause()


async def sweep_keys(pilot, app, mode: str) -> list[str]:
    """Every key bound on ``mode``'s screen, each pressed once and undone; the keys pressed."""
    await _show(pilot, app, mode)
    keys = _keys(app)
    for key in keys:
        await pilot.press(key)
        await _show(pilot, app, mode)
    return keys


async def sweep_details(pilot, app, rows: list[str] | None = None) -> list[str]:
    """The detail of every job of the Queue (or of ``rows``: a shared cluster's Queue holds others' too), and
    every key bound in it, each undone; the job keys opened."""
    await _show(pilot, app, "queue")
    opened = []
    for row in rows or list(app.screen.query_one(JobTable).row_keys):
        opened.append(row)
        for key in [None, *await _detail_keys(pilot, app, row)]:
            detail = await _open_detail(pilot, app, row)
            if key is not None:
                await pilot.press(key)
                await pilot.pause(0.2)  # the reads it starts (curves, files...) reach the cluster
            await _calm(pilot, app, keep=detail)
            await _show(pilot, app, "queue")
    return opened


async def _open_detail(pilot, app, row: str) -> JobDetailScreen:
    from waiting import wait_for

    await _show(pilot, app, "queue")
    app.screen.query_one(JobTable).move_cursor_to_key(row)
    await pilot.pause()
    await pilot.press("enter")
    detail = await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen, what="a detail")
    await pilot.pause(0.3)  # its first reads (describe, raw spec, curves) sent
    return detail


async def _detail_keys(pilot, app, row: str) -> list[str]:
    await _open_detail(pilot, app, row)
    keys = _keys(app)
    await _calm(pilot, app)
    return keys


async def sweep_palette(pilot, app) -> list[str]:
    """Every command the palette offers on the Queue (a job highlighted), run through the palette and
    undone; their names."""
    from waiting import wait_for

    await _show(pilot, app, "queue")
    names = [name for name, _, _ in YanflowCommands(app.screen)._commands()]
    for name in names:
        await _show(pilot, app, "queue")
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), what="the palette")
        await pilot.press(*name)
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause(0.3)
    await _show(pilot, app, "queue")
    return names


async def sweep(pilot, app, rows: list[str] | None = None) -> dict[str, list[str]]:
    """The whole read-only sweep (the details of ``rows``, else of every job); what it pressed and ran."""
    done = {mode: await sweep_keys(pilot, app, mode) for mode in MODES}
    done["details"] = await sweep_details(pilot, app, rows)
    done["palette"] = await sweep_palette(pilot, app)
    return done
