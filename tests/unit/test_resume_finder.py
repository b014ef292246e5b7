"""Finding the checkpoint a job resumes from (``yanflow_tui.checkpoints``, ``yanflow_tui.resume``) on each
layout, through a backend that lists and copies a real folder as the local backend does (its ``files``
capability: ``backends/local/inside.py``), and what must move to another cluster (``move_for``,
``carry`` through the atomic download and the gated ``upload``)."""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from yanflow_tui import checkpoints, resume, submitted
from yanflow_tui.backends.base import Backend, Capabilities
from yanflow_tui.backends.local import inside
from yanflow_tui.backends.local import upload as local_upload
from yanflow_tui.errors import NotOffered, ReadOnlyError
from yanflow_tui.model import Checkpoint, ClusterConfig, JobKind, JobSpec
from yanflow_tui.spec import parse_spec, spec_to_data


@pytest.fixture(autouse=True)
def _home(home):
    """Kept specs go to a fresh state dir."""
    return home


class FolderBackend(Backend):
    """Every job's output folder is ``root`` (the local backend's list and download over it)."""

    kind = "folder"
    capabilities = Capabilities(files=True, upload=True, submit=True, job_kinds=frozenset(JobKind))

    def __init__(self, name: str, root: Path, home: Path | None = None, read_only: bool = False, **options):
        super().__init__(ClusterConfig(name, "folder", read_only=read_only, options=options))
        self.root, self.home = root, home or root
        self.listed: list[str] = []

    async def list_jobs(self):
        return []

    async def list_nodes(self):
        return []

    async def list_files(self, job_id, path=""):
        self.listed.append(path)
        return inside.list_dir(str(self.root), path)

    async def download(self, job_id, path, target, progress=None):
        return inside.download(str(self.root), path, target, progress)

    async def _upload(self, source, target):
        return local_upload.upload(source, str(self.home / target))

    async def _submit(self, spec):
        return "1"


class KeptBackend(FolderBackend):
    """A backend with checkpoints of its own (as Determined's), and no files."""

    capabilities = Capabilities(checkpoints=True)

    async def checkpoints(self, job_id):
        t = datetime(2026, 1, 1, tzinfo=timezone.utc)
        return [
            Checkpoint("aaa", job_id, steps=100, state="COMPLETED", time=t),
            Checkpoint("ccc", job_id, steps=300, state="COMPLETED", time=t),
            Checkpoint("bbb", job_id, steps=200, state="COMPLETED", time=t),
            Checkpoint("ddd", job_id, steps=400, state="DELETED", time=t),
        ]

    async def download_checkpoint(self, checkpoint, target, progress=None):
        target.mkdir()
        (target / "model.pth").write_text(checkpoint.uuid)
        return target


