"""Inside a running pod, through the backend: a job's files listed and downloaded (a file resumed
after an interruption, a folder through tar, both byte-identical and never half-written under the final
name), a port forwarded to 127.0.0.1, and the shell behind the read-only gate. The official client
speaks exec and port-forward to the emulator (``fakes.k8s_streams``)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import socket
import tracemalloc

import pytest
from downloadhelpers import check_links_and_empties, check_planted, job_tree, partial_data, partials, plant
from fakes.k8s_api import make_job, make_pod
from k8shelpers import cluster, read_exactly
from waiting import async_wait_until

from yanflow_tui.backends.kubernetes.backend import KubernetesBackend
from yanflow_tui.backends.kubernetes.extract import ANN_OUTPUTS
from yanflow_tui.errors import BackendError, ReadOnlyError

NS = "ml"
JOB = f"{NS}/train"


@pytest.fixture
async def backend(kubeconfig):
    b = KubernetesBackend(cluster(kubeconfig))
    yield b
    await b.close()


@pytest.fixture
def pod_root(emulator):
    """A running job ``ml/train`` of two ranks; rank 0's pod folder holds its outputs."""
    emulator.put("jobs", make_job("train", NS, parallelism=2, indexed=True))
    emulator.put("pods", make_pod("train-0-a", NS, job="train", index=0))
    emulator.put("pods", make_pod("train-1-b", NS, job="train", index=1))
    root = emulator.streams.root(NS, "train-0-a")
    (root / "outputs" / "ckpt").mkdir(parents=True)
    (root / "outputs" / "ckpt" / "weights.bin").write_bytes(os.urandom(300_000))
    (root / "outputs" / "ckpt" / "a name with spaces.txt").write_text("x" * 10)
    (root / "outputs" / "log.txt").write_text("epoch 1\n")
    (root / "model.pt").write_bytes(os.urandom(1_500_000))
    return root


def sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_files_of_the_job_folder_are_listed_with_sizes_and_times(emulator, backend, pod_root):
    listing = await backend.list_files(JOB)
    assert listing.path == str(pod_root)
    names = [(f.name, f.is_dir) for f in listing.files]
    assert names == [("outputs", True), ("model.pt", False)]
    model = listing.files[1]
    assert model.size == 1_500_000 and model.mtime is not None and model.path == str(pod_root / "model.pt")
    inner = await backend.list_files(JOB, listing.files[0].path)
    assert [(f.name, f.size) for f in inner.files] == [("ckpt", inner.files[0].size), ("log.txt", 8)]
    with pytest.raises(BackendError, match="listing nowhere"):
        await backend.list_files(JOB, "nowhere")
    assert {e[1] for e in emulator.streams.execs} == {"train-0-a"}  # rank 0's pod


async def test_a_folder_downloads_through_tar_byte_identical(emulator, backend, pod_root, tmp_path):
    seen = []
    tmp_path = tmp_path / "dl"
    result = await backend.download(JOB, "outputs", tmp_path / "out", lambda d, t: seen.append((d, t)))
    src = pod_root / "outputs"
    for rel in ("ckpt/weights.bin", "ckpt/a name with spaces.txt", "log.txt"):
        assert sha(tmp_path / "out" / rel) == sha(src / rel)
    assert result.checked == "size and sha256" and result.size == 300_018
    assert seen and seen[-1] == (300_018, 300_018)
    assert any(cmd[:2] == ("tar", "chf") for *_, cmd, _ in emulator.streams.execs)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temp left beside it


