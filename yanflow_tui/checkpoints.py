"""Which checkpoint a job would resume from, by the layouts the console knows: pure rules over a job's
listed files (no I/O; ``yanflow_tui.resume`` lists and reads them through the job's backend).

- The template projects (``sample_jobs/projects``): ``checkpoints/epoch_N`` or ``checkpoints/epoch_N.<ext>``
  (a file, or a folder: DeepSpeed's and Accelerate's), also ``step_N``/``iter_N``; the highest N wins.
- mmengine's work dir (the ``mmdet`` template, MMDetection): ``epoch_N.pth``/``iter_N.pth`` and
  ``last_checkpoint`` (``mmengine_dirs``), in the output folder itself or in ``work_dirs/<config>/``.
- The spec's ``resume:`` glob, relative to the output folder (``*``, ``?``, ``[...]`` within a name; ``**``
  any folders): the match with the highest number in its name wins, else the newest.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from yanflow_tui import mmengine_dirs
from yanflow_tui.model import Checkpoint

TEMPLATE_DIR = "checkpoints"  # where every template project writes its checkpoints (relative to its workdir)
MMENGINE_DIRS = "work_dirs"  # where MMDetection's tools/train.py (and our mmdet template) put work dirs
TEMPLATE_NAME = re.compile(r"^(epoch|step|iter)_(\d+)(\.[^/]*)?$")
NUMBER = re.compile(r"\d+")
MAX_DEPTH = 8  # a ``**`` pattern is walked this deep at most
EPOCH = datetime.fromtimestamp(0, timezone.utc)


@dataclass(frozen=True)
class Entry:
    """One listed file or folder: its path relative to the output folder, and as the cluster names it."""

    relative: str
    path: str
    mtime: datetime | None = None
    is_dir: bool = False
    size: int = 0


@dataclass(frozen=True)
class Found:
    """The checkpoint to resume from: its path as the cluster names it, the layout that found it
    ("template", "mmengine", "pattern", "checkpoints" for a backend's own), and a few words on it."""

    path: str
    layout: str
    what: str
    is_dir: bool = False
    size: int | None = None
    mtime: datetime | None = None
    checkpoint: Checkpoint | None = None  # a backend's own (``capabilities.checkpoints``), to download


def _number(name: str) -> int:
    numbers = NUMBER.findall(name)
    return int(numbers[-1]) if numbers else -1


def _newest(entries: Iterable[Entry]) -> Entry | None:
    """The entry with the highest number in its name (the last number), ties and none by the newest time."""
    ranked = sorted(entries, key=lambda e: (_number(posixpath.basename(e.relative)), e.mtime or EPOCH, e.relative))
    return ranked[-1] if ranked else None


def template(entries: Iterable[Entry]) -> Found | None:
    """The newest of the template projects' ``checkpoints/epoch_N[.ext]`` (``entries``: that folder's)."""
    kept = [e for e in entries if TEMPLATE_NAME.match(posixpath.basename(e.relative))]
    best = max(kept, key=lambda e: (_template_rank(e), e.mtime or EPOCH), default=None)
    if best is None:
        return None
    match = TEMPLATE_NAME.match(posixpath.basename(best.relative))
    assert match is not None
    what = f"{best.relative} ({match.group(1)} {match.group(2)})"
    return Found(best.path, "template", what, best.is_dir, None if best.is_dir else best.size, best.mtime)


def _template_rank(entry: Entry) -> tuple[int, int]:
    match = TEMPLATE_NAME.match(posixpath.basename(entry.relative))
    assert match is not None
    return ({"iter": 0, "step": 1, "epoch": 2}[match.group(1)], int(match.group(2)))


def mmengine(entries: Sequence[Entry], last_text: str = "") -> Found | None:
    """The checkpoint of one mmengine work dir (``entries``: its files): the one ``last_checkpoint``
    names (``last_text``) when listed, else the newest ``epoch_N.pth``/``iter_N.pth``."""
    chosen = mmengine_dirs.resume_from([e.path for e in entries], last_text)
    if chosen is None:
        return None
    entry = next(e for e in entries if e.path == chosen)
    how = (
        "named by last_checkpoint"
        if last_text.strip() and posixpath.basename(last_text.strip()) == posixpath.basename(chosen)
        else "newest"
    )
    return Found(chosen, "mmengine", f"{entry.relative} (mmengine, {how})", False, entry.size, entry.mtime)


def is_work_dir(entries: Iterable[Entry]) -> bool:
    """Whether a folder's entries look like an mmengine work dir (a checkpoint or ``last_checkpoint``)."""
    return any(
        not e.is_dir
        and (
            posixpath.basename(e.relative) == mmengine_dirs.LAST
            or mmengine_dirs.CHECKPOINT.match(posixpath.basename(e.relative))
        )
        for e in entries
    )


def pattern_regex(pattern: str) -> re.Pattern[str]:
    """The spec's ``resume:`` glob as a regex over paths relative to the output folder: ``*`` and ``?``
    stay within a name, ``[...]`` is a set of characters, ``**/`` is any folders (none too)."""
    out, i = [], 0
    text = pattern.strip()
    text = text[2:] if text.startswith("./") else text
    while i < len(text):
        if text.startswith("**/", i):
            out.append("(?:[^/]+/)*")
            i += 3
        elif text.startswith("**", i):
            out.append(".*")
            i += 2
        elif text[i] == "*":
            out.append("[^/]*")
            i += 1
        elif text[i] == "?":
            out.append("[^/]")
            i += 1
        elif text[i] == "[" and (end := text.find("]", i + 2)) > 0:
            body = text[i + 1 : end]
            body = "^" + body[1:] if body.startswith("!") else body
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(text[i]))
            i += 1
    return re.compile("".join(out) + "/?")


def pattern_depth(pattern: str) -> int:
    """How many folders deep a match of ``pattern`` can be (``MAX_DEPTH`` with ``**``)."""
    return MAX_DEPTH if "**" in pattern else pattern.strip().strip("/").count("/") + 1


def may_hold(relative_dir: str, pattern: str) -> bool:
    """Whether the folder ``relative_dir`` can hold a match of ``pattern`` (so it is worth listing)."""
    if "**" in pattern:
        return True
    parts = pattern.strip().strip("/").split("/")
    dirs = relative_dir.strip("/").split("/") if relative_dir.strip("/") else []
    if len(dirs) >= len(parts):
        return False
    return all(pattern_regex(part).fullmatch(name) for part, name in zip(parts, dirs))


def by_pattern(entries: Iterable[Entry], pattern: str) -> Found | None:
    """The newest of ``entries`` (any depth) matching the spec's ``resume:`` glob."""
    regex = pattern_regex(pattern)
    best = _newest(e for e in entries if regex.fullmatch(e.relative))
    if best is None:
        return None
    return Found(
        best.path,
        "pattern",
        f"{best.relative} (resume: {pattern})",
        best.is_dir,
        None if best.is_dir else best.size,
        best.mtime,
    )


def newest(found: Iterable[Found | None]) -> Found | None:
    """The most recently written of several layouts' answers (a project that has more than one)."""
    kept = [f for f in found if f is not None]
    return max(kept, key=lambda f: f.mtime or EPOCH) if kept else None
