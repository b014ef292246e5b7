"""Helpers for the OpenSSH transport's tests against the real login nodes of the Slurm test cluster (the
one-time-code sshd on 2224, the key-only one on 2222): clusters that use ``transport: openssh``, a
short private folder for the master sockets (``sockets``), masters started and stopped as a user
would, and the TCP connections that OUR ssh processes hold (other tests may be logged in too)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from otphelpers import DIR, askpass, established, otp_cluster
from slurmhelpers import ssh_cluster

from yanflow_tui.backends.base import TerminalLogin
from yanflow_tui.config import ClusterConfig

OTP_LOG = DIR / "log" / "sshd-otp.log"
ACCEPTED = re.compile(r"Accepted \S+ for \S+ from \S+ port (\d+)")


def openssh(cluster: ClusterConfig, **options) -> ClusterConfig:
    """``cluster`` with ``ssh.transport: openssh`` (and ``options`` over its kind options)."""
    ssh = {**cluster.options["ssh"], "transport": "openssh"}
    return replace(cluster, options={**cluster.options, "ssh": ssh, **options})


def otp_openssh(**options) -> ClusterConfig:
    return openssh(otp_cluster(), **options)


def key_openssh(**options) -> ClusterConfig:
    """The key-only login node (2222): no code to spend."""
    return openssh(ssh_cluster(), **options)


@pytest.fixture
def sockets(monkeypatch) -> Iterator[Path]:
    """A short private folder that the console's cache (``XDG_CACHE_HOME``) points at, so our master
    sockets live there (and their ssh processes can be told apart by it); masters left are stopped."""
    folder = Path(tempfile.mkdtemp(prefix="yf-ssh-", dir="/tmp"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    try:
        yield folder
    finally:
        for pid in our_pids(str(folder)):
            try:
                os.kill(pid, 15)
            except ProcessLookupError:
                pass
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def otp_askpass(tmp_path, monkeypatch) -> Path:
    """OpenSSH's client answers the code prompt with fresh codes, with no terminal."""
    path = askpass(tmp_path)
    monkeypatch.setenv("SSH_ASKPASS", str(path))
    monkeypatch.setenv("SSH_ASKPASS_REQUIRE", "force")
    return tmp_path / "prompts"


def our_pids(marker: str) -> list[int]:
    """The ssh processes whose command line names ``marker`` (our socket folder)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv and os.path.basename(argv[0]) == b"ssh" and any(marker.encode() in a for a in argv):
                pids.append(int(entry.name))
    return pids


def our_connections(port: int, marker: str) -> list[int]:
    """The local ports of the TCP connections to ``port`` held by our ssh processes."""
    pids = set(our_pids(marker))
    ports = []
    for line in established(port, processes=True):
        owners = {int(p) for p in re.findall(r"pid=(\d+)", line)}
        if owners & pids:
            ports.append(int(line.split()[2].rsplit(":", 1)[1]))
    return ports


def log_size() -> int:
    return OTP_LOG.stat().st_size


def accepted_since(offset: int) -> list[int]:
    """The client ports of the logins sshd-otp accepted since ``offset`` of its log."""
    with open(OTP_LOG, "rb") as handle:
        handle.seek(offset)
        text = handle.read().decode(errors="replace")
    return [int(m.group(1)) for m in ACCEPTED.finditer(text)]


def control(login: TerminalLogin, command: str) -> subprocess.CompletedProcess:
    """``ssh -O COMMAND`` on the master of ``login`` (check, exit...)."""
    argv = list(login.check)
    argv[argv.index("check")] = command
    return subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30)


def master_pid(login: TerminalLogin) -> int:
    found = re.search(r"pid=(\d+)", control(login, "check").stderr)
    assert found, "no master running"
    return int(found.group(1))


def start_master(login: TerminalLogin) -> None:
    """Run the login with no terminal (the askpass program answers the code)."""
    started = subprocess.run(login.argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert started.returncode == 0, started.stderr
