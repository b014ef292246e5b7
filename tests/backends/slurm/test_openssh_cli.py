"""A command line (``yanflow-tui nodes``) on a cluster with ``transport: openssh`` starts the ssh master
itself when none runs, and leaves it running for the console (ControlPersist): in a pipe with ssh's
BatchMode (a key that needs no prompt logs in; one that does fails with a command-line wording,
never a console key); in a terminal with ssh's own passphrase prompt. The cluster is an alias of an
ssh config file, as a user's ``~/.ssh/config`` would hold it: OpenSSH reads the passwd home's config
and not ``$HOME``'s, so an ``ssh`` first on ``PATH`` adds ``-F FILE``."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from jobhelpers import run_cli
from opensshhelpers import control, master_pid
from private_sshd import PrivateSshd
from slurmhelpers import DIR
from terminal import Terminal

from yanflow_tui.backends.base import TerminalLogin
from yanflow_tui.backends.slurm.openssh import OpenSSHTransport
from yanflow_tui.backends.slurm.transport import SshTarget
from yanflow_tui.termlogin import logged_in

KEY = DIR / "ssh" / "client_ed25519"
ALIAS = "yf-cli-login"
PASSPHRASE = "open sesame"


class Alias:
    """``ALIAS`` in an ssh config file, the ``ssh`` on ``PATH`` that reads it, and a yanflow config
    whose cluster ``cli`` reaches it over OpenSSH."""

    def __init__(self, folder: Path, port: int, key: Path, known_hosts: Path):
        self.ssh_config = folder / "ssh_config"
        self.ssh_config.write_text(
            f"Host {ALIAS}\n  HostName 127.0.0.1\n  Port {port}\n  User root\n  IdentityFile {key}\n"
            f"  IdentitiesOnly yes\n  UserKnownHostsFile {known_hosts}\n  StrictHostKeyChecking yes\n"
        )
        self.bin = folder / "bin"
        self.bin.mkdir()
        wrapper = self.bin / "ssh"
        wrapper.write_text(f'#!/bin/sh\nexec /usr/bin/ssh -F {self.ssh_config} "$@"\n')
        wrapper.chmod(0o755)
        self.config = folder / "config.yaml"
        cluster = {"name": "cli", "kind": "slurm", "ssh": {"host": ALIAS, "transport": "openssh"}}
        self.config.write_text(yaml.safe_dump({"clusters": [cluster]}))
        self.path = f"{self.bin}:{os.environ.get('PATH', '/usr/bin:/bin')}"

    def login(self) -> TerminalLogin:
        """The master's login as the command's transport makes it (same ControlPath)."""
        ssh = ("ssh", "-F", str(self.ssh_config))
        return OpenSSHTransport(SshTarget(ALIAS, transport="openssh"), cluster="cli", ssh=ssh).login()


@pytest.fixture
def no_agent(monkeypatch):
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)


@pytest.fixture
def alias(tmp_path, monkeypatch, slurm_dir, sockets, no_agent) -> Iterator[Alias]:
    """The shared login node (2222) and its client key, which needs no passphrase."""
    made = Alias(tmp_path, 2222, KEY, DIR / "ssh" / "known_hosts")
    monkeypatch.setenv("PATH", made.path)
    try:
        yield made
    finally:
        control(made.login(), "exit")


def test_nodes_in_a_pipe_starts_the_master_in_batch_mode_and_leaves_it(home, alias):
    login = alias.login()
    assert not logged_in(login)  # no master yet: the defect said "master not running: press l to log in"
    listed = run_cli("nodes", "--cluster", "cli", "--config", str(alias.config), timeout=90)
    assert listed.returncode == 0, listed.stderr
    assert "gpu01" in listed.stdout and "cpu01" in listed.stdout
    assert logged_in(login)  # left running for the console and the next command
    pid = master_pid(login)
    again = run_cli("jobs", "--cluster", "cli", "--config", str(alias.config), timeout=90)
    assert again.returncode == 0, again.stderr
    assert master_pid(login) == pid  # the same master served it: no second login


def test_a_key_that_needs_a_passphrase_fails_in_a_pipe_with_a_command_line_wording(home, alias, tmp_path):
    locked = tmp_path / "locked key"
    locked.write_bytes(KEY.read_bytes())
    locked.chmod(0o600)
    subprocess.run(["ssh-keygen", "-q", "-p", "-N", PASSPHRASE, "-f", str(locked)], check=True, capture_output=True)
    alias.ssh_config.write_text(alias.ssh_config.read_text().replace(str(KEY), f'"{locked}"'))
    failed = run_cli("nodes", "--cluster", "cli", "--config", str(alias.config), timeout=90)
    assert failed.returncode != 0
    err = failed.stderr
    assert "yanflow-tui: error: cluster 'cli': ssh master for" in err
    assert "login failed with no terminal to answer prompts (" in err and "Permission denied" in err
    assert "run the command in a terminal, or add the key to ssh-agent" in err
    assert "master not running" in err  # the command's own error for the cluster
    assert "press" not in err and "Traceback" not in err
    assert not logged_in(alias.login())


@pytest.fixture
def passphrase_key(tmp_path_factory) -> Path:
    key = tmp_path_factory.mktemp("key") / "id_ed25519"
    argv = ["ssh-keygen", "-q", "-t", "ed25519", "-N", PASSPHRASE, "-C", "cli", "-f", str(key)]
    subprocess.run(argv, check=True, capture_output=True)
    return key


def test_nodes_in_a_terminal_asks_the_passphrase_at_ssh_s_own_prompt(
    home, tmp_path, slurm_dir, sockets, no_agent, passphrase_key
):
    authorized = tmp_path / "authorized_keys"
    authorized.write_text(Path(f"{passphrase_key}.pub").read_text())
    with PrivateSshd(authorized=authorized) as sshd:
        made = Alias(tmp_path, sshd.port, passphrase_key, sshd.known_hosts)
        login = made.login()
        env = {"PATH": made.path, "XDG_CACHE_HOME": str(sockets)}
        argv = [sys.executable, "-m", "yanflow_tui", "nodes", "--cluster", "cli", "--config", str(made.config)]
        term = Terminal(argv, home, 120, 30, env)
        try:
            term.wait_text("cluster cli: logging in", timeout=30)
            term.wait_text(f"Enter passphrase for key '{passphrase_key}'", timeout=30)
            term.press(PASSPHRASE, "enter")
            term.wait_text("gpu01", timeout=60)
            assert term.exit_code(30) == 0
            assert "press" not in term.text()
            assert logged_in(login)  # the master stays for the console
        finally:
            term.close()
            control(login, "exit")
