"""My share of a cluster: what a backend with ``capabilities.share`` reports (``Backend.share``) as
plain lines, each a limit or a standing with its current use: Slurm's fair-share and its QoS and
association limits, a Kubernetes namespace's ResourceQuota (used of hard), Determined's pools and
their slots. ``note`` says what the cluster cannot tell (no accounting, no quota). No Textual: the
Clusters screen and ``yanflow-tui share`` show what these hold."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from yanflow_tui.capacity import pools
from yanflow_tui.model import Node


@dataclass(frozen=True)
class ShareLine:
    """One standing or limit: ``scope`` is what it applies to ("fair-share", "association root/alice",
    "QoS normal", "quota compute in ml", "pool default"), ``what`` the resource or measure ("gres/gpu",
    "GrpTRES gres/gpu", "requests.nvidia.com/gpu", "slots"), ``used`` and ``limit`` as the cluster
    says them ("" where it has none: a fair-share factor has no limit)."""

    scope: str
    what: str
    used: str
    limit: str = ""

    @property
    def near(self) -> bool:
        """At or over the limit (both numbers): the line to look at first."""
        try:
            return bool(self.limit) and float(_number(self.used)) >= float(_number(self.limit)) > 0
        except ValueError:
            return False

    def text(self) -> str:
        return f"{self.what}: {self.used}" + (f" of {self.limit}" if self.limit else "")

    def as_json(self) -> dict[str, Any]:
        return {"scope": self.scope, "what": self.what, "used": self.used, "limit": self.limit or None}


@dataclass(frozen=True)
class Share:
    """One cluster's share: its lines, and a note on what it cannot say ("" when nothing is missing)."""

    cluster: str
    lines: tuple[ShareLine, ...] = ()
    note: str = ""

    def grouped(self) -> list[tuple[str, list[ShareLine]]]:
        """The lines by scope, in first-seen order."""
        found: dict[str, list[ShareLine]] = {}
        for line in self.lines:
            found.setdefault(line.scope, []).append(line)
        return list(found.items())

    def as_json(self) -> dict[str, Any]:
        return {"cluster": self.cluster, "lines": [line.as_json() for line in self.lines], "note": self.note or None}


def pool_share(cluster: str, nodes: Iterable[Node], label: str) -> Share:
    """A cluster whose share is its pools (Determined's resource pools): each pool's slots in use of
    all, the free ones and the whole free agents, from the nodes now."""
    lines = []
    for pool in pools(nodes):
        scope = f"{label} {pool.name}"
        lines.append(ShareLine(scope, "slots in use", str(pool.gpus_total - pool.gpus_free), str(pool.gpus_total)))
        lines.append(ShareLine(scope, "whole agents free", str(pool.whole_free), str(pool.nodes)))
    return Share(cluster, tuple(lines), "" if lines else "no agents listed: no pool to show")


def _number(text: str) -> str:
    """The leading number of a figure ("4", "12Gi" -> "12", "0.5"); the text itself otherwise."""
    head = ""
    for char in text.strip():
        if char.isdigit() or char == ".":
            head += char
        else:
            break
    return head or text


def share_text(share: Share) -> list[str]:
    """The share as plain lines for a terminal: each scope, then its figures indented."""
    out = [f"{scope}: " + "; ".join(line.text() for line in lines) for scope, lines in share.grouped()]
    if share.note:
        out.append(share.note)
    return out or ["nothing to report"]
