"""The Logs screen: follow a job's log live, pause, search with highlight, filter to one rank, and
save to a file.

Lines arrive from the backend's async stream into a buffer and are flushed into the pane in
batches (20 Hz), which keeps keys responsive at high line rates.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from rich.highlighter import Highlighter
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Input, Log, Static

from yanflow_tui.hub import error_text
from yanflow_tui.locations import private_file
from yanflow_tui.model import Job
from yanflow_tui.sanitize import clean
from yanflow_tui.screens.dialogs import ChoiceScreen, PromptScreen
from yanflow_tui.screens.widgets import ClusterBar, DataScreen

FLUSH_SECONDS = 0.05


class SearchHighlighter(Highlighter):
    def __init__(self, term: str = "") -> None:
        self.pattern = re.compile(re.escape(term), re.IGNORECASE) if term else None

    def highlight(self, text: Text) -> None:
        if self.pattern is not None:
            text.highlight_regex(self.pattern, "black on yellow")


class LogView(Log):
    """A ``Log`` that highlights the current search term."""

    def set_search(self, term: str) -> None:
        self.highlighter = SearchHighlighter(term)
        self.highlight = bool(term)
        self.notify_style_update()  # drops cached lines so the highlight shows
        self.refresh()


class LogsScreen(DataScreen):
    TITLE_TEXT = "Logs"
    BINDINGS = [
        Binding("p", "toggle_follow", "Pause/Follow", id="toggle-follow"),
        Binding("slash", "search", "Search", id="search-log"),
        Binding("n", "next_match", "Next", id="next-match"),
        Binding("N", "previous_match", "Previous", id="previous-match"),
        Binding("w", "save", "Save", id="save-log"),
        Binding("f", "rank_filter", "Rank", id="rank-filter"),
        Binding("escape", "close_search", "Close search", show=False, id="close-search"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.job: Job | None = None
        self.lines: list[str] = []  # what the pane shows (after the rank filter)
        self.entries: list[tuple[str, str]] = []  # every line received: (source, text)
        self.sources: dict[str, None] = {}  # ranks/streams seen, in arrival order
        self.source_filter: str | None = None
        self._pending: list[tuple[str, str]] = []
        self.following = True
        self.ended = False
        self.error = ""
        self.term = ""
        self.matches: list[int] = []
        self.match_index = -1

    def compose(self) -> ComposeResult:
        yield ClusterBar()
        yield Static(id="log-status")
        yield Input(placeholder="search (enter: find, n/N: next/previous, escape: close)", id="log-search")
        yield LogView(id="log", highlight=False, auto_scroll=True)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#log-search", Input).display = False
        self.set_interval(FLUSH_SECONDS, self._flush)
        self._update_status()

    def on_screen_resume(self) -> None:
        super().on_screen_resume()
        job = self.app.take_pending_logs()
        if job is not None:
            self.follow(job)

    # -- streaming -------------------------------------------------------------------------------------
    def follow(self, job: Job) -> None:
        """Show ``job``'s log from the start and keep following it."""
        self.job = job
        self.lines, self._pending, self.entries, self.sources = [], [], [], {}
        self.source_filter = None
        self.ended, self.error = False, ""
        self.matches, self.match_index = [], -1
        log = self.query_one(LogView)
        log.clear()
        self.following = True
        log.auto_scroll = True
        self._stream(job)
        self._update_status()
        log.focus()

    @work(exclusive=True, group="log-stream", exit_on_error=False)
    async def _stream(self, job: Job) -> None:
        backend = self.app.hub.backend(job.cluster)
        try:
            async for line in backend.stream_logs(job.id, follow=True):
                self._pending.append((clean(line.source), clean(line.text)))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - shown in the status line
            self.error = error_text(exc)
        self.ended = True
        self._flush()
        self._update_status()

    def _flush(self) -> None:
        if not self._pending or not self.query(LogView):  # nothing new, or torn down at exit
            return
        batch, self._pending = self._pending, []
        self.entries.extend(batch)
        known = len(self.sources)
        for source, _ in batch:
            if source and source not in self.sources:
                self.sources[source] = None
        if len(self.sources) != known:
            self.refresh_bindings()
        self._show(self._visible(batch))
        self._update_status()

    def _visible(self, entries: list[tuple[str, str]]) -> list[str]:
        wanted = self.source_filter
        return [f"{source} │ {text}" if source and wanted is None else text
                for source, text in entries if wanted is None or source == wanted]

    def _show(self, shown: list[str]) -> None:
        self.lines.extend(shown)
        self.query_one(LogView).write_lines(shown)
        if self.term:
            start = len(self.lines) - len(shown)
            needle = self.term.lower()
            self.matches.extend(start + i for i, line in enumerate(shown) if needle in line.lower())

    def _update_status(self) -> None:
        status = self.query_one("#log-status", Static)
        if self.job is None:
            status.update(Text("No job selected: highlight a job in the Queue (1) and press l.", style="dim"))
            return
        out = Text(no_wrap=True, overflow="ellipsis")
        out.append(f"{clean(self.job.cluster)}/{clean(self.job.id)} ", "bold")
        out.append(clean(self.job.name))
        out.append(f"  {len(self.lines)} lines  ")
        if self.source_filter is not None:
            out.append(f"only {self.source_filter}  ", "bold cyan")
        if self.error:
            out.append(f"error: {clean(self.error)}", "bold red")
        elif self.ended:
            out.append("ended", "dim")
        else:
            out.append("following" if self.following else "PAUSED", "green" if self.following else "bold yellow")
        if self.term:
            where = f"{self.match_index + 1}/{len(self.matches)}" if self.matches else "no match"
            out.append(f"  search {self.term!r}: {where}", "cyan")
        status.update(out)

    # -- actions -----------------------------------------------------------------------------------------
    def check_action(self, action: str, parameters) -> bool | None:
        if action in ("next_match", "previous_match"):
            return True if self.matches else None
        if action in ("toggle_follow", "save", "search"):
            return True if self.job is not None else None
        if action == "rank_filter":
            if self.job is None or not self.app.hub.backend(self.job.cluster).capabilities.rank_logs:
                return False
            return True if len(self.sources) > 1 else None
        return True

    def action_toggle_follow(self) -> None:
        self.following = not self.following
        log = self.query_one(LogView)
        log.auto_scroll = self.following
        if self.following:
            log.scroll_end(animate=False)
        self._update_status()

    def action_rank_filter(self) -> None:
        """Show one rank (or stream) only, or all of them again."""
        choices = ["all"] + list(self.sources)

        def chosen(choice: str | None) -> None:
            if choice is not None:
                self.set_source_filter(None if choice == "all" else choice)

        self.app.push_screen(ChoiceScreen("Show the lines of:", choices), chosen)

    def set_source_filter(self, source: str | None) -> None:
        self.source_filter = source
        self.lines, self.matches, self.match_index = [], [], -1
        self.query_one(LogView).clear()
        self._show(self._visible(self.entries))
        self._update_status()
        self.refresh_bindings()

    def action_search(self) -> None:
        box = self.query_one("#log-search", Input)
        box.display = True
        box.focus()

    def action_close_search(self) -> None:
        box = self.query_one("#log-search", Input)
        box.display = False
        self.query_one(LogView).focus()

    @on(Input.Submitted, "#log-search")
    def _search(self, event: Input.Submitted) -> None:
        self.term = event.value.strip()
        needle = self.term.lower()
        self.matches = [i for i, line in enumerate(self.lines) if needle and needle in line.lower()]
        self.match_index = -1
        self.query_one(LogView).set_search(self.term)
        self.query_one("#log-search", Input).display = False
        self.query_one(LogView).focus()
        if self.matches:
            self._jump(1)
        self._update_status()
        self.refresh_bindings()

    def action_next_match(self) -> None:
        self._jump(1)

    def action_previous_match(self) -> None:
        self._jump(-1)

    def _jump(self, step: int) -> None:
        if not self.matches:
            return
        self.match_index = (self.match_index + step) % len(self.matches)
        if self.following:  # looking at a match: stop the tail from scrolling it away
            self.action_toggle_follow()
        log = self.query_one(LogView)
        log.scroll_to(y=max(0, self.matches[self.match_index] - log.size.height // 2), animate=False)
        self._update_status()

    def action_save(self) -> None:
        if self.job is None:
            return
        default = f"{self.job.cluster}-{self.job.id}.log"
        default = re.sub(r"[^A-Za-z0-9._-]", "_", default)

        def chosen(path: str | None) -> None:
            if path:
                self._save(Path(path).expanduser(), list(self.lines))

        self.app.push_screen(PromptScreen("Save the log to:", default), chosen)

    @work(group="save-log", exit_on_error=False)
    async def _save(self, path: Path, lines: list[str]) -> None:
        try:
            await asyncio.to_thread(private_file, path, "".join(f"{line}\n" for line in lines))
        except OSError as exc:
            self.app.report_error("Save failed", f"{path}: {exc.strerror or exc}")
            return
        self.notify(clean(f"saved {len(lines)} lines to {path}"), markup=False)
