"""Inside a real local job: its workdir listed; a file copied with progress into ``.NAME.part``, an
interrupted copy resumed from what it left, byte-identical (sha256); a folder copied whole; the shell
(its workdir, the job's own environment) in a real terminal; a port that is already local said so;
read-only refusing the shell before anything runs while files stay readable."""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import sys
from dataclasses import replace

import pytest
from downloadhelpers import check_links_and_empties, check_planted, job_tree, partial_data, partials, plant
from jobhelpers import run_cli
from terminal import Terminal
from waiting import async_wait_until

from yanflow_tui.backends.local.backend import LocalBackend
from yanflow_tui.config import ClusterConfig
from yanflow_tui.errors import BackendError, ReadOnlyError
from yanflow_tui.model import JobKind, JobSpec


@pytest.fixture(autouse=True)
def nvml(fake_nvml):
    return fake_nvml


async def started(backend, tmp_path, command="sleep 60") -> str:
    job_id = await backend.submit(
        JobSpec("inside", JobKind.SINGLE, command, workdir=str(tmp_path), env={"YF_MARK": "in-the-job"})
    )

    async def running():
        return (await backend.get_job(job_id)).state.value == "running"

    await async_wait_until(running, what="the job running")
    return job_id


async def test_files_download_resume_and_folders(home, tmp_path):
    work = tmp_path / "work"
    (work / "out" / "deep").mkdir(parents=True)
    data = os.urandom(3 << 20)
    (work / "out" / "w.bin").write_bytes(data)
    (work / "out" / "deep" / "a.txt").write_text("a")
    backend = LocalBackend(ClusterConfig("local", "local"), state_dir=tmp_path / "state")
    try:
        job_id = await started(backend, work)
        listing = await backend.list_files(job_id)
        assert listing.path == str(work) and [f.name for f in listing.files] == ["out"]
        inner = await backend.list_files(job_id, "out")
        assert [(f.name, f.size) for f in inner.files] == [("deep", 0), ("w.bin", len(data))]
        target = tmp_path / "dl" / "w.bin"
        target.parent.mkdir()
        plant(target, data[:1000])  # what an interrupted copy left
        seen = []
        got = await backend.download(job_id, "out/w.bin", target, lambda d, t: seen.append((d, t)))
        assert got.resumed_from == 1000 and got.checked == "size and sha256"
        assert hashlib.sha256(target.read_bytes()).digest() == hashlib.sha256(data).digest()
        assert seen[-1] == (len(data), len(data)) and not partials(target)
        with pytest.raises(BackendError, match="exists"):
            await backend.download(job_id, "out/w.bin", target)
        folder = await backend.download(job_id, "out", tmp_path / "dl" / "out")
        assert folder.size == len(data) + 1 and (tmp_path / "dl" / "out" / "deep" / "a.txt").read_text() == "a"
        forward = await backend.forward(job_id, 8080)
        assert forward.address == "127.0.0.1:8080" and "not forwarded" in forward.what
        with pytest.raises(BackendError, match="already"):
            await backend.forward(job_id, 8080, local_port=9000)
        await backend.cancel(job_id)
    finally:
        await backend.close()


async def test_read_only_refuses_the_shell_but_lists_and_downloads(home, tmp_path):
    (tmp_path / "r.txt").write_text("r")
    writer = LocalBackend(ClusterConfig("local", "local"), state_dir=tmp_path / "state")
    reader = LocalBackend(replace(ClusterConfig("local", "local"), read_only=True), state_dir=tmp_path / "state")
    try:
        job_id = await started(writer, tmp_path)
        with pytest.raises(ReadOnlyError):
            await reader.shell(job_id)
        assert "r.txt" in [f.name for f in (await reader.list_files(job_id)).files]
        assert (await reader.download(job_id, "r.txt", tmp_path / "c.txt")).path.read_text() == "r"
    finally:
        await writer.cancel(job_id)
        await writer.close()
        await reader.close()


