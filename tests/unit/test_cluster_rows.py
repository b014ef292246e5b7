"""The header's short state per cluster and the Clusters screen's rows (pure renderers)."""

from __future__ import annotations

from yanflow_tui.hub import ClusterSnapshot, Health
from yanflow_tui.screens.render.cluster_rows import cluster_problems, cluster_row, has_note, short_state

NOW = 1_000_000.0


def snap(**changes) -> ClusterSnapshot:
    return ClusterSnapshot(**{"name": "c", "kind": "slurm", "read_only": False, **changes})


def test_short_states_never_carry_the_error_text():
    assert short_state(snap(), NOW) == "connecting"
    assert short_state(snap(health=Health.OK, updated=NOW - 4), NOW) == "4s"
    assert short_state(snap(health=Health.STALE, updated=NOW - 120, message="timed out"), NOW) == "stale 2m"
    assert short_state(snap(health=Health.ERROR, message="x" * 200), NOW) == "error"
    assert short_state(snap(health=Health.ERROR, login_user="alice", message="log in"), NOW) == "login needed"


def test_a_cached_snapshot_says_cached_with_its_age_never_a_fresh_age():
    assert short_state(snap(cached=True, updated=NOW - 300), NOW) == "cached 5m"
    assert short_state(snap(cached=True, health=Health.STALE, updated=NOW - 300), NOW) == "cached 5m"
    assert short_state(snap(cached=True, health=Health.OK, updated=NOW - 300), NOW) == "cached 5m"
    assert short_state(snap(cached=True, updated=NOW - 300, login_user="alice"), NOW) == "login needed"
    row = cluster_row(snap(cached=True, updated=NOW - 300), NOW)
    assert row.health == "cached 5m" and row.last_good == "5m ago" and row.error


def test_a_row_carries_the_whole_error_and_what_to_do():
    long = "ssh x: host key not trusted\nIf it is the login node's key, add this line to kh:\n[h]:22 ssh-ed25519 AAAA"
    row = cluster_row(
        snap(health=Health.ERROR, message="ssh x: host key not trusted", detail=long), NOW, (("user", "root"),)
    )
    assert row.note == long and row.error and row.last_good == "never" and row.about == (("user", "root"),)
    assert row.access == "read-write" and row.action == ""
    login = cluster_row(snap(health=Health.ERROR, login_user="alice", read_only=True), NOW)
    assert login.action == "l: log in as alice" and login.access == "read-only" and login.about == (("user", "-"),)
    notice = cluster_row(snap(health=Health.OK, updated=NOW - 30, detail="history needs accounting"), NOW)
    assert notice.note == "history needs accounting" and not notice.error and notice.last_good == "30s ago"
    assert has_note(snap(detail="history needs accounting")) and not has_note(snap())


def test_problems_name_clusters_in_error_only():
    snaps = [
        snap(name="ok", health=Health.OK, updated=NOW),
        snap(name="new"),
        snap(name="bad", health=Health.ERROR, message="timed out"),
    ]
    assert cluster_problems(snaps) == {"bad": "error: timed out"}


def test_a_cluster_that_logs_in_in_the_terminal_says_so_and_offers_the_login_key():
    waiting = snap(health=Health.STALE, updated=NOW - 60, terminal_login=True, message="ssh h: master not running")
    assert waiting.needs_login and not snap(health=Health.STALE, updated=NOW).needs_login
    assert short_state(waiting, NOW) == "login needed"
    assert cluster_row(waiting, NOW).action == "l: log in, in the terminal (the console steps aside meanwhile)"
