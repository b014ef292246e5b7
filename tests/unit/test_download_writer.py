"""The one download writer (``downloads.Landing``) and our own tar member check (``tarsafe``), alone:
a private folder beside the target, never a planted one, resumed only from our own; a try that got
nothing leaves nothing; final modes within the umask; no replacing a target that appeared meanwhile;
hostile archives refused on every Python (no ``tarfile`` ``filter=``)."""

from __future__ import annotations

import io
import os
import stat
import tarfile
from pathlib import Path

import pytest
from downloadhelpers import NOBODY, partial_data, partials, plant

from yanflow_tui.backends import tarsafe
from yanflow_tui.backends.downloads import Landing, local_name
from yanflow_tui.errors import BackendError


def landed(target: Path, data: bytes, folder: bool = False, name: str = ".") -> Landing:
    landing = Landing(target, folder)
    part = landing.open(name, landing.have(name, len(data), None))
    part.write(data[os.fstat(part.fd).st_size :])
    part.close()
    return landing


def test_a_file_lands_private_then_moves_into_place_with_the_umasks_mode(tmp_path):
    target = tmp_path / "dl" / "w.bin"
    with landed(target, b"abc") as landing:
        (private,) = partials(target)
        assert stat.S_IMODE(private.stat().st_mode) == 0o700
        assert stat.S_IMODE((private / "data").stat().st_mode) == 0o600  # while partial
        landing.finish({".": 3}, None, "w.bin", "the cluster")
    old = os.umask(0o027)
    try:
        with landed(tmp_path / "dl" / "x.bin", b"x") as landing:
            landing.finish({".": 1}, None, "x.bin", "the cluster")
    finally:
        os.umask(old)
    assert target.read_bytes() == b"abc" and stat.S_IMODE(target.stat().st_mode) == 0o666 & ~old
    assert stat.S_IMODE((tmp_path / "dl" / "x.bin").stat().st_mode) == 0o640
    assert sorted(os.listdir(tmp_path / "dl")) == ["w.bin", "x.bin"]


def test_a_try_resumes_only_from_its_own_private_folder(tmp_path):
    target = tmp_path / "w.bin"
    plant(target, b"abc")
    mine = partials(target)
    theirs = tmp_path / ".w.bin.yanflow-part-ffffffffffffffff"  # open to others: not a private folder, not adopted
    theirs.mkdir(mode=0o755)
    theirs.chmod(0o755)
    (theirs / "data").write_bytes(b"zzzzz")
    with Landing(target, folder=False) as landing:
        assert landing.resumed and landing.have(".", 6, None) == 3 and Path(tmp_path / landing.name) in mine
        with pytest.raises(BlockingIOError):  # locked while a download uses it
            import fcntl

            fd = os.open(tmp_path / landing.name, os.O_RDONLY)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            finally:
                os.close(fd)
    assert (theirs / "data").read_bytes() == b"zzzzz"
    plant(tmp_path / "a.yanflow-part-0123456789abcdef", b"another target's")
    with Landing(tmp_path / "a", folder=False) as landing:
        assert not landing.resumed  # another target's try, though its name starts like ours


