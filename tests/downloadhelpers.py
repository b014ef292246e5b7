"""Downloads in tests: what an interrupted try leaves (planted through the one writer,
``downloads.Landing``), where it is, and the cases every backend's download must pass (``job_tree``
made in the job's folder, then ``check_planted`` and ``check_links_and_empties`` through a fetch)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from yanflow_tui.backends.base import Download
from yanflow_tui.errors import BackendError


def partials(target: Path) -> list[Path]:
    """The private folders tries of ``target`` left beside it."""
    prefix = f".{target.name}.yanflow-part-"
    return sorted(p for p in target.parent.glob(f"{prefix}*") if p.name.startswith(prefix))


def partial_data(target: Path) -> Path:
    """What the one try left of ``target`` holds (its file or folder)."""
    (found,) = partials(target)
    return found / "data"


def plant(target: Path, data: bytes, name: str = ".", folder: bool = False) -> Path:
    """An interrupted try of ``target`` that fetched ``data`` of member ``name``; its private file."""
    from yanflow_tui.backends.downloads import Landing

    with Landing(target, folder) as landing:
        part = landing.open(name)
        part.write(data)
        part.close()
    return partial_data(target) if name == "." else partial_data(target) / name


# -- the same download cases for every backend -------------------------------------------------------
Fetch = Callable[[str, Path], Awaitable[Download]]  # (the job's path, the local target)
NOBODY = 65534
CKPT = os.urandom(300_000)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def job_tree(work: Path) -> None:
    """The job's files the cases download: a file, empty files, a linked checkpoint, a folder with links
    (inside it, leading out of it, a loop)."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "normal.bin").write_bytes(os.urandom(70_000))
    (work / "other.bin").write_bytes(os.urandom(5_000))
    (work / "sub" / "deep").mkdir(parents=True)
    (work / "sub" / "inner.txt").write_text("the job's inner.txt")
    (work / "sub" / "deep" / "x.bin").write_bytes(os.urandom(1_000))
    (work / "empty1.txt").write_bytes(b"")
    (work / "empties" / "b").mkdir(parents=True)
    (work / "empties" / "a.txt").write_bytes(b"")
    (work / "empties" / "b" / "c.txt").write_bytes(b"")
    (work / "ckpt").mkdir()
    (work / "ckpt" / "epoch=9.ckpt").write_bytes(CKPT)
    (work / "ckpt" / "last.ckpt").symlink_to("epoch=9.ckpt")
    linked = work / "linked"
    (linked / "deep").mkdir(parents=True)
    (linked / "real.bin").write_bytes(os.urandom(2_000))
    (linked / "deep" / "x.bin").write_bytes(os.urandom(3_000))
    (linked / "alias.bin").symlink_to("real.bin")
    (linked / "inner").symlink_to("deep")
    (linked / "out.bin").symlink_to("../normal.bin")  # outside the folder downloaded: left out
    (linked / "loop").symlink_to(".")


async def check_links_and_empties(fetch: Fetch, work: Path, dl: Path) -> None:
    """Empty files, a folder of them, a linked checkpoint and a folder with links arrive with the
    cluster's sha256; links leading out of the folder and loops are left out and named."""
    got = await fetch("empty1.txt", dl / "empty1.txt")
    assert (dl / "empty1.txt").read_bytes() == b"" and got.size == 0 and not partials(dl / "empty1.txt")
    await fetch("empties", dl / "empties")
    assert sorted(str(p.relative_to(dl / "empties")) for p in (dl / "empties").rglob("*")) == ["a.txt", "b", "b/c.txt"]
    assert (dl / "empties" / "b" / "c.txt").read_bytes() == b""
    got = await fetch("ckpt/last.ckpt", dl / "last.ckpt")
    assert sha(dl / "last.ckpt") == sha(work / "ckpt" / "epoch=9.ckpt") and got.size == len(CKPT)
    assert not (dl / "last.ckpt").is_symlink()
    await fetch("ckpt", dl / "ckpt")
    assert sha(dl / "ckpt" / "last.ckpt") == sha(dl / "ckpt" / "epoch=9.ckpt") == sha(work / "ckpt" / "epoch=9.ckpt")
    got = await fetch("linked", dl / "linked")
    tree = sorted(str(p.relative_to(dl / "linked")) for p in (dl / "linked").rglob("*") if p.is_file())
    assert tree == ["alias.bin", "deep/x.bin", "inner/x.bin", "real.bin"]
    assert sha(dl / "linked" / "alias.bin") == sha(work / "linked" / "real.bin")
    assert sha(dl / "linked" / "inner" / "x.bin") == sha(work / "linked" / "deep" / "x.bin")
    assert any("out.bin" in s and "outside" in s for s in got.skipped), got.skipped
    assert any("loop" in s for s in got.skipped), got.skipped
    assert got.size == 2_000 * 2 + 3_000 * 2


async def check_planted(fetch: Fetch, work: Path, dl: Path) -> None:
    """Partials planted by another user beside the target (links to a victim file and folder, at the
    old predictable name and at the writer's own prefix; a private-looking folder of another user) are
    never written through, adopted or removed: the victims keep their bytes."""
    victim, victims, theirs = _plant(dl)
    await fetch("normal.bin", dl / "normal.bin")
    await fetch("sub", dl / "sub")
    await fetch("other.bin", dl / "other.bin")
    assert victim.read_text() == "victim" and (victims / "inner.txt").read_text() == "victim's inner"
    assert sorted(p.name for p in victims.iterdir()) == ["inner.txt"]
    assert sha(dl / "normal.bin") == sha(work / "normal.bin") and sha(dl / "other.bin") == sha(work / "other.bin")
    assert (dl / "sub" / "inner.txt").read_text() == "the job's inner.txt"
    assert (dl / "sub" / "deep" / "x.bin").read_bytes() == (work / "sub" / "deep" / "x.bin").read_bytes()
    assert os.readlink(theirs / "data") == str(victim) and theirs.stat().st_uid == NOBODY  # left as it was
    assert (dl / ".other.bin.part").read_bytes() == b"another user's bytes"
    assert (dl / "normal.bin").stat().st_mode & 0o777 == 0o666 & ~_umask()
    (dl / "linked").symlink_to(victims)
    with pytest.raises(BackendError, match="exists; not replaced"):
        await fetch("normal.bin", dl / "linked")  # a target that is a link (even to a folder) is refused
    assert sorted(p.name for p in victims.iterdir()) == ["inner.txt"]


def _plant(dl: Path) -> tuple[Path, Path, Path]:
    """The victims (a file, a folder) and the partials planted beside them to reach them."""
    dl.mkdir(parents=True, exist_ok=True)
    victim = dl.parent / "victim.txt"
    victim.write_text("victim")
    victims = dl.parent / "victimdir"
    victims.mkdir()
    (victims / "inner.txt").write_text("victim's inner")
    (dl / ".normal.bin.part").symlink_to(victim)
    (dl / ".normal.bin.yanflow-part-0000000000000000").symlink_to(victims)
    (dl / ".sub.part").symlink_to(victims)
    (dl / ".sub.yanflow-part-0000000000000000").symlink_to(victims)
    theirs = dl / ".other.bin.yanflow-part-0000000000000000"
    theirs.mkdir(mode=0o700)
    (theirs / "data").symlink_to(victim)
    os.chown(theirs, NOBODY, NOBODY)
    (dl / ".other.bin.part").write_bytes(b"another user's bytes")
    os.chown(dl / ".other.bin.part", NOBODY, NOBODY)
    return victim, victims, theirs


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