def touch(path: Path, text: str = "x", age: float = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    stamp = time.time() - age
    os.utime(path, (stamp, stamp))
    return path


async def found_path(backend: Backend, pattern: str | None = None) -> str | None:
    search = await resume.find(backend, "7", pattern)
    return search.found.path if search.found else None


async def test_the_template_layout_takes_the_highest_epoch_not_the_newest_name(tmp_path):
    for n in (1, 2, 10):
        touch(tmp_path / "checkpoints" / f"epoch_{n}.json", age=100 - n)
    touch(tmp_path / "checkpoints" / "checkpoint.json")  # the latest copy: not a numbered one
    touch(tmp_path / "tb" / "events.out.tfevents.1")
    assert await found_path(FolderBackend("a", tmp_path)) == str(tmp_path / "checkpoints" / "epoch_10.json")


async def test_the_template_layout_takes_folders_too(tmp_path):
    for n in (10, 20):
        touch(tmp_path / "checkpoints" / f"step_{n}" / "mp_rank_00_model_states.pt")
    search = await resume.find(FolderBackend("a", tmp_path), "7")
    assert search.found is not None and search.found.path == str(tmp_path / "checkpoints" / "step_20")
    assert search.found.is_dir and search.found.layout == "template"


async def test_mmengine_takes_what_last_checkpoint_names_else_the_newest(tmp_path):
    work = tmp_path / "work_dirs" / "retinanet"
    for n in (1, 2, 3):
        touch(work / f"epoch_{n}.pth")
    touch(work / "last_checkpoint", str(work / "epoch_2.pth"))
    assert await found_path(FolderBackend("a", tmp_path)) == str(work / "epoch_2.pth")
    (work / "last_checkpoint").unlink()
    assert await found_path(FolderBackend("a", tmp_path)) == str(work / "epoch_3.pth")


async def test_mmengine_work_dir_as_the_output_folder_itself(tmp_path):
    for n in (4, 12):
        touch(tmp_path / f"iter_{n}.pth")
    search = await resume.find(FolderBackend("a", tmp_path), "7")
    assert search.found is not None and search.found.path == str(tmp_path / "iter_12.pth")
    assert search.found.layout == "mmengine"


async def test_two_layouts_the_one_written_last_wins(tmp_path):
    touch(tmp_path / "checkpoints" / "epoch_9.json", age=500)
    touch(tmp_path / "work_dirs" / "cfg" / "epoch_1.pth", age=5)
    assert await found_path(FolderBackend("a", tmp_path)) == str(tmp_path / "work_dirs" / "cfg" / "epoch_1.pth")


async def test_the_spec_pattern_finds_any_layout_and_lists_only_folders_that_can_match(tmp_path):
    for n in (5, 50, 7):
        touch(tmp_path / "out" / "run1" / f"model-{n}.ckpt")
    touch(tmp_path / "out" / "run1" / "model-99.txt")
    touch(tmp_path / "checkpoints" / "epoch_100.json")  # the template layout is not looked at
    touch(tmp_path / "other" / "deep" / "model-1000.ckpt")
    backend = FolderBackend("a", tmp_path)
    assert await found_path(backend, "out/*/model-*.ckpt") == str(tmp_path / "out" / "run1" / "model-50.ckpt")
    assert "other" not in backend.listed and "checkpoints" not in backend.listed
    assert await found_path(backend, "**/model-*.ckpt") == str(tmp_path / "other" / "deep" / "model-1000.ckpt")
    assert await found_path(backend, "out/run[0-9]/model-?.ckpt") == str(tmp_path / "out" / "run1" / "model-7.ckpt")


async def test_a_pattern_with_no_numbers_takes_the_newest_file(tmp_path):
    touch(tmp_path / "ckpt" / "best.pt", age=100)
    touch(tmp_path / "ckpt" / "last.pt", age=1)
    assert await found_path(FolderBackend("a", tmp_path), "ckpt/*.pt") == str(tmp_path / "ckpt" / "last.pt")


async def test_nothing_found_says_where_it_looked(tmp_path):
    touch(tmp_path / "train.py")
    backend = FolderBackend("a", tmp_path)
    search = await resume.find(backend, "7")
    assert search.found is None and str(tmp_path) in search.looked and "checkpoints/epoch_N" in search.looked
    submitted.remember("a", "7", parse_spec("name: x\ncommand: c\n"))
    with pytest.raises(resume.NoCheckpoint, match=f"no checkpoint found for job 7 on a: looked in {tmp_path}"):
        await resume.plan(backend, "7")


async def test_a_backend_with_checkpoints_of_its_own_gives_the_most_steps(tmp_path):
    search = await resume.find(KeptBackend("det", tmp_path), "7")
    assert search.found is not None and search.found.path == "ccc" and search.found.checkpoint is not None


async def test_a_cluster_that_reads_no_files_says_so(tmp_path):
    class Blind(FolderBackend):
        capabilities = Capabilities()

    with pytest.raises(NotOffered, match="cannot read a job's files"):
        await resume.find(Blind("k", tmp_path), "7")


def test_pattern_rules():
    regex = checkpoints.pattern_regex("ckpt/**/step_*.pt")
    assert regex.fullmatch("ckpt/step_1.pt") and regex.fullmatch("ckpt/a/b/step_1.pt")
    assert not regex.fullmatch("ckpt/step_1.pt.tmp") and not regex.fullmatch("other/step_1.pt")
    assert checkpoints.pattern_regex("./ckpt/*").fullmatch("ckpt/x")
    assert not checkpoints.pattern_regex("*.pt").fullmatch("a/b.pt")  # * stays within a name
    assert checkpoints.may_hold("ckpt", "ckpt/*/x.pt") and not checkpoints.may_hold("logs", "ckpt/*/x.pt")
    assert not checkpoints.may_hold("ckpt/a", "ckpt/x.pt")


def test_the_resume_field_is_checked_kept_and_written_back():
    spec = parse_spec("name: x\ncommand: c\nresume: ckpt/step_*.pt\n")
    assert spec.resume == "ckpt/step_*.pt" and spec_to_data(spec)["resume"] == "ckpt/step_*.pt"
    with pytest.raises(Exception, match="resume: expected text"):
        parse_spec("name: x\ncommand: c\nresume: [a]\n")


def test_a_submitted_spec_is_kept_by_cluster_and_job(tmp_path):
    spec = parse_spec("name: x\ncommand: python3 train.py\nenv: {A: b}\nresume: ck/*.pt\ncluster: here\n")
    submitted.remember("hpc", "12/3", spec)
    again = submitted.recall("hpc", "12/3")
    assert again is not None and again.command == spec.command and again.env == {"A": "b"}
    assert again.resume == "ck/*.pt" and again.cluster is None  # where it goes is the resume's to say
    assert submitted.recall("hpc", "99") is None and submitted.recall("other", "12/3") is None


def test_only_the_newest_specs_are_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(submitted, "KEEP", 3)
    spec = parse_spec("name: x\ncommand: c\n")
    for job in range(5):
        path = submitted.remember("hpc", str(job), spec)
        assert path is not None
        os.utime(path, ns=(job * 10**9, job * 10**9))  # (one a second: mtimes apart on any filesystem)
    assert sorted(p.name for p in path.parent.iterdir()) == ["2.yaml", "3.yaml", "4.yaml"]
    assert submitted.recall("hpc", "4") is not None and submitted.recall("hpc", "0") is None


def read(path: str) -> str:
    return Path(path).read_text()


def found(path: str, size: int | None = 3) -> checkpoints.Found:
    return checkpoints.Found(path, "template", path, size=size)


def test_what_must_move(tmp_path):
    a, b = FolderBackend("a", tmp_path), FolderBackend("b", tmp_path)
    ckpt = found("/w/checkpoints/epoch_2.json")
    assert resume.move_for(a, a, "7", ckpt).how == "none"
    shared = resume.move_for(
        FolderBackend("a", tmp_path, storage="gpfs"), FolderBackend("b", tmp_path, storage="gpfs"), "7", ckpt
    )
    assert shared.how == "none" and "share storage 'gpfs'" in shared.say
    copy = resume.move_for(a, b, "7", ckpt)
    assert copy.how == "copy" and copy.dest == ".yanflow/resume/a-7/epoch_2.json"
    assert "a:/w/checkpoints/epoch_2.json (3 bytes) is copied through this console" in copy.say
    manual = resume.move_for(a, FolderBackend("b", tmp_path, read_only=True), "7", ckpt)
    assert manual.how == "manual" and "copy a:/w/checkpoints/epoch_2.json (3 bytes) to b yourself" in manual.say


async def test_carry_downloads_then_uploads_a_file_and_a_folder(tmp_path):
    src, home = tmp_path / "src", tmp_path / "home"
    touch(src / "checkpoints" / "epoch_2.json", json.dumps({"epoch": 2}))
    touch(src / "checkpoints" / "step_20" / "a" / "model.pt", "weights")
    a, b = FolderBackend("a", src), FolderBackend("b", tmp_path / "elsewhere", home=home)
    file_found = found(str(src / "checkpoints" / "epoch_2.json"))
    path = await resume.carry(a, "7", file_found, b, resume.moved_path("a", "7", file_found))
    assert path == str(home / ".yanflow/resume/a-7/epoch_2.json") and json.loads(read(path)) == {"epoch": 2}
    folder = checkpoints.Found(str(src / "checkpoints" / "step_20"), "template", "step_20", is_dir=True)
    path = await resume.carry(a, "7", folder, b, resume.moved_path("a", "7", folder))
    assert read(f"{path}/a/model.pt") == "weights"
    with pytest.raises(Exception, match="exists; not replaced"):
        await resume.carry(a, "7", folder, b, resume.moved_path("a", "7", folder))
    assert not [p for p in (home / ".yanflow/resume/a-7").iterdir() if p.name.startswith(".yanflow-upload")]


async def test_upload_is_gated(tmp_path):
    touch(tmp_path / "f")
    with pytest.raises(ReadOnlyError):
        await FolderBackend("ro", tmp_path, read_only=True).upload(tmp_path / "f", "x")
    assert not (tmp_path / "x").exists()


async def test_plan_sets_the_env_on_the_jobs_own_spec(tmp_path):
    touch(tmp_path / "checkpoints" / "epoch_1.json")
    touch(tmp_path / "checkpoints" / "epoch_2.json")
    backend = FolderBackend("a", tmp_path)
    plan = await resume.plan(backend, "7")
    assert plan.spec is None and "not submitted from this console" in plan.why_no_spec
    spec = JobSpec("train", JobKind.SINGLE, "python3 train.py", env={"A": "1"})
    submitted.remember("a", "7", spec)
    plan = await resume.plan(backend, "7")
    assert plan.spec is not None and plan.spec.command == "python3 train.py" and plan.spec.cluster == "a"
    assert plan.spec.env == {"A": "1", "YANFLOW_RESUME_FROM": str(tmp_path / "checkpoints" / "epoch_2.json")}


def test_the_storage_option_names_shared_file_systems():
    from yanflow_tui.config import parse_config
    from yanflow_tui.errors import SpecError

    config = parse_config("clusters:\n  - name: a\n    kind: local\n    storage: gpfs\n", "c.yaml")
    assert config.clusters[0].options["storage"] == "gpfs"
    with pytest.raises(SpecError, match="c.yaml:4: clusters\\[0\\].storage: expected text"):
        parse_config("clusters:\n  - name: a\n    kind: local\n    storage: [a]\n", "c.yaml")
