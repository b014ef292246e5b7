"""What the detail view's ``y`` offers to copy: the job's id, and the paths and URLs in its fields
and in the detail's own texts (a port-forward's address, a TensorBoard's URL), each once, labelled
with where it was found. Plain text in, pairs out; no UI."""

from __future__ import annotations

import re
from collections.abc import Iterable

from yanflow_tui.model import Job

URL = re.compile(r"\b(?:https?|s3|gs|hdfs)://[^\s'\"<>]+")
# An absolute or home path: starts a word (not inside a URL or "gpu/8"), at least one character after "/"
PATH = re.compile(r"(?<![\w:/.~-])~?/[\w.~+@%=-][^\s'\"<>,;()]*")
TRAIL = ".:,;"  # a sentence's punctuation after a path or URL is not part of it


def found_in(text: str) -> list[str]:
    """The URLs, then the paths, in ``text`` (the paths not inside one of its URLs)."""
    urls = [m.group().rstrip(TRAIL) for m in URL.finditer(text)]
    rest = URL.sub(" ", text)
    paths = [m.group().rstrip(TRAIL) for m in PATH.finditer(rest)]
    return [*urls, *(p for p in paths if len(p) > 1)]


def copyables(job: Job, texts: Iterable[tuple[str, str]] = ()) -> list[tuple[str, str]]:
    """(label, text) pairs to copy: the job id first, then each path or URL of ``job.details`` and of
    ``texts`` ((label, text) pairs), in order, each text once."""
    out = [("job id", job.id)]
    seen = {job.id}
    for label, text in [*job.details, *texts]:
        for item in found_in(text):
            if item not in seen:
                seen.add(item)
                out.append((label, item))
    return out
