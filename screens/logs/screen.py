"""The Logs screen: one tab (``LogPane``) per followed job, each reading an endless log into a bounded
``LogStore`` and showing it in ``LogView`` widgets.

Per pane: follow/pause, search with highlight and next/previous, wrap, save, jump to error and
Traceback lines, and, for backends with ``capabilities.rank_logs``, a filter to one rank or a split
view with one view per rank side by side. Lines arrive from the backend's async stream into a
buffer that is flushed into the stores in batches (20 Hz), which keeps keys responsive at high
line rates; a key in flight holds both the reading and the flushing until its frame is painted
(``keys.background_turn``).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Input, TabbedContent

from yanflow_tui.keys import CANCEL_KEY, background_turn
from yanflow_tui.locations import safe_filename
from yanflow_tui.logstore import LogStore
from yanflow_tui.model import Job
from yanflow_tui.sanitize import clean
from yanflow_tui.screens.base import DataScreen
from yanflow_tui.screens.dialogs import ChoiceScreen, ConfirmScreen, PromptScreen
from yanflow_tui.screens.logs.pane import ERROR_PATTERN, FLUSH_BUDGET, FLUSH_SECONDS, LogPane
from yanflow_tui.screens.widgets.cluster_bar import ClusterBar
from yanflow_tui.screens.widgets.footer import Footer
from yanflow_tui.screens.widgets.logview import LogView
from yanflow_tui.screens.widgets.status_line import StatusLine


class LogsScreen(DataScreen):
    TITLE_TEXT = "Logs"
    CSS_PATH = Path(__file__).parent / "logs.tcss"
    AUTO_FOCUS = "LogView"  # the main widget; with no pane, nothing (keys go to the screen's bindings)
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
        Binding("y", "copy_lines", "Copy lines", show=False, id="copy-log-lines"),
        Binding("escape", "close_search", "Close search", show=False, id="close-search"),
        Binding(CANCEL_KEY, "close_search", "Close search", show=False, id="close-search-alt"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.panes: list[LogPane] = []  # in tab order
        self._to_open: Job | None = None  # asked for before the screen was on show: opened when it is
        self._open_at: tuple[str, int] | None = None  # with it, the line to show (``open``)
        self._opened = 0
        self._keys_state: tuple | None = None
        self._ticks = 0

    def compose(self) -> ComposeResult:
        yield ClusterBar()
        yield StatusLine(id="log-status")
        search = Input(placeholder="search (enter: find, n/N: next/previous, escape: close)", id="log-search")
        search.display = False  # hidden from the start: a hidden box must never take the focus (and the keys)
        yield search
        yield TabbedContent(id="log-panes")
        yield Footer()

    def on_mount(self) -> None:
        self.set_interval(FLUSH_SECONDS, self._flush)
        self._update_status()

    def on_screen_resume(self) -> None:
        super().on_screen_resume()
        self._open_asked()

    # -- panes -----------------------------------------------------------------------------------------
    def open(self, job: Job, at: tuple[str, int] | None = None) -> None:
        """Follow ``job``'s log: its pane comes to the front, added first if it has none. Asked
        before the screen is on show (the app switches to it), it opens once the screen is. ``at``:
        (source, line) to show alone and marked once that line has arrived (``LogPane.jump_to``)."""
        self._to_open = job
        self._open_at = at
        if self.is_mounted and self.is_active:
            self._open_asked()

    def _open_asked(self) -> None:
        job, self._to_open = self._to_open, None
        at, self._open_at = self._open_at, None
        if job is not None:
            self.run_worker(self.open_job(job, at), group="open-log", exit_on_error=False)

    @property
    def pane(self) -> LogPane | None:
        """The pane on show."""
        if not self.panes:
            return None
        active = self.query_one(TabbedContent).active
        return next((pane for pane in self.panes if pane.id == active), self.panes[-1])

    async def open_job(self, job: Job, at: tuple[str, int] | None = None) -> LogPane:
        """Show ``job``'s pane, adding one pane per log stream it has (its StdOut, and its StdErr
        where that is a file of its own), each following from the start, if it has none yet."""
        pane = next((p for p in self.panes if (p.job.cluster, p.job.id) == (job.cluster, job.id)), None)
        if pane is None:
            backend = self.app.hub.backend(job.cluster)
            try:
                streams = await backend.log_streams(job.id)
            except Exception:
                streams = ("",)
            for stream in streams or ("",):
                self._opened += 1
                added = LogPane(job, backend.capabilities.rank_logs, f"log-pane-{self._opened}", stream, streams)
                self.panes.append(added)
                added.added = self.query_one(TabbedContent).add_pane(added)
                pane = pane or added
        assert pane is not None
        for other in [pane, *(p for p in self.panes if p.job is pane.job and p is not pane)]:
            if other.added is not None:  # mounted: this pane, then its job's other streams
                await other.added
        if pane in self.panes:
            self._activate(pane)
            if at is not None:
                pane.jump_to = at
                pane.try_jump()
        return pane

    def _activate(self, pane: LogPane) -> None:
        self.query_one(TabbedContent).active = pane.pane_id
        pane.focus_view()
        self._changed()

    async def close_pane(self, pane: LogPane) -> None:
        """Stop following ``pane``'s job and drop its log."""
        if pane not in self.panes:
            return
        index = self.panes.index(pane)
        self.panes.remove(pane)
        await self.query_one(TabbedContent).remove_pane(pane.pane_id)
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
        state = (
            pane is not None and pane.ranked,
            pane is not None and len(pane.source_stores) > 1,
            pane is not None and bool(pane.active_view.matches),
            len(self.panes),
        )
        if state != self._keys_state:
            self._keys_state = state
            self.refresh_bindings()

    @property
    def following(self) -> bool:
        """Whether the pane on show follows its tail (the benchmarks read it)."""
        return self.pane.following if self.pane else False

    # -- streaming ---------------------------------------------------------------------------------------
    async def _flush(self) -> None:
        """One tick: buffered lines into the panes, a batch (``FLUSH_LINES``) at a time while the tick's
        ``FLUSH_BUDGET`` lasts, giving the event loop a turn between batches (and, while a key is in
        flight, waiting until its frame is painted), so that a key is handled and shown within a frame
        however fast lines come; what is left waits for the next tick, in order."""
        if not self.is_mounted:
            return
        changed = False
        self._ticks += 1
        clock = time.thread_time  # this thread's CPU: what runs between the batches, or elsewhere, does not count
        spent = 0.0  # seconds of flushing this tick
        for pane in list(self.panes):
            # Side-by-side views redraw several screens' worth of lines per flush: flush them at half rate.
            if pane.is_mounted and (not pane.split or self._ticks % 2 == 0):
                known = len(pane.source_stores)
                while True:  # one batch at least, more while the budget lasts
                    started = clock()
                    flushed = pane.flush()
                    spent += clock() - started
                    if not flushed:
                        break
                    changed = True
                    if not pane.pending_texts or spent >= FLUSH_BUDGET:
                        break
                    await background_turn(self.app)  # keys (and a frame due) get the loop between two batches
                    if not (self.is_mounted and pane.is_mounted):
                        break
                if len(pane.source_stores) != known:
                    self._refresh_keys()
                if pane.ended and not pane.ended_shown:
                    pane.ended_shown = True
                    changed = True
                if pane.notice != pane.notice_shown:
                    pane.notice_shown = pane.notice
                    changed = True
        if changed:
            self._update_status()

    def _update_status(self) -> None:
        status = self.query_one("#log-status", StatusLine)
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
        out.append(f"{pane.shows}  ", "bold cyan")  # always: which stream, which ranks
        if pane.wrap:
            out.append("wrap  ", "cyan")
        if pane.notice and not pane.error:
            out.append(f"{pane.notice}  ", "bold yellow")
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
        if out != status.full_text:  # every flush asks: most leave it as it was
            status.update(out, layout=False)  # one line high (logs.tcss): its size never moves

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
        if action in (
            "toggle_follow",
            "save",
            "search",
            "toggle_wrap",
            "next_error",
            "previous_error",
            "close_pane",
            "copy_lines",
        ):
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
        box = self.query_one("#log-search", Input)
        if not box.display and self.focused is not box:
            raise SkipAction()  # nothing to leave: escape goes back to the Queue
        box.display = False
        if self.pane:
            self.pane.focus_view()
        else:
            self.set_focus(None)

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
        """Go to the next (or previous) error line (``ERROR_PATTERN``) from where the view is:
        after the error last jumped to while it is on show, else from the top (``E``: the bottom) of
        the view; wrapping around once."""
        pane = self.pane
        if pane is None:
            return
        view = pane.active_view
        total = len(view.store)
        if not total:
            return
        top = view.top_line
        bottom = min(total - 1, top + max(1, view.scrollable_content_region.height) - 1)
        last = view.error_line
        if last is not None and top <= last <= bottom:
            start = last + direction
        else:
            start = top if direction > 0 else bottom
        edge = 0 if direction > 0 else total - 1

        def found(line: int | None, wrapped: bool = False) -> None:
            if line is None and not wrapped and start != edge:
                view.find(
                    ERROR_PATTERN,
                    0 if direction > 0 else len(view.store) - 1,
                    direction,
                    lambda again: found(again, True),
                )
                return
            if line is None:
                self.notify(
                    "no error line (error, Traceback, exceptions, CUDA/NCCL errors, Killed, OOM)",
                    timeout=3,
                    markup=False,
                )
                return
            if wrapped:
                self.notify(
                    "no more errors: back to the " + ("first" if direction > 0 else "last"), timeout=3, markup=False
                )
            view.error_line = line
            view.mark_line(line)
            self._changed()

        if 0 <= start < total:
            view.find(ERROR_PATTERN, start, direction, found)
        else:
            found(None)  # past the last line: wrap around

    def action_copy_lines(self) -> None:
        """``y``: the marked line (a match, an error), else the lines in view, to the clipboard (OSC 52)."""
        if self.pane is not None:
            lines = self.pane.active_view.copy_lines()
            if lines:
                self.app.copy_text("\n".join(lines), "log line" if len(lines) == 1 else f"{len(lines)} log lines")

    def action_save(self) -> None:
        pane = self.pane
        if pane is None:
            return
        # A file named after the job, its stream and the rank on show (one name each, so saving the
        # stderr pane and then the stdout pane makes two files), in the directory the console was
        # started in, shown in full.
        name = [pane.job.cluster, pane.job.id, pane.job.name]
        if pane.stream_name != "merged":
            name.append(pane.stream_name)
        source = pane.shown_source
        if source is not None:
            name.append(source if source.startswith("rank") else f"rank-{source}")
        default = str(Path.cwd() / safe_filename("-".join(name) + ".log"))
        store = pane.active_view.store

        def chosen(path: str | None) -> None:
            if path:
                self._save(Path(path).expanduser().absolute(), store)

        self.app.push_screen(PromptScreen(f"Save the log ({pane.shows}) to:", default), chosen)

    @work(group="save-log", exit_on_error=False)
    async def _save(self, path: Path, store: LogStore) -> None:
        """Write the whole log (spilled lines streamed from disk) in a thread: atomic, mode 0600. A
        file already there is replaced only once the user says so."""
        if await asyncio.to_thread(path.exists) and not await self.app.push_screen_wait(
            ConfirmScreen(f"{path} exists. Replace it?")
        ):
            self.notify(clean(f"not saved: {path} kept"), markup=False, timeout=3)
            return
        try:
            count = await asyncio.to_thread(store.write_to, path)
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.app.report_error("Save failed", f"{path}: {reason}")
            return
        self.notify(clean(f"saved {count} lines to {path}"), markup=False)