def test_a_private_folder_of_another_user_or_a_link_is_never_adopted(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("victim")
    target = tmp_path / "dl" / "w.bin"
    target.parent.mkdir()
    (target.parent / ".w.bin.yanflow-part-0001000100010001").symlink_to(tmp_path)
    theirs = target.parent / ".w.bin.yanflow-part-0002000200020002"
    theirs.mkdir(mode=0o700)
    (theirs / "data").symlink_to(victim)
    os.chown(theirs, NOBODY, NOBODY)
    with landed(target, b"mine") as landing:
        assert not landing.resumed
        landing.finish({".": 4}, None, "w.bin", "the cluster")
    assert victim.read_text() == "victim" and target.read_bytes() == b"mine"
    assert sorted(os.listdir(target.parent)) == [
        ".w.bin.yanflow-part-0001000100010001",
        ".w.bin.yanflow-part-0002000200020002",
        "w.bin",
    ]


def test_a_try_that_got_no_byte_leaves_nothing_and_one_that_did_is_kept(tmp_path):
    target = tmp_path / "w.bin"
    with Landing(target, folder=False) as landing:
        landing.open(".").close()
    assert os.listdir(tmp_path) == []
    with Landing(target, folder=True) as landing:
        landing.open("a/b.txt").write(b"1")
    assert (partial_data(target) / "a" / "b.txt").read_bytes() == b"1"


def test_a_target_that_appears_meanwhile_is_not_replaced(tmp_path):
    target = tmp_path / "w.bin"
    with landed(target, b"new") as landing:
        target.symlink_to(tmp_path / "elsewhere")
        with pytest.raises(BackendError, match="exists; not replaced"):
            landing.finish({".": 3}, None, "w.bin", "the cluster")
    assert target.is_symlink() and not (tmp_path / "elsewhere").exists()
    folder = tmp_path / "f"
    with landed(folder, b"1", folder=True, name="a.txt") as landing:
        folder.mkdir()
        (folder / "keep.txt").write_text("keep")
        with pytest.raises(BackendError, match="exists; not replaced"):
            landing.finish({"a.txt": 1}, None, "f", "the cluster")
    assert os.listdir(folder) == ["keep.txt"]


def test_a_mismatch_removes_the_try_and_names_outside_the_folder_are_refused(tmp_path):
    target = tmp_path / "f"
    with landed(target, b"12", folder=True, name="a.txt") as landing:
        with pytest.raises(BackendError, match="leads outside"):
            landing.open("../escape.txt")
        with pytest.raises(BackendError, match="leads outside"):
            landing.open("/etc/escape.txt")
        with pytest.raises(BackendError, match="do not match"):
            landing.finish({"a.txt": 2, "b.txt": 0}, None, "f", "the cluster")
    assert os.listdir(tmp_path) == []


def test_names_that_are_not_utf8_land_escaped():
    assert local_name(os.fsdecode(b"caf\xe9/\xff.bin")) == "caf\\xe9/\\xff.bin"


def archive(*members: tuple[tarfile.TarInfo, bytes]) -> tarfile.TarFile:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for info, data in members:
            info.size = len(data) if info.isfile() else 0
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    buf.seek(0)
    return tarfile.open(fileobj=buf, mode="r|")


def member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "", mode: int = 0o644) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, mode
    return info


HOSTILE = {
    "absolute": [(member("/tmp/abs.txt"), b"x")],
    "dotdot": [(member("a/../../up.txt"), b"x")],
    "symlink out": [(member("out", tarfile.SYMTYPE, "../../victim"), b"")],
    "symlink absolute": [(member("out", tarfile.SYMTYPE, "/etc/passwd"), b"")],
    "hardlink out": [(member("h", tarfile.LNKTYPE, "../victim.txt"), b"")],
    "hardlink to nothing": [(member("h", tarfile.LNKTYPE, "nothere"), b"")],
    "device": [(member("dev", tarfile.CHRTYPE), b"")],
    "block device": [(member("blk", tarfile.BLKTYPE), b"")],
    "fifo": [(member("fifo", tarfile.FIFOTYPE), b"")],
    "through a link": [(member("d", tarfile.SYMTYPE, "sub"), b""), (member("d/x.txt"), b"x")],
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_archives_are_refused_and_write_nothing_outside(case, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("victim")
    target = tmp_path / "dl" / "out"
    with Landing(target, folder=True) as landing, archive(*HOSTILE[case]) as tar:
        with pytest.raises(BackendError, match="refused|leads|link"):
            tarsafe.extract(tar, landing)
    assert victim.read_text() == "victim" and sorted(os.listdir(tmp_path)) == ["dl", "victim.txt"]
    assert not target.exists() and not (tmp_path / "up.txt").exists()


def test_a_plain_archive_lands_with_safe_modes_and_links_inside_it(tmp_path):
    target = tmp_path / "ckpt"
    members = [
        (member("./", tarfile.DIRTYPE, mode=0o777), b""),
        (member("./epoch=9.ckpt", mode=0o4777), b"weights"),
        (member("./last.ckpt", tarfile.SYMTYPE, "epoch=9.ckpt"), b""),
        (member("./copy.ckpt", tarfile.LNKTYPE, "epoch=9.ckpt"), b""),
        (member("./meta/info.json", mode=0o600), b"{}"),
    ]
    with Landing(target, folder=True) as landing, archive(*members) as tar:
        assert tarsafe.extract(tar, landing) == ["epoch=9.ckpt", "copy.ckpt", "meta/info.json"]
        landing.finish(None, None, "ckpt", "the master")
    umask = 0o777 & ~stat.S_IMODE(target.stat().st_mode)
    assert os.readlink(target / "last.ckpt") == "epoch=9.ckpt" and (target / "copy.ckpt").read_bytes() == b"weights"
    assert stat.S_IMODE((target / "epoch=9.ckpt").stat().st_mode) == 0o777 & ~umask  # no setuid kept
    assert stat.S_IMODE((target / "meta" / "info.json").stat().st_mode) == 0o666 & ~umask
