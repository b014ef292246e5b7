"""The Logs screen: one tab (``LogPane``) per followed job, each reading an endless log into a bounded
``LogStore`` and showing it in ``LogView`` widgets.

Per pane: follow/pause, search with highlight and next/previous, wrap, save, jump to error and
Traceback lines, and, for backends with ``capabilities.rank_logs``, a filter to one rank or a split
view with one view per rank side by side. Lines arrive from the backend's async stream into a
buffer that is flushed into the stores in batches (20 Hz), which keeps keys responsive at high
line rates.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import HorizontalScroll
from textual.content import Content
from textual.events import DescendantFocus
from textual.widgets import Footer, Input, Static, TabbedContent, TabPane

from yanflow_tui.hub import error_text
from yanflow_tui.logstore import LogStore
from yanflow_tui.model import Job
from yanflow_tui.sanitize import clean
from yanflow_tui.screens.dialogs import ChoiceScreen, PromptScreen
from yanflow_tui.screens.logview import LogView
from yanflow_tui.screens.widgets import ClusterBar, DataScreen

FLUSH_SECONDS = 0.05  # 20 Hz; a split pane flushes at 10 Hz
YIELD_EVERY = 512  # lines taken from a backend stream between yields to the event loop
FLUSH_LINES = 16_384  # most lines one pane takes per flush (a bigger batch would stall keys)
MAX_PENDING = 65_536  # lines buffered before the stream waits for flushes to catch up
RANK_KEEP_LINES = 5_000  # in-memory window of each per-rank store (the whole log keeps the default)
SPLIT_VISIBLE = 4  # rank views side by side; more scroll sideways
ERROR_PATTERN = re.compile(r"(?i:\berror\b)|Traceback")


class LogPane(TabPane):
    """One followed job: its stream, its stores (the whole log, and one per rank) and its views."""

    def __init__(self, job: Job, ranked: bool, pane_id: str) -> None:
        title = f"{clean(job.cluster)}/{clean(job.id)}"
        if job.name:
            title += f" {clean(job.name)[:24]}"
        super().__init__(Content(title), id=pane_id)
        self.job = job
        self.ranked = ranked  # lines carry a rank in their source (capabilities.rank_logs)
        self.store = LogStore()  # every line, "rank │ " prefixed where the line has a source
        self.source_stores: dict[str, LogStore] = {}  # ranked only: each rank's own lines
        # Lines received but not yet flushed, as two parallel lists of str: no tuple per line, so the
        # garbage collector has nothing to trace in a buffer that may hold a second's worth of lines.
        self.pending_sources: list[str] = []
        self.pending_texts: list[str] = []
        self.source_filter: str | None = None
        self.split = False
        self.wrap = False
        self.pattern: re.Pattern[str] | None = None
        self.term = ""
        self.ended = False
        self.ended_shown = False  # the status line has said so
        self.error = ""
        self.added = None  # the AwaitComplete of mounting this pane
        self._following = True
        self._drained = asyncio.Event()
        self._last_view: LogView | None = None
        self.view = LogView(self.store, classes="main-view")
        self.rank_views = HorizontalScroll(classes="rank-views")

    def compose(self) -> ComposeResult:
        yield self.view
        yield self.rank_views

    def on_mount(self) -> None:
        self.rank_views.display = False
        self.run_worker(self._stream(), group="log-stream", exit_on_error=False)

    def on_unmount(self) -> None:
        for store in [self.store, *self.source_stores.values()]:
            store.close()

    # -- what tests and benchmarks read --------------------------------------------------------------
    @property
    def sources(self) -> list[str]:
        """Ranks seen so far, in arrival order."""
        return list(self.source_stores)

    @property
    def line_count(self) -> int:
        """Lines received so far (all ranks)."""
        return len(self.store)

    @property
    def views(self) -> list[LogView]:
        """The views on screen: the main one, or one per rank when split."""
        return list(self.rank_views.query(LogView)) if self.split else [self.view]

    @property
    def active_view(self) -> LogView:
        """The focused view of this pane, else the last focused one, else the first."""
        views = self.views
        focused = self.screen.focused if self.is_attached else None
        if isinstance(focused, LogView) and focused in views:
            return focused
        if self._last_view in views:
            return self._last_view
        return views[0] if views else self.view

    @property
    def following(self) -> bool:
        return self.active_view.following

    def text_lines(self, start: int = 0, stop: int | None = None) -> list[str]:
        """Lines [start, stop) of what the active view shows (read from disk where spilled)."""
        return self.active_view.store.slice(start, stop)

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        if isinstance(event.widget, LogView):
            self._last_view = event.widget

    # -- streaming -----------------------------------------------------------------------------------
    async def _stream(self) -> None:
        backend = self.app.hub.backend(self.job.cluster)
        taken = 0
        sources, texts = self.pending_sources, self.pending_texts
        try:
            async for line in backend.stream_logs(self.job.id, follow=True):
                if sources is not self.pending_sources:  # flushed: new buffers
                    sources, texts = self.pending_sources, self.pending_texts
                sources.append(clean(line.source))
                texts.append(clean(line.text))
                taken += 1
                if taken >= YIELD_EVERY:  # a backend that yields many lines without awaiting: let keys in
                    taken = 0
                    await asyncio.sleep(0)
                    while len(self.pending_texts) >= MAX_PENDING:
                        self._drained.clear()
                        await self._drained.wait()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - shown in the status line
            self.error = error_text(exc)
        self.ended = True

    def flush(self) -> bool:
        """Move buffered lines into the stores and views; True if there were any."""
        if not self.pending_texts:
            return False
        if len(self.pending_texts) > FLUSH_LINES:  # the rest waits for the next tick
            sources, texts = self.pending_sources[:FLUSH_LINES], self.pending_texts[:FLUSH_LINES]
            del self.pending_sources[:FLUSH_LINES], self.pending_texts[:FLUSH_LINES]
        else:
            sources, texts = self.pending_sources, self.pending_texts
            self.pending_sources, self.pending_texts = [], []
        if len(self.pending_texts) < MAX_PENDING:
            self._drained.set()
        if any(sources):
            combined = [f"{source} │ {text}" if source else text for source, text in zip(sources, texts)]
        else:
            combined = texts
        self.store.append(combined)
        added = {self.store: combined}
        if self.ranked:
            by_source: dict[str, list[str]] = {}
            for source, text in zip(sources, texts):
                if source:
                    lines = by_source.get(source)
                    if lines is None:
                        lines = by_source[source] = []
                    lines.append(text)
            for source, lines in by_source.items():
                store = self.source_stores.get(source)
                if store is None:
                    store = self.source_stores[source] = LogStore(keep_lines=RANK_KEEP_LINES)
                    if self.split:
                        self._add_rank_view(source)
                store.append(lines)
                added[store] = lines
        for view in self.all_views():
            lines = added.get(view.store)
            if lines is not None:
                view.lines_added(lines)
        return True

    def all_views(self) -> list[LogView]:
        return [self.view, *self.rank_views.query(LogView)]

    # -- pane-wide settings ----------------------------------------------------------------------------
    def set_following(self, following: bool) -> None:
        self._following = following
        for view in self.all_views():
            view.set_following(following)

    def set_wrap(self, wrap: bool) -> None:
        self.wrap = wrap
        for view in self.all_views():
            view.set_wrap(wrap)

    def set_term(self, term: str) -> None:
        """Search every view for ``term`` (plain text, any case); the active view jumps to its first match."""
        self.term = term
        self.pattern = re.compile(re.escape(term), re.IGNORECASE) if term else None
        active = self.active_view
        for view in self.all_views():
            view.set_pattern(self.pattern, jump=view is active)

    def set_source_filter(self, source: str | None) -> None:
        """Show one rank's lines only (unprefixed), or every line again (None)."""
        if self.split:
            self.set_split(False)
        self.source_filter = source if source in self.source_stores else None
        self.view.set_store(self.source_stores[source] if self.source_filter else self.store)

    def set_split(self, split: bool) -> None:
        """One view per rank side by side (scrolling sideways beyond SPLIT_VISIBLE), or the joined view."""
        if split == self.split or (split and not self.source_stores):
            return
        self.split = split
        self.view.display = not split
        self.rank_views.display = split
        if split:
            for source in self.source_stores:
                self._add_rank_view(source)
        else:
            self.rank_views.remove_children()
            self.view.focus()

    def _add_rank_view(self, source: str) -> None:
        view = LogView(self.source_stores[source], wrap=self.wrap, following=self._following, pattern=self.pattern,
                       classes="rank-view")
        view.border_title = Text(source)
        self.rank_views.mount(view)
        self.rank_views.set_class(len(self.source_stores) > SPLIT_VISIBLE, "-many")

    def focus_view(self) -> None:
        self.active_view.focus()


