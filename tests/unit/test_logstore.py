"""The bounded log store: spilled lines come back byte-exact, memory stays bounded, the spill file is
private and goes away on close and at exit."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import textwrap

import pytest

from yanflow_tui.logstore import BLOCK, SPILL_LINES, LogStore

ODD = [
    "",
    "plain",
    "tab\there",
    "carriage\rreturn",
    "ünïcödé",
    "宽字符",
    "emoji 🚀",
    "lone \udcff surrogate",
    "trailing space ",
    "x" * 5000,
]


def make_lines(count: int) -> list[str]:
    return [f"{i:07d} {ODD[i % len(ODD)]}" for i in range(count)]


@pytest.fixture
def store(tmp_path):
    s = LogStore(keep_lines=BLOCK * 4, keep_chars=1 << 20, tmp_dir=tmp_path)
    yield s
    s.close(wait=True)


def fill(store: LogStore, lines: list[str], batch: int = 500) -> None:
    for start in range(0, len(lines), batch):
        store.append(lines[start : start + batch])
    store.sync()


def test_lines_beyond_the_window_come_back_byte_exact_from_disk(store):
    lines = make_lines(20_000)
    fill(store, lines)
    assert len(store) == 20_000
    assert store.spilled >= 20_000 - BLOCK * 4 - SPILL_LINES - BLOCK  # most of it left memory
    assert store.path is not None and store.path.stat().st_size > 0
    for i in (0, 1, 7, BLOCK - 1, BLOCK, 12_345, store.spilled - 1, store.spilled, 19_999, -1):
        assert store.get(i) == lines[i]
    assert store.slice(BLOCK - 3, 3 * BLOCK + 5) == lines[BLOCK - 3 : 3 * BLOCK + 5]
    assert store.slice(store.spilled - 10, store.spilled + 10) == lines[store.spilled - 10 : store.spilled + 10]
    assert list(store.iter_all()) == lines
    assert list(store.iter_all(19_990, 19_995)) == lines[19_990:19_995]
    with pytest.raises(IndexError):
        store.get(20_000)


def test_the_spill_file_is_private_and_removed_on_close(tmp_path):
    store = LogStore(keep_lines=BLOCK, tmp_dir=tmp_path)
    fill(store, make_lines(10_000))
    path = store.path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    store.close(wait=True)
    assert not path.exists() and not path.parent.exists()
    assert store.path is None and len(store) == 0 and store.closed
    assert store.append(["late"]) == 0
    assert os.listdir(tmp_path) == []


def test_nothing_is_written_for_a_log_that_fits_in_memory(tmp_path):
    store = LogStore(tmp_dir=tmp_path)
    fill(store, make_lines(1_000))
    assert store.path is None and store.spilled == 0 and store.in_memory == 1_000
    store.close(wait=True)
    assert os.listdir(tmp_path) == []


def test_memory_stays_bounded_while_appending_many_lines(store):
    for start in range(0, 300_000, 2_000):
        store.append([f"line {i}" for i in range(start, start + 2_000)])
    store.sync()
    store.append(["one more"])
    assert len(store) == 300_001
    assert store.in_memory <= store.keep_lines + SPILL_LINES + 2_000
    assert store.index_bytes <= 8 * (300_001 // BLOCK + 2)  # one offset per block of lines
    assert store.get(150_000) == "line 150000" and store.get(-1) == "one more"


def test_a_character_budget_spills_long_lines_early(tmp_path):
    store = LogStore(keep_lines=100_000, keep_chars=100_000, tmp_dir=tmp_path)
    lines = [f"{i} " + "y" * 10_000 for i in range(2_000)]  # 20 MB of text, far fewer lines than keep_lines
    fill(store, lines, batch=50)
    store.append(["end"])
    assert store.in_memory < 400  # ~1 MB of slack over the 100k-character budget, plus a block
    assert store.get(3) == lines[3] and store.get(1_999) == lines[1_999]
    store.close(wait=True)


def test_a_line_holding_newlines_becomes_several_lines(store):
    assert store.append(["a\nb", "c"]) == 3
    assert store.slice() == ["a", "b", "c"]


def test_search_forwards_and_backwards_across_disk_and_memory(store):
    lines = [f"step {i}" + (" ERROR disk" if i in (5, 4_000, 9_990) else "") for i in range(10_000)]
    fill(store, lines)
    assert store.spilled > 4_000  # 4000 is read back from the file, 9990 from memory
    error = re.compile(r"\berror\b", re.IGNORECASE)
    assert list(store.find_all(error)) == [5, 4_000, 9_990]
    assert list(store.find_all(error, 6, 9_990)) == [4_000]
    assert list(store.find_all(error, limit=2)) == [5, 4_000]
    assert store.search(error, 0) == 5
    assert store.search(error, 6) == 4_000
    assert store.search(error, 4_001) == 9_990
    assert store.search(error, 9_991) is None
    assert store.search(error, 9_999, -1) == 9_990
    assert store.search(error, 9_989, -1) == 4_000
    assert store.search(error, 4_000, -1) == 4_000
    assert store.search(error, 4, -1) is None


def test_matching_is_per_line_even_for_patterns_that_could_span_lines(store):
    store.append(["a", "b", "a  b", "xa", "b"])
    assert list(store.find_all(re.compile(r"a\s+b"))) == [2]
    assert list(store.find_all(re.compile(r"^a", re.MULTILINE))) == [0, 2]


def test_write_to_streams_everything_atomically_with_mode_0600(store, tmp_path):
    lines = make_lines(9_000)
    fill(store, lines)
    target = tmp_path / "saved.log"
    target.write_text("old")
    os.chmod(target, 0o644)
    assert store.write_to(target) == 9_000
    expected = "".join(f"{line}\n" for line in lines).encode("utf-8", "surrogatepass")
    assert target.read_bytes() == expected
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    partial = tmp_path / "partial.log"
    assert store.write_to(partial, stop=1_001) == 1_001  # stops inside a spilled block
    assert partial.read_bytes() == "".join(f"{line}\n" for line in lines[:1_001]).encode("utf-8", "surrogatepass")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temp file left


def test_wrapped_rows_is_exact_for_short_lines_and_close_for_long_ones(store):
    store.append(["short"] * 10 + ["z" * 250] * 10)
    assert store.widest == 250
    assert store.wrapped_rows(300) == 20
    assert store.wrapped_rows(100) == 10 + 30
    store.append(["宽" * 10])  # 20 cells
    assert store.widest == 250 and store.wrapped_rows(300) == 21


def test_lines_stay_in_memory_when_the_disk_refuses(tmp_path):
    store = LogStore(keep_lines=BLOCK, tmp_dir=tmp_path / "missing")
    lines = make_lines(10_000)
    fill(store, lines)
    store.append(["after"])
    assert store.error is not None and store.path is None
    assert store.get(0) == lines[0] and store.get(9_999) == lines[9_999] and store.spilled == 0
    store.close(wait=True)


def test_the_spill_file_is_removed_at_exit_without_close(tmp_path):
    script = textwrap.dedent(f"""
        from yanflow_tui.logstore import LogStore
        store = LogStore(keep_lines=64, tmp_dir={str(tmp_path)!r})
        for start in range(0, 20_000, 1_000):
            store.append([f"line {{i}}" for i in range(start, start + 1_000)])
        store.sync()
        print(store.path)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    path = out.stdout.strip()
    assert path.startswith(str(tmp_path)) and path.endswith("spill.log")
    assert not os.path.exists(path)
    assert os.listdir(tmp_path) == []
