"""My share of a cluster, as the Clusters screen shows it under the list: each scope bold, then its
figures (used of limit; one at or over its limit in bold red), then the note. Pure functions."""

from __future__ import annotations

from rich.text import Text

from yanflow_tui.sanitize import clean
from yanflow_tui.share import Share


def share_text(share: Share) -> Text:
    out = Text()
    out.append(f"My share of {clean(share.cluster)}", "bold underline")
    for scope, lines in share.grouped():
        out.append(f"\n{clean(scope)}: ", "bold")
        for i, line in enumerate(lines):
            out.append("; " if i else "")
            out.append(clean(line.text()), "bold red" if line.near else "")
    if share.note:
        out.append(f"\n{clean(share.note)}", "dim")
    return out


def share_failed(cluster: str, message: str) -> Text:
    return Text.assemble((f"My share of {clean(cluster)}", "bold underline"), "\n", (clean(message), "red"))