async def test_an_interrupted_file_download_leaves_no_final_file_and_resumes(emulator, backend, pod_root, tmp_path):
    target = tmp_path / "model.pt"
    emulator.streams.cut_after(600_000)
    with pytest.raises(BackendError):
        await backend.download(JOB, "model.pt", target)
    assert not target.exists()  # nothing half-written under the final name
    part = partial_data(target)
    assert 0 < part.stat().st_size <= 600_000
    kept = part.stat().st_size
    result = await backend.download(JOB, "model.pt", target)
    assert sha(target) == sha(pod_root / "model.pt")
    assert (result.resumed_from, result.checked) == (kept, "size and sha256")
    assert ("tail", "-c", f"+{kept + 1}", "--", "model.pt") in [e[3] for e in emulator.streams.execs]
    assert not partials(target)
    with pytest.raises(BackendError, match="exists; not replaced"):
        await backend.download(JOB, "model.pt", target)


async def test_a_folder_cut_inside_its_tar_stream_resumes_file_by_file(emulator, backend, pod_root, tmp_path):
    target = tmp_path / "out"
    emulator.streams.cut_after(150_000)  # inside weights.bin (300 kB), the folder's one large file
    with pytest.raises(BackendError, match="resume"):
        await backend.download(JOB, "outputs", target)
    part = partial_data(target)
    assert not target.exists() and part.is_dir()  # nothing under the final name
    half = part / "ckpt" / "weights.bin"
    kept = half.stat().st_size
    assert 0 < kept < 300_000
    result = await backend.download(JOB, "outputs", target)
    src = pod_root / "outputs"
    for rel in ("ckpt/weights.bin", "ckpt/a name with spaces.txt", "log.txt"):
        assert sha(target / rel) == sha(src / rel)
    assert result.checked == "size and sha256" and result.resumed_from >= kept and not partials(target)
    resumed = ("tail", "-c", f"+{kept + 1}", "--", "outputs/ckpt/weights.bin")
    assert resumed in [e[3] for e in emulator.streams.execs]  # only the rest of it came


async def test_a_corrupted_partial_file_fails_the_check_and_is_removed(emulator, backend, pod_root, tmp_path):
    target = tmp_path / "model.pt"
    plant(target, b"not the same bytes")
    with pytest.raises(BackendError, match="sha256"):
        await backend.download(JOB, "model.pt", target)
    assert not target.exists() and not partials(target)


async def test_a_port_of_the_chosen_rank_is_forwarded_to_localhost(emulator, backend, pod_root, tcp_server):
    emulator.streams.map_port(NS, "train-1-b", 6006, tcp_server(lambda data: b"rank1:" + data))
    forward = await backend.forward(JOB, 6006, rank="1")
    try:
        assert forward.address.startswith("127.0.0.1:") and forward.remote_port == 6006

        def talk() -> bytes:
            with socket.create_connection(("127.0.0.1", forward.local_port), timeout=10) as sock:
                sock.sendall(b"hi")
                return read_exactly(sock, 8)

        assert await asyncio.to_thread(talk) == b"rank1:hi"
    finally:
        await forward.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", forward.local_port), timeout=2).close()
    assert emulator.streams.forwards == [(NS, "train-1-b", (6006,))]


async def test_read_only_refuses_the_shell_and_every_exec_or_forward_before_any_of_them(
    emulator, kubeconfig, pod_root, tmp_path
):
    """Read-only asks for read permissions only: exec (``create`` on pods/exec: listing, downloads, the
    curves' files) and port-forward are refused like the shell, and the capabilities say why."""
    backend = KubernetesBackend(cluster(kubeconfig, read_only=True))
    try:
        with pytest.raises(ReadOnlyError, match="shell refused"):
            await backend.shell(JOB)
        assert emulator.requests == [] and backend._api is None  # not even the kubeconfig's client
        caps = backend.capabilities
        assert not (caps.files or caps.event_files or caps.forward)
        assert "pods/exec" in caps.why_off("files") and not caps.why_off("logs")
        with pytest.raises(ReadOnlyError, match="pods/exec"):
            await backend.list_files(JOB)
        with pytest.raises(ReadOnlyError, match="pods/exec"):
            await backend.download(JOB, "outputs/log.txt", tmp_path / "log.txt")
        with pytest.raises(ReadOnlyError, match="pods/exec"):
            await backend.event_files(JOB)
        with pytest.raises(ReadOnlyError, match="pods/portforward"):
            await backend.forward(JOB, 6006)
        assert emulator.streams.execs == [] and emulator.streams.forwards == []
        assert not [p for _, p in emulator.requests if "/exec" in p or "/portforward" in p]
    finally:
        await backend.close()


