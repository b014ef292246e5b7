"""Training curves and a real TensorBoard for a Kubernetes job, against the API emulator: a training
process in rank 0's pod folder writes event files with TensorBoard's own writer; the console reads them
by exec in the pod (``find``/``stat`` for the listing, ``tail -c +N | head -c L`` for the bytes). The
detail's plot and ``metrics --json`` give what TensorBoard's loader reads, and what the job appends is
read on from where the last read stopped. ``t`` starts the real ``tensorboard`` in the pod by exec,
detached, and port-forwards to it: its scalars API lists the job's tags, and stopping it kills it. A
pod without tensorboard gets the local mirror instead, and the note says so; a read-only cluster gets
neither (both need exec in the pod, ``create`` on pods/exec, which read-only never asks for)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import psutil
import pytest
from fakes.k8s_api import make_job, make_pod
from jobhelpers import run_cli
from k8shelpers import cluster, config_file
from tbhelpers import (
    curve_points,
    curves_appended,
    get,
    loader_points,
    open_curves,
    scalars_match,
    servers_over,
    write_script,
    writer_command,
)
from uihelpers import make_app
from waiting import async_wait_until, wait_for

from yanflow_tui import tensorboards
from yanflow_tui.backends import tbserver
from yanflow_tui.backends.kubernetes import manifests, tbfiles
from yanflow_tui.backends.kubernetes.backend import KubernetesBackend
from yanflow_tui.backends.kubernetes.extract import pod_info
from yanflow_tui.errors import ReadOnlyError
from yanflow_tui.screens.detail import JobDetailScreen
from yanflow_tui.spec import parse_spec

NS, POD = "ml", "train-0-a"
JOB = f"{NS}/train"
FIRST, SECOND = 12, 9
SERVER = [sys.executable, "-m", "tensorboard.main"]


@pytest.fixture
def pod_root(emulator):
    """A running job ``ml/train`` of two ranks whose pods carry the spec's log directory, ``runs``."""
    emulator.put("jobs", make_job("train", NS, parallelism=2, indexed=True))
    for name, index in ((POD, 0), ("train-1-b", 1)):
        pod = make_pod(name, NS, job="train", index=index)
        pod["metadata"]["annotations"]["yanflow.io/tb-logdir"] = "runs"
        emulator.put("pods", pod)
    return emulator.streams.root(NS, POD)


@pytest.fixture
def writer(pod_root):
    """The training process of rank 0's pod: its first part written, the second once ``go`` exists."""
    command = writer_command(write_script(pod_root), "runs", FIRST, pod_root / "go", SECOND)
    proc = subprocess.Popen(command, cwd=pod_root, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "first part written"
    yield proc
    proc.kill()
    proc.wait()


def read_offsets(emulator, path: str) -> list[int]:
    """The offsets every exec read of ``path`` began at."""
    return [
        int(cmd[5]) for *_, cmd, _ in emulator.streams.execs if cmd[:3] == ("sh", "-c", tbfiles.READ) and cmd[4] == path
    ]


async def test_event_files_are_listed_and_read_by_exec_in_rank_0s_pod(emulator, kubeconfig, pod_root, writer):
    backend = KubernetesBackend(cluster(kubeconfig))
    try:
        listing = await backend.event_files(JOB)
        assert listing.logdir == str(pod_root / "runs")  # the annotation's, under the container's folder
        assert {f.path.rsplit("/", 2)[-2] for f in listing.files} == {"runs", "eval"}
        main = next(f for f in listing.files if "/eval/" not in f.path)
        whole = (pod_root / "runs" / main.path.rsplit("/", 1)[1]).read_bytes()
        assert await backend.read_event_bytes(JOB, main.path, 0, 100) == (0, whole[:100])
        assert await backend.read_event_bytes(JOB, main.path, 100, 50) == (100, whole[100:150])  # that range only
        assert await backend.read_event_bytes(JOB, main.path, main.size + 10**6, 10) == (0, whole[:10])  # shorter now
        with pytest.raises(Exception, match="not an event file"):
            await backend.read_event_bytes(JOB, str(pod_root / "go"), 0, 10)
        assert {e[1] for e in emulator.streams.execs} == {POD}  # rank 0's pod only
    finally:
        await backend.close()


async def test_the_detail_plots_what_the_loader_reads_and_reads_only_appended_bytes(
    emulator, kubeconfig, pod_root, writer, monkeypatch
):
    monkeypatch.setattr(JobDetailScreen, "METRICS_SECONDS", 0.3)
    runs = pod_root / "runs"
    app = make_app(cluster(kubeconfig))
    async with app.run_test(size=(130, 70)) as pilot:
        view = await open_curves(pilot, app, "k8s", JOB, runs, FIRST)
        assert set(view.curves.tags) == {"loss", "accuracy", "lr", "eval/accuracy"}
        main = next(p for p, _, _ in view.reader.reads if "/eval/" not in p)
        read_to = view.reader.offset(main)
        assert read_offsets(emulator, main) == [0]
        (pod_root / "go").touch()
        await curves_appended(pilot, view, runs, FIRST + SECOND)
        offsets = read_offsets(emulator, main)
        assert offsets[:2] == [0, read_to] and 0 not in offsets[1:]  # on from where it stopped, never from 0


async def test_metrics_json_gives_what_the_loader_reads(emulator, kubeconfig, pod_root, writer, home, tmp_path):
    (pod_root / "go").touch()
    assert await asyncio.to_thread(writer.wait, 60) == 0
    config = config_file(tmp_path / "config.yaml", kubeconfig)
    result = await asyncio.to_thread(run_cli, "metrics", JOB, "--json", "--config", str(config))
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)["metrics"]
    assert curve_points(got) == loader_points(pod_root / "runs") and len(got["loss"]) == FIRST + SECOND


