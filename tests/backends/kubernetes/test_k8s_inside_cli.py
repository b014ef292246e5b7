"""``files``, ``download``, ``forward`` and ``shell`` from the command line (``python -m yanflow_tui``
subprocesses) over the Kubernetes backend and the API emulator's exec and port-forward."""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.k8s_api import make_job, make_pod
from jobhelpers import run_cli
from k8shelpers import config_file, read_exactly

NS = "ml"


@pytest.fixture
def config(home, tmp_path, kubeconfig) -> Path:
    return config_file(tmp_path / "config.yaml", kubeconfig)


@pytest.fixture
def root(emulator):
    emulator.put("jobs", make_job("train", NS))
    emulator.put("pods", make_pod("train-x", NS, job="train"))
    root = emulator.streams.root(NS, "train-x")
    (root / "ckpt").mkdir()
    (root / "ckpt" / "w.bin").write_bytes(os.urandom(70_000))
    return root


def test_files_lists_and_download_copies_a_folder_byte_identical(emulator, config, root, tmp_path):
    listed = run_cli("files", "ml/train", "--config", str(config))
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split()[:3] == ["NAME", "SIZE", "MODIFIED"] and "ckpt/" in listed.stdout
    assert str(root) in listed.stderr
    dest = tmp_path / "got"
    dest.mkdir()
    refused = run_cli("--read-only", "download", "ml/train", "ckpt", str(dest), "--config", str(config))
    assert refused.returncode == 1 and "off in read-only mode" in refused.stderr and "pods/exec" in refused.stderr
    result = run_cli("download", "ml/train", "ckpt", str(dest), "--config", str(config))
    assert result.returncode == 0, result.stderr
    assert "checked: size and sha256" in result.stderr
    got = (dest / "ckpt" / "w.bin").read_bytes()
    assert hashlib.sha256(got).digest() == hashlib.sha256((root / "ckpt" / "w.bin").read_bytes()).digest()


def test_shell_is_refused_read_only_before_any_request(emulator, config, root):
    result = run_cli("--read-only", "shell", "ml/train", "--config", str(config))
    assert result.returncode == 1 and "read-only: shell refused" in result.stderr
    assert emulator.streams.execs == []


def test_forward_prints_a_local_address_that_reaches_the_pods_port(emulator, config, root, tcp_server, tmp_path):
    emulator.streams.map_port(NS, "train-x", 8888, tcp_server(lambda data: b"pong " + data))
    proc = subprocess.Popen(
        [sys.executable, "-m", "yanflow_tui", "forward", "ml/train", "8888", "--config", str(config)],
        cwd=tmp_path,
        env=dict(os.environ),  # the home fixture's, monkeypatched
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()  # blocks until printed or the process ends
        assert line.startswith("127.0.0.1:"), (line, proc.stderr.read() if proc.poll() is not None else "")
        port = int(line.split()[0].split(":")[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"ping")
            assert read_exactly(sock, 9) == b"pong ping"
    finally:
        proc.terminate()
        proc.wait(10)
