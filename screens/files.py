"""The Files view of a running job: its output folder (the spec's ``outputs:``, else its workdir: names,
sizes, times) read through the job's backend (``list_files``); ``enter`` opens a folder, ``backspace``
goes up, ``d`` downloads the highlighted file or folder (atomically, checked, resumed where a try was cut)
with a progress bar (``screens.progress``)."""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual import getters, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, ProgressBar, Static

from yanflow_tui.backends.base import JobFile
from yanflow_tui.hub import error_text
from yanflow_tui.inside import download_target, size_text, skipped_text, time_text
from yanflow_tui.keys import CANCEL_KEY
from yanflow_tui.model import Job
from yanflow_tui.sanitize import clean
from yanflow_tui.screens.progress import DownloadProgress
from yanflow_tui.screens.widgets.footer import Footer

if TYPE_CHECKING:
    from yanflow_tui.app import YanflowApp


class FilesScreen(ModalScreen[None]):
    """One folder of a job, listed by its backend; downloads land under the current folder by default."""

    if TYPE_CHECKING:
        app = getters.app(YanflowApp)

    BINDINGS = [
        Binding("escape", "dismiss", "Close", id="files-close"),
        Binding(CANCEL_KEY, "dismiss", "Close", id="files-close-alt"),
        Binding("enter", "open", "Open folder", id="files-open"),
        Binding("backspace", "up", "Up", id="files-up"),
        Binding("d", "download", "Download", id="files-download"),
    ]

    def __init__(self, job: Job, path: str = "") -> None:
        super().__init__()
        self.job = job
        self.path = path
        self.files: list[JobFile] = []
        self.progress = DownloadProgress(self, "#files-progress")

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(f"Files of {clean(self.job.cluster)}/{clean(self.job.id)}", style="bold"))
            yield Static(Text("loading…"), id="files-path")
            yield DataTable(id="files", cursor_type="row", zebra_stripes=True)
            yield ProgressBar(id="files-progress", show_eta=False)
        yield Footer()  # this screen's own keys, not those of the screen under it

    def on_mount(self) -> None:
        table = self.query_one("#files", DataTable)
        for column in ("NAME", "SIZE", "MODIFIED"):
            table.add_column(column, key=column.lower())
        self.query_one("#files-progress").display = False
        self._load(self.path)

    @work(exclusive=True, group="files", exit_on_error=False)
    async def _load(self, path: str) -> None:
        backend = self.app.hub.backend(self.job.cluster)
        heading = self.query_one("#files-path", Static)
        try:
            listing = await self.app.hub.call(backend.list_files(self.job.id, path))
        except Exception as exc:
            heading.update(Text(f"cannot list: {clean(error_text(exc))}", style="red"))
            return
        self.path, self.files = listing.path, list(listing.files)
        heading.update(Text(clean(listing.path)))
        table = self.query_one("#files", DataTable)
        table.clear()
        for f in self.files:
            name = clean(f.name) + ("/" if f.is_dir else "")
            size = "-" if f.is_dir else size_text(f.size)
            table.add_row(Text(name), Text(size, justify="right"), Text(time_text(f.mtime)), key=f.path)
        self.refresh_bindings()

    def selected(self) -> JobFile | None:
        table = self.query_one("#files", DataTable)
        if not self.files or not table.row_count:
            return None
        return self.files[min(table.cursor_row, len(self.files) - 1)]

    def check_action(self, action: str, parameters) -> bool | None:
        if action == "open":
            chosen = self.selected()
            return True if chosen is not None and chosen.is_dir else None
        if action == "download":
            return True if self.selected() is not None and not self.progress.busy else None
        return True

    def on_data_table_row_highlighted(self) -> None:
        self.refresh_bindings()

    def on_data_table_row_selected(self) -> None:  # enter on the table (its own binding takes the key)
        self.action_open()

    def action_open(self) -> None:
        chosen = self.selected()
        if chosen is not None and chosen.is_dir:
            self._load(chosen.path)

    def action_up(self) -> None:
        if self.path not in ("", "/"):
            self._load(posixpath.dirname(self.path.rstrip("/")) or "/")

    def action_download(self) -> None:
        chosen = self.selected()
        if chosen is None or self.progress.busy:
            return
        from yanflow_tui.screens.dialogs import PromptScreen

        def answered(dest: str | None) -> None:
            if dest:
                self._download(chosen, Path(dest).expanduser())

        default = str(download_target(chosen.path))
        self.app.push_screen(PromptScreen(f"Download {clean(chosen.name)} to:", default), answered)

    @work(exclusive=True, group="files-download", exit_on_error=False)
    async def _download(self, chosen: JobFile, target: Path) -> None:
        backend = self.app.hub.backend(self.job.cluster)
        try:
            result = await self.progress.run(lambda report: backend.download(self.job.id, chosen.path, target, report))
        except Exception as exc:
            self.app.report_error("Download failed", error_text(exc))
            return
        done = f"{chosen.name} downloaded to {result.path} (checked: {result.checked}){skipped_text(result)}"
        self.notify(clean(done), markup=False)
