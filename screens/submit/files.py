"""The Submit screen's files: reading a spec file, template or native job file (an sbatch script, a
Determined config, a Kubernetes manifest) for the form (``read_spec``, pure, run in a thread), and
``SubmitDraft``, which owns the draft that keeps an unfinished form across restarts (its timer, its
lock and whether saving may start). The screen owns the form and puts what these give into it. All
file I/O runs in threads."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual.timer import Timer
from textual.widget import Widget

from yanflow_tui import drafts, templates
from yanflow_tui.errors import SpecError, YanflowError, format_problem
from yanflow_tui.model import NativeFile
from yanflow_tui.nativefiles import SPEC, read_job_text, recognise
from yanflow_tui.sanitize import clean
from yanflow_tui.spec import spec_from_doc, spec_to_data, text_problems
from yanflow_tui.yamldoc import decode

DRAFT_DELAY = 0.5  # s of quiet before the draft is written


def located(exc: SpecError) -> list[tuple[str, str]]:
    """A file's problems as (field, ``file:line: field: message``), for the Problems list."""
    return [(path, format_problem(file, line, path, message)) for file, line, path, message in exc.problems]


@dataclass
class ReadSpec:
    """A spec file as read for the form: ``data`` (as written) is None when the form must not change
    (the file cannot be read, is not a mapping, or holds text the form cannot show)."""

    problems: list[tuple[str, str]] = field(default_factory=list)  # located, for the Problems list
    data: dict[str, Any] | None = None
    file: str = ""
    native: NativeFile | None = None  # a job file sent as written (an sbatch script...): ``data`` is what it asks for


def read_spec(path: str) -> ReadSpec:
    """Read and check ``path`` (blocking: run it in a thread): a spec, or a job file of another kind
    (an sbatch script, a Determined config, a Kubernetes manifest), recognised from its content."""
    try:
        native = _read_native(path)
        if native is not None:
            return native
        doc = templates.read_template(path)
    except SpecError as exc:
        return ReadSpec(located(exc))
    if not isinstance(doc.data, dict):
        where = doc.line("")
        return ReadSpec([("", format_problem(doc.file, where, "", "expected a mapping of spec fields"))])
    unfit = text_problems(doc)
    if unfit:  # control characters or bytes that are not text: the form never shows them
        return ReadSpec(located(SpecError(unfit)))
    try:
        spec_from_doc(doc)
    except SpecError as exc:
        problems = located(exc)
    else:
        problems = []
    return ReadSpec(problems, doc.data_as_written(), doc.file)


def _read_native(path: str) -> ReadSpec | None:
    """``path`` read as a job file that is not our spec, or None where it is our spec (or cannot be
    read: ``read_template`` then says why)."""
    try:
        data = Path(path).expanduser().read_bytes()
    except (OSError, ValueError):
        return None
    file = str(Path(path).expanduser().resolve())
    text, undecodable = decode(data)
    if recognise(text, file)[0] == SPEC:
        return None
    spec = read_job_text(text, file, undecodable=undecodable)
    return ReadSpec([], spec_to_data(spec), file, spec.native)


class SubmitDraft:
    """The saved draft of the Submit form: written ``DRAFT_DELAY`` after the last change, one file
    operation at a time and in order. ``owner`` runs its timer and workers and shows its warnings;
    ``current`` gives the form as a draft."""

    def __init__(self, owner: Widget, current: Callable[[], drafts.Draft]) -> None:
        self._owner = owner
        self._current = current
        self._timer: Timer | None = None
        self._lock = asyncio.Lock()
        self.ready = False  # the saved draft was read (or there was none): saving may start
        self._dirty = False

    def schedule(self) -> None:
        """The form changed: save it once it has been quiet for ``DRAFT_DELAY``."""
        self._dirty = True
        if not self.ready:
            return
        if self._timer is not None:
            self._timer.stop()
        self._timer = self._owner.set_timer(DRAFT_DELAY, self._save)

    def _save(self) -> None:
        self._timer, self._dirty = None, False
        self._owner.run_worker(self._io(drafts.save_draft, self._current()), group="draft", exit_on_error=False)

    def clear(self) -> None:
        """The form was sent or reset: no draft to keep."""
        if self._timer is not None:
            self._timer.stop()
        self._timer, self._dirty = None, False
        self._owner.run_worker(self._io(drafts.clear_draft), group="draft", exit_on_error=False)

    async def flush(self) -> None:
        """Closing within the draft delay still keeps the last edits."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
            await self._io(drafts.save_draft, self._current())

    async def _io(self, call: Callable[..., Any], *args: Any) -> Any:
        """Draft file I/O, in a thread, one operation at a time and in order."""
        async with self._lock:
            try:
                return await asyncio.to_thread(call, *args)
            except (OSError, ValueError, YanflowError) as exc:
                self._owner.notify(clean(f"submit draft: {exc}"), severity="warning", markup=False)

    async def read(self) -> drafts.Draft | None:
        """The saved draft, or None (none saved, or one that cannot be used: that is said)."""
        try:
            async with self._lock:
                return await asyncio.to_thread(drafts.load_draft)
        except (drafts.DraftError, OSError) as exc:
            self.warn_ignored(str(exc))
            return None

    def warn_ignored(self, why: str) -> None:
        self._owner.notify(
            clean(f"ignored the saved Submit draft: {why}"), title="Draft", severity="warning", markup=False, timeout=8
        )

    def start(self) -> None:
        """The saved draft was dealt with: changes from now on are saved (any made meanwhile, too)."""
        self.ready = True
        if self._dirty:
            self.schedule()
