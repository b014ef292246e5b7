"""Helpers for the one-time-code login node of the Slurm test cluster (``scripts/slurm-cluster up``
starts it on 127.0.0.1:2224: the client key, then a TOTP code through PAM and libpam-oath).

``otp_code()`` computes a code with ``oathtool`` that the sshd has never accepted: pam_oath refuses a
replayed (or older) code, so every call takes the next unused 30 s step, shared between processes
through a locked file. ``askpass(tmp_path)`` writes an ``SSH_ASKPASS`` program that prints such a code,
for OpenSSH's own client. ``connections()`` counts the TCP connections open to that sshd.
Run as a program, this module prints a fresh code."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from yanflow_tui.config import ClusterConfig, load_config

DIR = Path(os.environ.get("YANFLOW_SLURM_DIR", "/tmp/yanflow-slurm"))
OTP = DIR / "otp"
PORT = int(os.environ.get("YANFLOW_SLURM_OTP_PORT", "2224"))
STEP = 30
WINDOW = 150  # steps ahead of now we may use (the PAM stack accepts 200)
MISSING = "the one-time-code sshd is not running: run scripts/slurm-cluster up (it needs root)"


def require_otp() -> None:
    pid = DIR / "run" / "sshd-otp.pid"
    alive = pid.is_file() and Path(f"/proc/{pid.read_text().strip()}").exists()
    if not (OTP / "secret.hex").is_file() or not alive:
        pytest.fail(MISSING, pytrace=False)


def otp_code() -> str:
    """A 6-digit TOTP code for a step the sshd has not seen yet (waits when all near steps are used)."""
    secret = (OTP / "secret.hex").read_text().strip()
    with open(OTP / "last-step", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        last = int(handle.read().strip() or 0)
        while True:
            now = int(time.time()) // STEP
            step = max(now, last + 1)
            if step <= now + WINDOW:
                break
            time.sleep(1)  # every step in the window is spent: wait for time to catch up
        handle.seek(0)
        handle.truncate()
        handle.write(str(step))
    at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(step * STEP + 1))
    result = subprocess.run(
        ["oathtool", "--totp", "-d", "6", "-s", f"{STEP}s", "-N", at, secret],
        capture_output=True,
        text=True,
        check=True,
        timeout=10,
    )
    return result.stdout.strip()


def askpass(folder: Path) -> Path:
    """An ``SSH_ASKPASS`` program that answers every prompt with a fresh code (and logs the prompt
    to ``folder/prompts``)."""
    path = folder / "askpass"
    path.write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$1" >> {folder / "prompts"}\nexec {sys.executable} {Path(__file__).resolve()}\n'
    )
    path.chmod(0o700)
    return path


def established(port: int, *, processes: bool = False) -> list[str]:
    """``ss``'s lines for the TCP connections now established to ``port`` (with their owning
    processes, ``users:(("ssh",pid=...))``, when ``processes``)."""
    out = subprocess.run(
        ["ss", "-Htnp" if processes else "-Htn", "state", "established", f"( dport = :{port} )"],
        capture_output=True,
        text=True,
        check=True,
        timeout=10,
    ).stdout
    return [line for line in out.splitlines() if line.strip()]


def connections() -> int:
    """TCP connections now established to the one-time-code sshd."""
    return len(established(PORT))


def otp_cluster() -> ClusterConfig:
    """The cluster of the generated ``yanflow-otp.yaml`` (Slurm over SSH through that sshd)."""
    require_otp()
    return load_config(str(DIR / "yanflow-otp.yaml")).clusters[0]


if __name__ == "__main__":
    print(otp_code())