async def test_a_job_with_no_running_pod_says_so(emulator, backend):
    emulator.put("jobs", make_job("done", NS))
    emulator.put("pods", make_pod("done-x", NS, job="done", phase="Succeeded"))
    with pytest.raises(BackendError, match="no running pod"):
        await backend.list_files(f"{NS}/done")
    with pytest.raises(BackendError, match="no running pod"):
        await backend.shell(f"{NS}/done")


async def test_a_large_download_streams_to_disk_without_holding_the_file_in_memory(
    emulator, backend, pod_root, tmp_path
):
    (pod_root / "big.bin").write_bytes(os.urandom(24_000_000))
    await backend.list_files(JOB)  # connected before measuring
    tracemalloc.start()
    try:
        await backend.download(JOB, "big.bin", tmp_path / "big.bin")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert sha(tmp_path / "big.bin") == sha(pod_root / "big.bin")
    assert peak < 8_000_000, peak  # the client keeps no copy of what it read (capture_all off)


async def test_the_shell_opens_in_the_chosen_ranks_pod_or_the_pod_row_itself(emulator, backend, pod_root):
    assert (await backend.shell(JOB)).what == "pod ml/train-0-a (container main)"
    assert (await backend.shell(JOB, rank="1")).what == "pod ml/train-1-b (container main)"
    assert (await backend.shell(f"{JOB}/train-1-b")).what == "pod ml/train-1-b (container main)"
    with pytest.raises(BackendError, match="no running pod of rank '7'"):
        await backend.shell(JOB, rank="7")
    assert emulator.streams.execs == []  # nothing runs until the terminal is handed over (Shell.run)


async def test_a_job_annotated_with_its_outputs_lists_and_downloads_from_there(emulator, backend, pod_root, tmp_path):
    job = make_job("train", NS, parallelism=2, indexed=True)
    job["metadata"].setdefault("annotations", {})[ANN_OUTPUTS] = "outputs"  # as a submit with outputs: writes it
    emulator.put("jobs", job)

    async def annotated():
        await backend._ensure_started()
        info = backend._reflectors["jobs"].items.get((NS, "train"))
        return info is not None and info.outputs == "outputs"

    await async_wait_until(annotated, what="the annotation in the job cache")
    listing = await backend.list_files(JOB)
    assert [f.name for f in listing.files] == ["ckpt", "log.txt"]
    got = await backend.download(JOB, "log.txt", tmp_path / "log.txt")
    assert got.path.read_text() == "epoch 1\n"


async def test_planted_partials_links_and_empty_files(emulator, backend, pod_root, tmp_path):
    """The cases every backend passes (``downloadhelpers``): a folder without links leaving it comes as
    one tar stream (links followed: ``tar ch``), one with them file by file, those left out; a name
    that is not UTF-8 is a clear error (exec's argv is UTF-8 text), never a traceback."""
    work = pod_root / "job"
    job_tree(work)

    async def fetch(path, target):
        return await backend.download(JOB, f"job/{path}", target)

    await check_planted(fetch, work, tmp_path / "dl")
    await check_links_and_empties(fetch, work, tmp_path / "got")
    tars = [cmd for *_, cmd, _ in emulator.streams.execs if cmd[0] == "tar"]
    assert ("tar", "chf", "-", "-C", "job/ckpt", ".") in tars
    assert not any("job/linked" in cmd for cmd in tars)  # links leading out of it: file by file
    with pytest.raises(BackendError, match="not UTF-8"):
        await fetch(os.fsdecode(b"caf\xe9.bin"), tmp_path / "odd.bin")