def test_the_shell_cli_opens_the_users_shell_in_the_jobs_workdir_with_its_environment(home, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    config = tmp_path / "config.yaml"
    config.write_text("clusters:\n  - name: here\n    kind: local\n")

    async def start():
        backend = LocalBackend(ClusterConfig("here", "local"))
        try:
            return await started(backend, work)
        finally:
            await backend.close()

    job_id = asyncio.run(start())
    argv = [sys.executable, "-m", "yanflow_tui", "--config", str(config), "shell", job_id]
    term = Terminal(argv, home, 100, 30, env={"SHELL": "/bin/sh"})
    try:
        term.wait_text(rf"shell in job {job_id}", timeout=30)
        term.press('echo "m""ark=$YF_MARK:$YANFLOW_JOB_ID:$(pwd)"', "enter")
        found = term.wait(lambda text: re.search(r"mark=(\S+):(\d+):(\S+)", text), "the job's env echoed", timeout=20)
        assert found.groups() == ("in-the-job", job_id, str(work))
        term.press("exit", "enter")
        assert term.exit_code(timeout=20) == 0
    finally:
        term.close()
        asyncio.run(stop(job_id))


async def stop(job_id: str) -> None:
    backend = LocalBackend(ClusterConfig("here", "local"))
    try:
        await backend.cancel(job_id)
    finally:
        await backend.close()


class Cut(Exception):
    """Stands for the copy being killed part-way."""


async def test_a_folder_copy_cut_part_way_resumes_from_the_outputs_folder_after_a_restart(home, tmp_path):
    work = tmp_path / "work"
    (work / "ckpt" / "deep").mkdir(parents=True)
    names = ["a.bin", "b.bin", "deep/c.bin"]
    for name in names:
        (work / "ckpt" / name).write_bytes(os.urandom(3 << 20))
    spec = JobSpec("outputs", JobKind.SINGLE, "sleep 60", workdir=str(work), outputs="ckpt")
    backend = LocalBackend(ClusterConfig("local", "local"), state_dir=tmp_path / "state")
    target = tmp_path / "dl" / "ckpt"
    try:
        job_id = await backend.submit(spec)
        listing = await backend.list_files(job_id)
        assert listing.path == str(work / "ckpt") and [f.name for f in listing.files] == ["deep", "a.bin", "b.bin"]

        def cut(done, total):
            if done >= (4 << 20) + 1:  # inside b.bin (each copy step is 1 MiB)
                raise Cut

        with pytest.raises(Cut):
            await backend.download(job_id, ".", target, cut)
    finally:
        await backend.close()
    part = partial_data(target)
    kept = (part / "b.bin").stat().st_size
    assert not target.exists() and (part / "a.bin").stat().st_size == 3 << 20  # nothing under the final name
    assert 0 < kept < 3 << 20
    (work / "ckpt" / "a.bin").write_bytes(os.urandom(3 << 20))  # changed since: the same size, not the same bytes

    again = LocalBackend(ClusterConfig("local", "local"), state_dir=tmp_path / "state")  # the console restarted
    try:
        result = await again.download(job_id, ".", target)
        await again.cancel(job_id)
    finally:
        await again.close()
    assert result.resumed_from == kept and result.size == 3 * (3 << 20) and not partials(target)
    for name in names:
        assert (
            hashlib.sha256((target / name).read_bytes()).digest()
            == hashlib.sha256((work / "ckpt" / name).read_bytes()).digest()
        )


def test_the_files_and_download_verbs_start_in_the_jobs_outputs_folder(home, tmp_path):
    work = tmp_path / "work"
    (work / "ckpt").mkdir(parents=True)
    (work / "ckpt" / "w.bin").write_bytes(os.urandom(70_000))
    (work / "train.py").write_text("pass\n")
    config = tmp_path / "config.yaml"
    config.write_text("clusters:\n  - name: here\n    kind: local\n")

    async def start():
        backend = LocalBackend(ClusterConfig("here", "local"))
        try:
            return await backend.submit(JobSpec("outs", JobKind.SINGLE, "sleep 60", workdir=str(work), outputs="ckpt"))
        finally:
            await backend.close()

    job_id = asyncio.run(start())
    try:
        listed = run_cli("files", job_id, "--config", str(config))
        assert listed.returncode == 0, listed.stderr
        assert str(work / "ckpt") in listed.stderr and "w.bin" in listed.stdout and "train.py" not in listed.stdout
        dest = tmp_path / "got.bin"
        got = run_cli("download", job_id, "w.bin", str(dest), "--config", str(config))
        assert got.returncode == 0, got.stderr
        assert dest.read_bytes() == (work / "ckpt" / "w.bin").read_bytes()
    finally:
        asyncio.run(stop(job_id))


async def test_planted_partials_links_and_empty_files(home, tmp_path):
    """The cases every backend passes (``downloadhelpers``), on a local job."""
    work = tmp_path / "work"
    job_tree(work)
    backend = LocalBackend(ClusterConfig("local", "local"), state_dir=tmp_path / "state")
    try:
        job_id = await started(backend, work)

        async def fetch(path, target):
            return await backend.download(job_id, path, target)

        await check_planted(fetch, work, tmp_path / "dl")
        await check_links_and_empties(fetch, work, tmp_path / "got")
        sizes = {f.name: (f.size, f.is_dir) for f in (await backend.list_files(job_id, "linked")).files}
        assert sizes["alias.bin"] == (2_000, False) and sizes["inner"][1]  # links shown as their targets
        odd = os.fsdecode(b"caf\xe9.bin")  # a name that is not UTF-8
        (work / "empties" / odd).write_bytes(b"odd")
        await fetch("empties", tmp_path / "odd")
        assert (tmp_path / "odd" / "caf\\xe9.bin").read_bytes() == b"odd"  # under its escaped name
        await backend.cancel(job_id)
    finally:
        await backend.close()