async def test_a_tensorboard_started_in_the_pod_serves_the_jobs_tags_through_a_port_forward(
    emulator, kubeconfig, pod_root, writer
):
    emulator.streams.share_ports(NS, POD)  # the server the exec starts listens on this machine
    backend = KubernetesBackend(cluster(kubeconfig, tensorboard={"command": SERVER}))
    boards = tensorboards.TensorBoards()
    runs = pod_root / "runs"
    try:
        board = await boards.start("k8s/" + JOB, backend, JOB)
        assert board.process is None and board.mirror is None and f"pod {NS}/{POD}" in board.what
        (server,) = servers_over(runs)
        port = int(board.what.split("port ")[1].split()[0])
        assert port != int(board.url.rsplit(":", 1)[1].split("/")[0])  # a local port of its own, forwarded
        assert any(f[:2] == (NS, POD) and port in f[2] for f in emulator.streams.forwards)
        assert (await get(board.url))[0] == 200
        await async_wait_until(lambda: scalars_match(board.url, runs), what="the job's scalars")
        status, tags = await get(board.url + "data/plugin/scalars/tags")
        assert status == 200 and all(f'"{tag}"' in tags for tag in ("loss", "accuracy", "lr"))
        family = [server, *server.children(recursive=True)]
    finally:
        await boards.stop_all()
        await backend.close()
    gone, alive = psutil.wait_procs(family, timeout=15)
    assert not alive and not servers_over(runs)
    with pytest.raises(OSError):
        await get(board.url)


async def test_read_only_starts_no_tensorboard_and_reads_no_event_file_by_exec(emulator, kubeconfig, pod_root, writer):
    backend = KubernetesBackend(cluster(kubeconfig, read_only=True, tensorboard={"command": SERVER}))
    boards = tensorboards.TensorBoards()
    try:
        with pytest.raises(ReadOnlyError):
            await boards.start("k8s/" + JOB, backend, JOB)
        assert emulator.streams.execs == [] and emulator.streams.forwards == []  # create on pods/exec: never
    finally:
        await boards.stop_all()
        await backend.close()


@pytest.mark.parametrize("why", ["no tensorboard"])
async def test_without_a_tensorboard_started_in_the_pod_the_local_mirror_serves_and_says_so(
    emulator, kubeconfig, pod_root, writer, why
):
    config, note = cluster(kubeconfig, tensorboard={"command": ["yanflow-no-such-tb"]}), "has no yanflow-no-such-tb"
    backend = KubernetesBackend(config)
    boards = tensorboards.TensorBoards()
    try:
        board = await boards.start("k8s/" + JOB, backend, JOB)
        assert board.mirror is not None and "local mirror" in board.what and note in board.what
        await async_wait_until(lambda: scalars_match(board.url, pod_root / "runs"), what="the mirrored scalars")
        started = [cmd for *_, cmd, _ in emulator.streams.execs if tbserver.REMOTE_START in cmd]
        assert len(started) == 1
    finally:
        await boards.stop_all()
        await backend.close()


def test_a_submitted_jobs_log_directory_reaches_its_pods_as_an_annotation_and_the_env():
    spec = parse_spec("name: tb\ncommand: python train.py\ntensorboard: {logdir: out/runs}\n")
    (job,) = manifests.manifests(spec, "0123456789abcdef", NS)
    template = job["spec"]["template"]
    pod = {"metadata": {**template["metadata"], "name": "tb-0", "namespace": NS}, "spec": template["spec"]}
    assert pod_info(pod).tb_logdir == "out/runs"
    assert {"name": "YANFLOW_TB_LOGDIR", "value": "out/runs"} in template["spec"]["containers"][0]["env"]
    (plain,) = manifests.manifests(parse_spec("name: tb\ncommand: python train.py\n"), "0123456789abcdef", NS)
    assert "yanflow.io/tb-logdir" not in plain["spec"]["template"]["metadata"]["annotations"]


async def test_t_in_the_detail_starts_it_in_the_pod_and_quitting_the_console_stops_it(
    emulator, kubeconfig, pod_root, writer
):
    emulator.streams.share_ports(NS, POD)
    runs = pod_root / "runs"
    app = make_app(cluster(kubeconfig, tensorboard={"command": SERVER}))
    async with app.run_test(size=(130, 70)) as pilot:
        await open_curves(pilot, app, "k8s", JOB, runs, FIRST)
        await pilot.press("t")
        board = await wait_for(pilot, lambda: next(iter(app.tensorboards.open.values()), None), timeout=90)
        assert f"pod {NS}/{POD}" in board.what and board.mirror is None
        await async_wait_until(lambda: scalars_match(board.url, runs), what="the job's scalars", pilot=pilot)
        (server,) = servers_over(runs)
        family = [server, *server.children(recursive=True)]
    gone, alive = psutil.wait_procs(family, timeout=15)  # the console quit: what it started in the pod is gone
    assert not alive and not servers_over(runs)
