"""The Clusters screen (``5``): one entry per configured cluster with its kind, health, the age of
its last good refresh, the user it acts as, read-only, its description, and the whole error or note
with its fix (an unknown host key's fingerprint and known_hosts line, a config file:line...). ``l``
logs in to the highlighted cluster when it needs a password; ``c`` / ``n`` switch its context / namespace
where it has them (``capabilities.scopes``). Under the list, my share of the highlighted cluster where it
reports one (``capabilities.share``: fair-share, limits, quotas, pools) and answers now (an
error in the list keeps the room), read again after ``SHARE_AGE``
seconds. The path of the console's own log is at the bottom, for bug reports. Rendering is
``cluster_rows``'s and ``share_rows``'s."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import OptionList, Static

from yanflow_tui.hub import Health, error_text
from yanflow_tui.locations import app_log_path, display_path
from yanflow_tui.sanitize import clean
from yanflow_tui.screens.base import DataScreen
from yanflow_tui.screens.render.cluster_rows import ClusterRow, cluster_row
from yanflow_tui.screens.render.share_rows import share_failed, share_text
from yanflow_tui.screens.widgets.cluster_bar import HEALTH_STYLE, ClusterBar
from yanflow_tui.screens.widgets.footer import Footer
from yanflow_tui.screens.widgets.unchanged import looks, update_static


def row_text(row: ClusterRow, style: str) -> Text:
    """One cluster, as the screen shows it: a heading line, a facts line, then the note in full."""
    out = Text()
    out.append("● ", style)
    out.append(clean(row.name), "bold")
    out.append(f"  {clean(row.kind)}  ")
    out.append(row.health, style)
    facts = " · ".join(f"{clean(label)} {clean(value)}" for label, value in row.about)
    out.append(f"\n  last good refresh {row.last_good} · {facts} · {row.access}", "dim")
    if row.description:
        out.append(f"\n  {clean(row.description)}", "dim")
    for line in row.note.splitlines():
        out.append(f"\n  {clean(line)}", "red" if row.error else "")
    if row.action:
        out.append(f"\n  {row.action}", "bold cyan")
    return out


SHARE_AGE = 60.0  # s before a cluster's share shown is read again
SHARE_TIMEOUT = 25.0


class ClusterList(OptionList):
    """The clusters, one multi-line option each (long errors wrap, nothing is cut)."""


class ClustersScreen(DataScreen):
    TITLE_TEXT = "Clusters"
    CSS_PATH = Path(__file__).parent / "clusters.tcss"
    BINDINGS = [
        Binding("l", "login", "Log in", id="cluster-login"),
        Binding("c", "scope('context')", "Context", id="cluster-context"),
        Binding("n", "scope('namespace')", "Namespace", id="cluster-namespace"),
    ]

    def compose(self) -> ComposeResult:
        yield ClusterBar()
        yield ClusterList(id="clusters")
        yield Static(id="share")
        yield Static(
            Text(f"The console's own log: {display_path(app_log_path())} (more with --debug)", "dim"), id="app-log"
        )
        yield Footer()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shares: dict[str, tuple[float, Text]] = {}  # cluster -> (when read, what it shows)

    def on_mount(self) -> None:
        self.query_one(ClusterList).focus()
        self.refresh_data()
        self._show_share()

    def _show_share(self) -> None:
        """The highlighted cluster's share under the list: hidden where it reports none; read in a worker."""
        name = self.selected_cluster()
        box = self.query_one("#share", Static)
        snap = self.app.hub.snapshots.get(name) if name is not None else None
        if (
            name is None
            or snap is None
            or snap.health is not Health.OK
            or not self.app.hub.backend(name).capabilities.share
        ):
            box.display = False
            return
        kept = self._shares.get(name)
        update_static(box, kept[1] if kept else Text(f"My share of {name}: asking...", "dim"))
        box.display = True
        if kept is None or time.monotonic() - kept[0] > SHARE_AGE:
            self._read_share(name)

    @work(group="share", exit_on_error=False)
    async def _read_share(self, name: str) -> None:
        try:
            shown = share_text(await asyncio.wait_for(self.app.hub.backend(name).share(), SHARE_TIMEOUT))
        except (TimeoutError, asyncio.TimeoutError):
            shown = share_failed(name, f"no answer within {SHARE_TIMEOUT:.0f} s")
        except Exception as exc:
            shown = share_failed(name, error_text(exc))
        self._shares[name] = (time.monotonic(), shown)
        if self.is_mounted and self.selected_cluster() == name:
            self.query_one("#share", Static).update(shown)

    def rows(self) -> list[ClusterRow]:
        app = self.app
        now = app.header_time()  # (as the header's: ages tick at a refresh, so a screen shown again draws alike)
        return [
            cluster_row(snap, now, app.hub.backend(name).about(), app.config.cluster(name).description)
            for name, snap in app.hub.snapshots.items()
        ]

    def refresh_data(self) -> None:
        table = self.query_one(ClusterList)
        snaps = list(self.app.hub.snapshots.values())
        prompts = [row_text(row, HEALTH_STYLE[snap.health]) for row, snap in zip(self.rows(), snaps)]
        if table.option_count != len(prompts):
            highlighted = table.highlighted
            table.set_options(prompts)
            table.highlighted = min(highlighted or 0, len(prompts) - 1) if prompts else None
        else:  # only the rows that draw differently now (each replaced repaints the whole list)
            for index, prompt in enumerate(prompts):
                if looks(prompt) != looks(table.get_option_at_index(index).prompt):
                    table.replace_option_prompt_at_index(index, prompt)
        self.refresh_bar()
        self.refresh_bindings()

    def ages_ticked(self) -> None:
        self.refresh_data()  # (the list's ages are at the header's time)

    def selected_cluster(self) -> str | None:
        table = self.query(ClusterList)
        index = table.first().highlighted if table else None
        names = list(self.app.hub.snapshots)
        return names[index] if index is not None and index < len(names) else None

    def check_action(self, action: str, parameters) -> bool | None:
        if action == "login":
            name = self.selected_cluster()
            return bool(name and self.app.hub.snapshots[name].needs_login) or None
        if action == "scope":
            name = self.selected_cluster()
            return bool(name and self.app.hub.backend(name).capabilities.scopes)
        return True

    @on(OptionList.OptionHighlighted)
    def _highlighted(self) -> None:
        self.refresh_bindings()
        self._show_share()

    @on(OptionList.OptionSelected)
    def _selected(self) -> None:
        self.action_login()

    def action_scope(self, kind: str) -> None:
        name = self.selected_cluster()
        if name and self.app.hub.backend(name).capabilities.scopes:
            self.app.ask_scope(name, kind)

    def action_login(self) -> None:
        name = self.selected_cluster()
        if name and self.app.hub.snapshots[name].needs_login:
            self.app.ask_login(name)
