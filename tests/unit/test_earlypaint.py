"""The early paint's frame (``yanflow_tui.earlypaint``), read back through a VT100 emulator: the cached
Queue marked ``cached <age>``, in the Queue's order and columns, at any size; and when it is not painted."""

from __future__ import annotations

import json
import re
import time

import pyte
import pytest

from yanflow_tui import earlypaint, snapcache
from yanflow_tui.config import Config
from yanflow_tui.hub import ClusterSnapshot, Health
from yanflow_tui.model import ClusterConfig, Job, JobState

NOW = 1_800_000_000.0
CLUSTERS = (ClusterConfig("hpc", "fake"), ClusterConfig("lab", "fake", read_only=True))


def job(i: str, name: str, user: str = "alice", state: JobState = JobState.RUNNING, **kw) -> Job:
    return Job(i, kw.pop("cluster", "hpc"), name, user, state, nodes=("n1",), **kw)


def document(jobs: tuple[Job, ...], users: dict[str, str] | None = None, age: float = 300.0) -> dict:
    """The early paint's digest of a snapshot file holding ``jobs`` on ``hpc``."""
    snap = ClusterSnapshot("hpc", "fake", False, Health.OK, "", NOW - age, jobs)
    return earlypaint.digest(snapcache.parse(snapcache.encode([snap], NOW, users)))


def screen(config: Config, doc: dict, columns: int = 100, lines: int = 12, colours: str = "truecolor") -> list[str]:
    out = earlypaint.frame(config, doc, columns, lines, earlypaint.Style(colours), NOW)
    assert len(out) == lines
    shown = pyte.Screen(columns, lines)
    pyte.Stream(shown).feed("".join(f"\x1b[{y + 1};1H{line}" for y, line in enumerate(out)))
    return [line.rstrip() for line in shown.display]


JOBS = (
    job("10", "train-b", submit_time=None),
    job("9", "train-a"),
    job("11", "mate", user="bob"),
    job("12", "sweep"),
    job("12_1", "sweep", parent="12"),
    job("12_2", "sweep", parent="12"),
)


def test_the_cached_queue_is_marked_cached_with_its_age_in_the_queues_order_mine_only():
    text = screen(Config(clusters=CLUSTERS), document(JOBS, {"hpc": "alice"}))
    assert text[0].startswith(" YanFlow · Queue  mine  ● hpc cached 5m  ● lab connecting ro  │ shown 3 of 6: running 3")
    assert re.match(" " + " +".join(earlypaint.HEADERS), text[1])  # CLUSTER ID NAME... (``queuecolumns``)
    ids = [line.split()[1] for line in text[2:5]]
    assert ids == ["9", "10", "▸"]  # naturally ordered; the group closed, its members under it
    assert "sweep (2)" in text[4] and "bob" not in "\n".join(text)
    assert text[5:] == [""] * 7  # nothing else (the footer's keys come with Textual)


def test_every_user_when_all_users_or_the_cluster_does_not_know_who_i_am():
    everyone = screen(Config(clusters=CLUSTERS, all_users=True), document(JOBS, {"hpc": "alice"}))
    unknown = screen(Config(clusters=CLUSTERS), document(JOBS))
    for text in (everyone, unknown):
        assert "bob" in "\n".join(text) and "shown 4 of 6" in text[0]
    assert "all users" in everyone[0]


def test_a_cluster_no_longer_configured_or_of_another_kind_is_not_painted():
    doc = document(JOBS)
    assert not any(c.entry for c in earlypaint.shown_clusters(Config(clusters=(ClusterConfig("hpc", "other"),)), doc))
    assert earlypaint.paint(Config(clusters=(ClusterConfig("gone", "fake"),)), doc, {"TERM": "xterm"}) is None


def test_cluster_text_is_stripped_of_control_characters():
    evil = job("1", "x\x1b]0;pwned\x07\x1b[2Jname\r\n", user="alice", reason="\x1b[31mred\x9b")
    out = earlypaint.frame(Config(clusters=CLUSTERS), document((evil,)), 100, 8, earlypaint.Style(""), NOW)
    joined = "".join(out)
    assert "pwned\x07" not in joined and "\x1b[2J" not in joined and "\r" not in joined and "\x9b" not in joined
    assert "\x1b]" not in joined  # every escape left is one of the paint's own SGR and nothing else
    assert set(re.findall(r"\x1b\[[0-9;]*[A-Za-z]", joined)) <= {m for m in re.findall(r"\x1b\[[0-9;]*m", joined)}


@pytest.mark.parametrize("size", [(20, 4), (40, 6), (80, 24), (300, 90)])
def test_every_line_is_exactly_as_wide_as_the_terminal_at_any_size(size):
    columns, lines = size
    many = tuple(job(str(i), f"a-rather-long-name-{i}", reason="Resources" * 5) for i in range(200))
    out = earlypaint.frame(Config(clusters=CLUSTERS), document(many), columns, lines, earlypaint.Style("256"), NOW)
    assert len(out) == lines
    for line in out:
        assert earlypaint.cells(re.sub(r"\x1b\[[0-9;]*m", "", line)) == columns
    text = screen(Config(clusters=CLUSTERS), document(many), columns, lines)
    assert "YanFlow" in text[0]


def test_not_painted_without_a_terminal_or_with_term_dumb_or_switched_off(monkeypatch):
    doc = document(JOBS)
    config = Config(clusters=CLUSTERS)
    assert not earlypaint.wanted({"TERM": "dumb"})
    assert not earlypaint.wanted({"TERM": ""})
    assert not earlypaint.wanted({"TERM": "xterm", earlypaint.DISABLE_ENV: "1"})
    assert earlypaint.paint(config, doc, {"TERM": "xterm-256color"}) is None  # pytest's stdout is no terminal
    assert earlypaint.paint(config, None, {"TERM": "xterm-256color"}) is None


