"""The one atomic writer (``locations.private_writer``) and every file written through it: a file or
symlink planted in the target's directory, at the old predictable temp name or at the target's own
name, is never opened, truncated or chmodded; temp names are unpredictable; no temp file is left."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from yanflow_tui import drafts, locations, templates
from yanflow_tui.locations import private_file, private_writer
from yanflow_tui.logstore import LogStore


def victim(tmp_path: Path) -> Path:
    """A file someone else owns, which a planted symlink points at."""
    other = tmp_path / "elsewhere"
    other.mkdir(exist_ok=True)
    path = other / "precious"
    path.write_text("precious\n")
    path.chmod(0o644)
    return path


def untouched(path: Path) -> bool:
    return path.read_text() == "precious\n" and stat.S_IMODE(path.stat().st_mode) == 0o644


def old_temp_name(target: Path) -> Path:
    return target.with_name(f".{target.name}.{os.getpid()}.tmp")


def test_a_symlink_at_the_old_predictable_temp_name_is_never_written_through(tmp_path):
    target_dir = tmp_path / "shared"
    target_dir.mkdir()
    target = target_dir / "job.log"
    precious = victim(tmp_path)
    old_temp_name(target).symlink_to(precious)
    private_file(target, "the log\n")
    assert untouched(precious)
    assert target.read_text() == "the log\n" and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert old_temp_name(target).is_symlink()  # not ours: left where it was


def test_a_planted_file_at_the_old_temp_name_is_left_alone(tmp_path):
    target = tmp_path / "out.txt"
    planted = old_temp_name(target)
    planted.write_text("someone's\n")
    planted.chmod(0o644)
    private_file(target, "mine\n")
    assert planted.read_text() == "someone's\n" and stat.S_IMODE(planted.stat().st_mode) == 0o644


def test_temp_names_are_unpredictable_and_none_is_left(tmp_path, monkeypatch):
    seen: list[str] = []
    real_replace = os.replace

    def spy(src, dst):
        seen.append(os.path.basename(src))
        return real_replace(src, dst)

    monkeypatch.setattr(locations.os, "replace", spy)
    target = tmp_path / "x.yaml"
    for i in range(3):
        private_file(target, f"{i}\n")
    assert len(set(seen)) == 3
    assert old_temp_name(target).name not in seen
    assert all(name.startswith(".x.yaml.") and name.endswith(".tmp") for name in seen)
    assert [p.name for p in tmp_path.iterdir()] == ["x.yaml"]


def test_an_error_in_the_block_leaves_the_target_and_no_temp_file(tmp_path):
    target = tmp_path / "keep"
    target.write_text("old\n")
    with pytest.raises(RuntimeError):
        with private_writer(target) as fh:
            fh.write(b"half")
            raise RuntimeError("boom")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["keep"]


def test_a_symlink_at_the_target_name_is_replaced_not_followed(tmp_path):
    precious = victim(tmp_path)
    target = tmp_path / "saved.log"
    target.symlink_to(precious)
    private_file(target, "log\n")
    assert untouched(precious)
    assert not target.is_symlink() and target.read_text() == "log\n"


def test_no_replace_refuses_any_existing_name_even_a_dangling_link(tmp_path):
    target = tmp_path / "new"
    target.symlink_to(tmp_path / "nowhere")
    with pytest.raises(FileExistsError):
        private_file(target, "x", replace=False)
    assert target.is_symlink() and not (tmp_path / "nowhere").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["new"]


# -- the files we write ------------------------------------------------------------------------------------


def test_log_save_through_a_planted_symlink_leaves_its_target(tmp_path):
    store = LogStore()
    store.append([f"line {i}" for i in range(100)])
    precious = victim(tmp_path)
    target = tmp_path / "job-7.log"
    old_temp_name(target).symlink_to(precious)
    assert store.write_to(target) == 100
    assert untouched(precious)
    target.unlink()
    target.symlink_to(precious)
    assert store.write_to(target) == 100
    assert untouched(precious)
    assert target.read_text().splitlines()[-1] == "line 99"
    store.close()


def test_draft_through_planted_symlinks_leaves_their_target(home, tmp_path):
    precious = victim(tmp_path)
    path = drafts.draft_path()
    old_temp_name(path).symlink_to(precious)
    drafts.save_draft(drafts.Draft("c", "single", {"name": "n"}))
    assert untouched(precious)
    path.unlink()
    path.symlink_to(precious)
    drafts.save_draft(drafts.Draft("c", "single", {"name": "n2"}))
    assert untouched(precious)
    assert drafts.load_draft().spec == {"name": "n2"}


def test_template_through_planted_symlinks_leaves_their_target(home, tmp_path):
    precious = victim(tmp_path)
    path = templates.template_path("mine")
    path.parent.mkdir(parents=True)
    old_temp_name(path).symlink_to(precious)
    templates.save_template({"name": "a", "command": "c"}, "mine")
    assert untouched(precious)
    path.unlink()
    path.symlink_to(precious)
    with pytest.raises(FileExistsError):  # a link is an existing name: not replaced unless asked
        templates.save_template({"name": "b", "command": "c"}, "mine")
    assert untouched(precious) and path.is_symlink()
    templates.save_template({"name": "b", "command": "c"}, "mine", overwrite=True)
    assert untouched(precious) and not path.is_symlink() and "name: b" in path.read_text()


def test_files_kept_in_place_are_never_opened_through_a_symlink(tmp_path):
    from yanflow_tui.locations import open_private

    precious = victim(tmp_path)
    lock = tmp_path / "schedule.lock"
    lock.symlink_to(precious)
    with pytest.raises(OSError):
        open_private(lock, os.O_RDWR | os.O_CREAT)
    assert untouched(precious)


def test_the_local_runner_writes_its_exit_file_without_a_predictable_temp(tmp_path):
    from yanflow_tui.backends.local import runner as local_runner

    precious = victim(tmp_path)
    exit_file = tmp_path / "exit"
    Path(f"{exit_file}.tmp").symlink_to(precious)  # the old temp name
    assert local_runner.main([str(exit_file), "--", "true"]) == 0
    assert exit_file.read_text() == "0\n"
    assert untouched(precious)


def test_the_local_job_store_refuses_a_planted_symlink(tmp_path):
    from yanflow_tui.backends.local.store import LocalStore
    from yanflow_tui.errors import BackendError

    precious = victim(tmp_path)
    db = tmp_path / "local.db"
    db.symlink_to(precious)
    with pytest.raises(BackendError):
        LocalStore(db)
    assert untouched(precious)