class LogsScreen(DataScreen):
    TITLE_TEXT = "Logs"
    CSS_PATH = Path(__file__).parent / "logs.tcss"
    BINDINGS = [
        Binding("p", "toggle_follow", "Follow/Pause", id="toggle-follow"),
        Binding("slash", "search", "Search", id="search-log"),
        Binding("n", "next_match", "Next", id="next-match"),
        Binding("N", "previous_match", "Prev", id="previous-match"),
        Binding("e", "next_error", "Next error", id="next-error"),
        Binding("z", "toggle_wrap", "Wrap", id="toggle-wrap"),
        Binding("w", "save", "Save", id="save-log"),
        Binding("f", "rank_filter", "Rank", id="rank-filter"),
        Binding("s", "toggle_split", "Split ranks", id="split-ranks"),
        Binding("right_square_bracket", "next_pane", "Next pane", id="next-pane"),
        Binding("x", "close_pane", "Close pane", id="close-pane"),
        Binding("left_square_bracket", "previous_pane", "Prev pane", id="previous-pane"),
        Binding("E", "previous_error", "Prev error", id="previous-error"),
        Binding("escape", "close_search", "Close search", show=False, id="close-search"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.panes: list[LogPane] = []  # in tab order
        self._opened = 0
        self._keys_state: tuple | None = None
        self._ticks = 0

    def compose(self) -> ComposeResult:
        yield ClusterBar()
        yield Static(id="log-status")
        yield Input(placeholder="search (enter: find, n/N: next/previous, escape: close)", id="log-search")
        yield TabbedContent(id="log-panes")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#log-search", Input).display = False
        self.set_interval(FLUSH_SECONDS, self._flush)
        self._update_status()

    def on_screen_resume(self) -> None:
        super().on_screen_resume()
        job = self.app.take_pending_logs()
        if job is not None:
            self.run_worker(self.open_job(job), group="open-log", exit_on_error=False)

    # -- panes -----------------------------------------------------------------------------------------
    @property
    def pane(self) -> LogPane | None:
        """The pane on show."""
        if not self.panes:
            return None
        active = self.query_one(TabbedContent).active
        return next((pane for pane in self.panes if pane.id == active), self.panes[-1])

    async def open_job(self, job: Job) -> LogPane:
        """Show ``job``'s pane, adding it (following its log from the start) if it has none yet."""
        pane = next((p for p in self.panes if (p.job.cluster, p.job.id) == (job.cluster, job.id)), None)
        if pane is None:
            self._opened += 1
            ranked = self.app.hub.backend(job.cluster).capabilities.rank_logs
            pane = LogPane(job, ranked, f"log-pane-{self._opened}")
            self.panes.append(pane)
            pane.added = self.query_one(TabbedContent).add_pane(pane)
        await pane.added
        if pane in self.panes:
            self._activate(pane)
        return pane

    def _activate(self, pane: LogPane) -> None:
        self.query_one(TabbedContent).active = pane.id
        pane.focus_view()
        self._changed()

    async def close_pane(self, pane: LogPane) -> None:
        """Stop following ``pane``'s job and drop its log."""
        if pane not in self.panes:
            return
        index = self.panes.index(pane)
        self.panes.remove(pane)
        await self.query_one(TabbedContent).remove_pane(pane.id)
        if self.panes:
            self._activate(self.panes[min(index, len(self.panes) - 1)])
        else:
            self._changed()

    @on(TabbedContent.TabActivated, "#log-panes")
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if isinstance(event.pane, LogPane) and self.focused not in event.pane.views:
            event.pane.focus_view()
        self._changed()

    @on(LogView.Changed)
    def _view_changed(self, event: LogView.Changed) -> None:
        self._changed()

    def _changed(self) -> None:
        self._update_status()
        self._refresh_keys()

    def _refresh_keys(self) -> None:
        """Refresh the footer only when a key's availability changed: every refresh rebuilds it."""
        pane = self.pane
        state = (pane is not None and pane.ranked, pane is not None and len(pane.source_stores) > 1,
                 pane is not None and bool(pane.active_view.matches), len(self.panes))
        if state != self._keys_state:
            self._keys_state = state
            self.refresh_bindings()

    # -- compatibility: what the active pane shows ------------------------------------------------------
    @property
    def job(self) -> Job | None:
        return self.pane.job if self.pane else None

    @property
    def following(self) -> bool:
        return self.pane.following if self.pane else False

    @property
    def source_filter(self) -> str | None:
        return self.pane.source_filter if self.pane else None

    @property
    def term(self) -> str:
        return self.pane.term if self.pane else ""

    @property
    def matches(self) -> list[int]:
        return list(self.pane.active_view.matches) if self.pane else []

    @property
    def match_index(self) -> int:
        return self.pane.active_view.match_index if self.pane else -1

    def text_lines(self, start: int = 0, stop: int | None = None) -> list[str]:
        """What the active view shows, lines [start, stop); [] without a pane."""
        return self.pane.text_lines(start, stop) if self.pane else []

    def set_source_filter(self, source: str | None) -> None:
        if self.pane:
            self.pane.set_source_filter(source)
            self._changed()

    # -- streaming ---------------------------------------------------------------------------------------
    def _flush(self) -> None:
        if not self.is_mounted:
            return
        changed = False
        self._ticks += 1
        for pane in self.panes:
            # Side-by-side views redraw several screens' worth of lines per flush: flush them at half rate.
            if pane.is_mounted and (not pane.split or self._ticks % 2 == 0):
                known = len(pane.source_stores)
                changed = pane.flush() or changed
                if len(pane.source_stores) != known:
                    self._refresh_keys()
                if pane.ended and not pane.ended_shown:
                    pane.ended_shown = True
                    changed = True
        if changed:
            self._update_status()

    def _update_status(self) -> None:
        status = self.query_one("#log-status", Static)
        pane = self.pane
        if pane is None:
            status.update(Text("No job selected: highlight a job in the Queue (1) and press l.", style="dim"))
            return
        view = pane.active_view
        job = pane.job
        out = Text(no_wrap=True, overflow="ellipsis")
        out.append(f"{clean(job.cluster)}/{clean(job.id)} ", "bold")
        out.append(clean(job.name))
        out.append(f"  {len(view.store)} lines  ")
        if pane.source_filter is not None:
            out.append(f"only {pane.source_filter}  ", "bold cyan")
        if pane.split:
            out.append(f"{len(pane.source_stores)} ranks side by side  ", "cyan")
        if pane.wrap:
            out.append("wrap  ", "cyan")
        if pane.error:
            out.append(f"error: {clean(pane.error)}", "bold red")
        elif not view.following:
            out.append("PAUSED", "bold yellow")
        elif pane.ended:
            out.append("ended", "dim")
        else:
            out.append("following", "green")
        if pane.term:
            if view.scanning:
                where = "searching…"
            elif view.matches:
                more = "+" if view.matches_capped else ""
                where = f"{view.match_index + 1}/{len(view.matches)}{more}"
            else:
                where = "no match"
            out.append(f"  search {pane.term!r}: {where}", "cyan")
        status.update(out)

    # -- actions -----------------------------------------------------------------------------------------
    def check_action(self, action: str, parameters) -> bool | None:
        pane = self.pane
        if action in ("next_match", "previous_match"):
            return True if pane is not None and pane.active_view.matches else None
        if action in ("rank_filter", "toggle_split"):
            if pane is None or not pane.ranked:
                return False
            return True if len(pane.source_stores) > 1 else None
        if action in ("next_pane", "previous_pane"):
            return True if len(self.panes) > 1 else None
        if action in ("toggle_follow", "save", "search", "toggle_wrap", "next_error", "previous_error",
                      "close_pane"):
            return True if pane is not None else None
        return True

    def action_toggle_follow(self) -> None:
        if self.pane:
            self.pane.set_following(not self.pane.following)
            self._changed()

    def action_toggle_wrap(self) -> None:
        if self.pane:
            self.pane.set_wrap(not self.pane.wrap)
            self._changed()

    def action_toggle_split(self) -> None:
        if self.pane:
            self.pane.set_split(not self.pane.split)
            self.pane.focus_view()
            self._changed()

    def action_next_pane(self) -> None:
        self._step_pane(1)

    def action_previous_pane(self) -> None:
        self._step_pane(-1)

    def _step_pane(self, step: int) -> None:
        pane = self.pane
        if pane is None or len(self.panes) < 2:
            return
        self._activate(self.panes[(self.panes.index(pane) + step) % len(self.panes)])

    async def action_close_pane(self) -> None:
        if self.pane:
            await self.close_pane(self.pane)

    def action_rank_filter(self) -> None:
        """Show one rank only, or all of them again."""
        pane = self.pane
        if pane is None:
            return
        choices = ["all"] + pane.sources

        def chosen(choice: str | None) -> None:
            if choice is not None and pane in self.panes:
                pane.set_source_filter(None if choice == "all" else choice)
                self._changed()

        self.app.push_screen(ChoiceScreen("Show the lines of:", choices), chosen)

    def action_search(self) -> None:
        box = self.query_one("#log-search", Input)
        box.display = True
        box.focus()

    def action_close_search(self) -> None:
        self.query_one("#log-search", Input).display = False
        if self.pane:
            self.pane.focus_view()

    @on(Input.Submitted, "#log-search")
    def _search(self, event: Input.Submitted) -> None:
        box = self.query_one("#log-search", Input)
        box.display = False
        if self.pane:
            self.pane.focus_view()
            self.pane.set_term(event.value.strip())
        self._changed()

    def action_next_match(self) -> None:
        self._jump(1)

    def action_previous_match(self) -> None:
        self._jump(-1)

    def _jump(self, step: int) -> None:
        if self.pane:
            self.pane.active_view.jump_match(step)  # looking at a match pauses that view's tail
            self._changed()

    def action_next_error(self) -> None:
        self._jump_error(1)

    def action_previous_error(self) -> None:
        self._jump_error(-1)

    def _jump_error(self, direction: int) -> None:
        """Go to the next (or previous) line saying ``error`` or ``Traceback``, wrapping around once."""
        pane = self.pane
        if pane is None:
            return
        view = pane.active_view
        last = view.error_line
        total = len(view.store)
        if last is None:
            start = 0 if direction > 0 else total - 1
        else:
            start = last + direction

        def found(line: int | None, wrapped: bool = False) -> None:
            if line is None and not wrapped and last is not None:
                restart = 0 if direction > 0 else len(view.store) - 1
                view.find(ERROR_PATTERN, restart, direction, lambda again: found(again, True))
                return
            if line is None:
                self.notify("no line says error or Traceback", timeout=3, markup=False)
                return
            if wrapped:
                self.notify("no more errors: back to the " + ("first" if direction > 0 else "last"),
                            timeout=3, markup=False)
            view.error_line = line
            view.mark_line(line)
            self._changed()

        if total:
            view.find(ERROR_PATTERN, start, direction, found)

    def action_save(self) -> None:
        pane = self.pane
        if pane is None:
            return
        default = f"{pane.job.cluster}-{pane.job.id}.log"
        default = re.sub(r"[^A-Za-z0-9._-]", "_", default)
        store = pane.active_view.store

        def chosen(path: str | None) -> None:
            if path:
                self._save(Path(path).expanduser(), store)

        self.app.push_screen(PromptScreen("Save the log to:", default), chosen)

    @work(group="save-log", exit_on_error=False)
    async def _save(self, path: Path, store: LogStore) -> None:
        """Write the whole log (spilled lines streamed from disk) in a thread: atomic, mode 0600."""
        try:
            count = await asyncio.to_thread(store.write_to, path)
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.app.report_error("Save failed", f"{path}: {reason}")
            return
        self.notify(clean(f"saved {count} lines to {path}"), markup=False)