def test_another_theme_gets_no_colours_and_a_corrupt_document_no_paint():
    out = earlypaint.frame(
        Config(clusters=CLUSTERS, theme="textual-light"), document(JOBS), 80, 8, earlypaint.Style(""), NOW
    )
    assert not re.search(r"\x1b\[[0-9;]*(38|48);", "".join(out))
    assert earlypaint.colour_system({"COLORTERM": "truecolor"}, "textual-light") == ""
    assert earlypaint.colour_system({"COLORTERM": "truecolor"}, None) == "truecolor"
    snap = ClusterSnapshot("hpc", "fake", False, Health.OK, "", NOW, JOBS)
    broken = json.loads(snapcache.encode([snap], NOW))
    broken["clusters"]["hpc"]["jobs"][0]["id"] = None
    with pytest.raises(TypeError):
        earlypaint.digest(broken)


def test_the_user_of_each_cluster_is_kept_for_the_next_start(fake_backend, tmp_path):
    from yanflow_tui.hub import Hub

    config = Config(clusters=(ClusterConfig("hpc", "fake"),))
    hub = Hub(config)
    hub.snapshots["hpc"] = ClusterSnapshot("hpc", "fake", False, Health.OK, "", time.time(), JOBS)
    path = tmp_path / "snapshot.json"
    snapcache.keep(hub, path, time.time())
    doc, note = snapcache.read(path)
    assert note == "" and doc is not None
    assert doc["clusters"]["hpc"]["user"] == hub.backend("hpc").current_user
    assert snapcache.from_doc(doc)[0]["hpc"].jobs == JOBS


def test_the_digest_beside_the_file_is_used_only_for_that_very_file_and_version(tmp_path):
    path = tmp_path / "state" / snapcache.FILE_NAME
    snap = ClusterSnapshot("hpc", "fake", False, Health.OK, "", NOW - 60, JOBS)
    snapcache.save(path, [snap], NOW, {"hpc": "alice"})
    made = path.with_name(snapcache.PAINT_FILE)
    assert made.stat().st_mode & 0o777 == 0o600
    digested, note = snapcache.read_paint(path)
    assert digested is not None and note == "" and digested["clusters"]["hpc"]["views"]["mine"]["shown"] == 3
    assert screen(Config(clusters=CLUSTERS), digested)[0].startswith(" YanFlow · Queue  mine  ● hpc cached 1m")
    path.write_bytes(path.read_bytes() + b" ")  # another version of the file: its digest is not for it
    assert snapcache.read_paint(path) == (None, "")
    snapcache.save(path, [snap], NOW)
    made.write_text(made.read_text().replace(f'"yanflow":"{snapcache.__version__}"', '"yanflow":"0.0.0"'))
    assert snapcache.read_paint(path) == (None, "")
    made.write_text("{not json")
    assert snapcache.read_paint(path)[0] is None  # (set aside: tests/ui/test_bad_cache.py)
    path.unlink()
    assert snapcache.read_paint(path) == (None, "")


def test_the_digest_keeps_a_screenful_of_rows_whatever_the_queue_holds():
    many = tuple(job(str(i), f"n{i}") for i in range(earlypaint.MAX_ROWS + 50))
    view = document(many)["clusters"]["hpc"]["views"]["all"]
    assert view["shown"] == earlypaint.MAX_ROWS + 50 and len(view["rows"]) == earlypaint.MAX_ROWS
    assert [row[0]["id"] for row in view["rows"][:3]] == ["0", "1", "2"]


def test_a_login_in_the_terminal_gets_the_normal_screen_before_its_first_line(tmp_path):
    import io
    import os

    read, write = os.pipe()
    early = earlypaint.EarlyPaint(write, -1, None)
    said = io.StringIO()
    out = early.stream(said)
    assert early.on_screen
    print("yanflow-tui: cluster hpc: logging in", file=out, flush=True)
    os.close(write)
    assert os.read(read, 100) == earlypaint.LEAVE.encode() and said.getvalue().startswith("yanflow-tui: cluster")
    assert not early.on_screen
    early.leave()  # again: nothing more
    early.takes_over()
    os.close(read)


def test_the_column_widths_agree_with_the_queues_columns():
    """The early paint fits the Queue's columns as the Queue does: the same headers, flexible columns
    and floors (the id's among them), give-way ranks, right-justified columns and min widths."""
    from yanflow_tui.screens.queue import COLUMNS

    assert earlypaint.HEADERS == tuple(column.label for column in COLUMNS)
    assert earlypaint.FLEX == {i: column.floor for i, column in enumerate(COLUMNS) if column.flex}
    assert earlypaint.GIVE_WAY == {i: column.give_way for i, column in enumerate(COLUMNS) if column.give_way}
    assert earlypaint.RIGHT == {i for i, column in enumerate(COLUMNS) if column.justify == "right"}
    assert earlypaint.MIN_WIDTH == {i: column.min_width for i, column in enumerate(COLUMNS) if column.min_width}


def test_a_long_pod_id_is_cut_and_state_stays_on_screen_at_80_columns():
    pod = "ml-research/train-ddp-7f9c8d/train-ddp-7f9c8d-worker-0"
    lines = screen(Config(clusters=CLUSTERS), document((job(pod, "llama-finetune-2x8"),)), columns=80)
    header = next(line for line in lines if "CLUSTER" in line)
    row = next(line for line in lines if "ml-research" in line)
    assert "STATE" in header and "…" in row and row.index("running") == header.index("STATE")
