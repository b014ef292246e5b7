"""One Logs tab: a followed job's log read from the backend's stream into a bounded ``LogStore``
(plus one store per rank) and shown in ``LogView`` widgets -- whole, filtered to one rank, or split
into one view per rank side by side. Lines are buffered and flushed in batches by the screen."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import HorizontalScroll
from textual.content import Content
from textual.events import DescendantFocus
from textual.widgets import TabPane

from yanflow_tui.hub import error_text
from yanflow_tui.keys import background_turn
from yanflow_tui.logstore import LogStore
from yanflow_tui.model import Job
from yanflow_tui.sanitize import clean
from yanflow_tui.screens.failures import ForwardFailures
from yanflow_tui.screens.widgets.logview import LogView

FLUSH_SECONDS = 0.05  # 20 Hz; a split pane flushes at 10 Hz
YIELD_EVERY = 256  # most lines taken from a backend stream between yields to the event loop, where a key in
# flight holds the reader (before keys did, each hop of a key waited behind one such slice: at 10k jobs 512 gave
# keys 50-90 % more CPU to wait through than 128; but every turn of the loop has its own cost, and at 100k jobs
# 128 halved the throughput, 64 cost a third at 10k)...
STREAM_SLICE = 0.003  # ...or fewer: at most this many CPU seconds of taking lines (long lines, a slow parser)
SLICE_CHECK = 64  # lines taken between two looks at the clock
FLUSH_LINES = 2_048  # most lines one pane takes per flush call (a millisecond or so of work); the screen
# calls again, giving the event loop a turn between calls, while its time budget for the tick lasts. A key in
# flight holds the next call (``keys.background_turn``), so it waits behind one batch at most: 2,048 took 15 %
# less CPU per line than 1,024 (each batch scrolls and repaints the view) for the same CPU per key; 4,096
# another 10 % less, but keys took more
FLUSH_BUDGET = 0.016  # CPU seconds of flushing per tick, all panes together: keys get the loop between batches
MAX_PENDING = 65_536  # lines buffered before the stream waits for flushes to catch up
RANK_KEEP_LINES = 5_000  # in-memory window of each per-rank store (the whole log keeps the default)
SPLIT_VISIBLE = 4  # rank views side by side; more scroll sideways
# A line a run failed on: "error" as a word, a traceback, an exception line (``RuntimeError: ...``,
# ``torch.OutOfMemoryError``, ``Exception: ...``) at the line's start or after a rank prefix (the pane's
# ``rank │ ``, srun's ``0: ``, torchrun's ``[rank1]: ``), CUDA and NCCL errors, a killed process, OOM.
_RANK_PREFIX = r"(?:[^\n│]*│ |\[?rank[ \t]*\d+\]?:[ \t]*|\d+:[ \t]*)?"
ERROR_PATTERN = re.compile(
    r"(?i:\berror\b)|Traceback"
    r"|^[ \t]*" + _RANK_PREFIX + r"(?:[A-Za-z_][\w.]*\.)?(?:[A-Za-z_]\w*)?(?:Error|Exception)\b(?::|$)"
    r"|(?i:\b(?:CUDA|NCCL)[ _]error|\bout of memory\b)|\bKilled\b|\bOOM\b",
    re.MULTILINE,
)


def stream_name(stream: str, streams: tuple[str, ...]) -> str:
    """What a pane following ``stream`` (one of the job's ``streams``) shows: the main log ("") is
    stdout where stderr has a stream of its own, else both merged; any other stream is its name."""
    if stream:
        return stream
    return "stdout" if "stderr" in streams else "merged"


if TYPE_CHECKING:
    from textual import getters

    from yanflow_tui.app import YanflowApp


class LogPane(ForwardFailures, TabPane):
    """One followed job: its stream, its stores (the whole log, and one per rank) and its views."""

    if TYPE_CHECKING:
        app = getters.app(YanflowApp)

    def __init__(self, job: Job, ranked: bool, pane_id: str, stream: str = "", streams: tuple[str, ...] = ()) -> None:
        title = f"{clean(job.cluster)}/{clean(job.id)}"
        if job.name:
            title += f" {clean(job.name)[:24]}"
        if stream:
            title += f" ({clean(stream)})"
        super().__init__(Content(title), id=pane_id)
        self.job = job
        self.stream = stream  # which of the backend's log_streams(job) this pane follows
        self.stream_name = stream_name(stream, streams)
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
        self.notice = ""  # the stream's latest status line (e.g. reconnecting), until the next log line
        self.notice_shown = ""  # what the status line last showed of it
        self.pane_id = pane_id
        self.added: Awaitable[object] | None = None  # mounting this pane (TabbedContent.add_pane)
        self.jump_to: tuple[str, int] | None = None  # (source, line) to show alone and marked once it is here
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

    # -- what the screen (and the benchmarks) read ------------------------------------------------------
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

    @property
    def shown_source(self) -> str | None:
        """The rank the active view shows alone (a rank filter, or a rank's view when split); None: all."""
        store = self.active_view.store
        return next((source for source, own in self.source_stores.items() if own is store), None)

    @property
    def shows(self) -> str:
        """What the active view shows, for the status line: the stream, then which ranks."""
        parts = [self.stream_name]
        source = self.shown_source
        if self.split:
            parts.append(f"{len(self.source_stores)} ranks side by side" + (f", on {source}" if source else ""))
        elif source is not None:
            parts.append(f"only {source}")
        elif self.source_stores:  # a job whose lines carry ranks
            parts.append("all ranks")
        return ", ".join(parts)

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        if isinstance(event.widget, LogView):
            self._last_view = event.widget

    # -- streaming -----------------------------------------------------------------------------------
    async def _stream(self) -> None:
        backend = self.app.hub.backend(self.job.cluster)
        taken = 0
        clock = time.thread_time  # this thread's CPU: a busy machine does not shorten the slices
        since = clock()
        sources, texts = self.pending_sources, self.pending_texts
        try:
            async for line in backend.stream_logs(self.job.id, follow=True, stream=self.stream):
                if line.status:  # the stream's own state ("reconnecting…"): the status line shows it
                    self.notice = clean(line.text)
                    continue
                if self.notice:
                    self.notice = ""
                if sources is not self.pending_sources:  # flushed: new buffers
                    sources, texts = self.pending_sources, self.pending_texts
                sources.append(clean(line.source))
                texts.append(clean(line.text))
                taken += 1
                # A backend that yields many lines without awaiting: let keys in, after YIELD_EVERY
                # lines or STREAM_SLICE seconds, whichever comes first (the clock read every SLICE_CHECK).
                if taken >= YIELD_EVERY or (taken % SLICE_CHECK == 0 and clock() - since >= STREAM_SLICE):
                    taken = 0
                    await background_turn(self.app)  # a key in flight is handled first
                    since = clock()
                    while len(self.pending_texts) >= MAX_PENDING:
                        self._drained.clear()
                        await self._drained.wait()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.error = error_text(exc)
        self.ended = True

    def flush(self, most: int = FLUSH_LINES) -> bool:
        """Move up to ``most`` buffered lines into the stores and views; True if there were any."""
        if not self.pending_texts:
            return False
        if len(self.pending_texts) > most:  # the rest waits for the next call
            sources, texts = self.pending_sources[:most], self.pending_texts[:most]
            del self.pending_sources[:most], self.pending_texts[:most]
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
        if self.jump_to is not None:
            self.try_jump()
        return True

    def try_jump(self) -> bool:
        """Show ``jump_to``'s line (its rank alone, the line marked) once the pane holds it; True then."""
        if self.jump_to is None:
            return False
        source, line = self.jump_to
        store = self.source_stores.get(source) if source else self.store
        if store is None or len(store) <= line:
            return False
        self.jump_to = None
        self.set_source_filter(source or None)
        self.view.mark_line(line)
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
        shown = self.source_stores.get(source) if source is not None else None
        self.source_filter = source if shown is not None else None
        self.view.set_store(shown if shown is not None else self.store)

    def set_split(self, split: bool) -> None:
        """One view per rank side by side (scrolling sideways beyond SPLIT_VISIBLE), or the joined view."""
        if split == self.split or (split and not self.source_stores):
            return
        if split and self.source_filter is not None:  # split shows every rank: the filter goes
            self.source_filter = None
            self.view.set_store(self.store)
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
        view = LogView(
            self.source_stores[source],
            wrap=self.wrap,
            following=self._following,
            pattern=self.pattern,
            classes="rank-view",
        )
        view.border_title = Text(source)
        self.rank_views.mount(view)
        self.rank_views.set_class(len(self.source_stores) > SPLIT_VISIBLE, "-many")

    def focus_view(self) -> None:
        self.active_view.focus()
