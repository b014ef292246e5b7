"""Pure renderers of one cluster's state: the short word the header shows for it, and the full row of
the Clusters screen (kind, health, age of the last good refresh, user, read-only, notes, and the
whole error with its fix). No Textual here; nothing branches on the backend's kind."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from yanflow_tui.hub import ClusterSnapshot, Health
from yanflow_tui.screens.render.rows import duration

LOGIN_NEEDED = "login needed"


def short_state(snap: ClusterSnapshot, now: float) -> str:
    """A few words, never the error itself: ``connecting``, ``login needed``, ``error``, ``stale 2m``,
    ``cached 5m`` (the last run's data, until the first good refresh), or the age of the data (``4s``)
    when healthy."""
    if snap.needs_login:
        return LOGIN_NEEDED
    age = snap.age(now)
    if snap.cached and age is not None:
        return f"cached {duration(age)}"
    if snap.health is Health.OK:
        return duration(age) if age is not None else "ok"
    if snap.health is Health.STALE and age is not None:
        return f"stale {duration(age)}"
    return snap.health.value


def has_note(snap: ClusterSnapshot) -> bool:
    """There is more to read about the cluster on the Clusters screen (an error, a notice)."""
    return bool(snap.detail or snap.message)


def cluster_problems(snaps: Iterable[ClusterSnapshot]) -> dict[str, str]:
    """Name -> "state: the error's first line", for the clusters that are not healthy (the Nodes and
    Queue screens say these instead of an empty list)."""
    return {
        snap.name: f"{short_state(snap, 0)}" + (f": {snap.message}" if snap.message else "")
        for snap in snaps
        if snap.health in (Health.ERROR, Health.STALE)
    }


@dataclass(frozen=True)
class ClusterRow:
    name: str
    kind: str
    health: str  # short_state
    last_good: str  # "12s ago", "never"
    about: tuple[tuple[str, str], ...]  # (label, value) from the backend's ``about()``: user, context...; "-" unknown
    access: str  # "read-only" or "read-write"
    description: str
    note: str  # the whole error or notice, every line; "" when there is none
    error: bool  # the note is an error (not a notice on a healthy cluster)
    action: str  # what the user can do now, e.g. "l: log in as alice"


def cluster_row(
    snap: ClusterSnapshot, now: float, about: tuple[tuple[str, str], ...] = (), description: str = ""
) -> ClusterRow:
    age = snap.age(now)
    note = snap.detail or snap.message
    action = f"l: log in as {snap.login_user}" if snap.login_user else ""
    if snap.terminal_login and not snap.login_user:
        action = "l: log in, in the terminal (the console steps aside meanwhile)"
    return ClusterRow(
        name=snap.name,
        kind=snap.kind,
        health=short_state(snap, now),
        last_good="never" if age is None else f"{duration(age)} ago",
        about=tuple((label, value or "-") for label, value in about) or (("user", "-"),),
        access="read-only" if snap.read_only else "read-write",
        description=description,
        note=note,
        error=snap.health is not Health.OK,
        action=action,
    )
