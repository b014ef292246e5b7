"""A private sshd in front of the loopback Slurm cluster, for tests that fault the login node.

It reuses the cluster's host and client keys (so known_hosts matches) but listens on its own port,
so a test can put wrappers first on the login node's ``PATH``, stop it, restart it, or kill the
sessions it serves without disturbing the shared sshd on port 2222 that other tests use.

    with PrivateSshd(path_prefix=wrapper_dir) as sshd:
        cluster = sshd.cluster(command_timeout=12)
        ...
        sshd.kill_sessions()   # drop every connection it serves (the listener stays)
        sshd.stop(); sshd.start()
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
from dataclasses import replace
from pathlib import Path

from slurmhelpers import CONF, DIR, require_cluster, ssh_cluster
from waiting import wait_until

SSHD = "/usr/sbin/sshd"
SFTP_SERVER = "/usr/lib/openssh/sftp-server"  # run by the forced command as any command is


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PrivateSshd:
    """One sshd on 127.0.0.1:<free port>, configured like the cluster's own, with
    ``path_prefix`` (a folder) first on the login node's ``PATH`` when given, and the public keys in
    the file ``authorized`` (no space in its path) let in besides the cluster's client key. It has no
    SFTP subsystem unless ``sftp`` names its program (``SFTP_SERVER``; ``internal-sftp``, which the
    forced command takes over, makes one that is granted and then ends at once)."""

    def __init__(
        self,
        workdir: Path | None = None,
        path_prefix: Path | None = None,
        authorized: Path | None = None,
        sftp: str | None = None,
    ):
        require_cluster()
        self.port = free_port()
        self.dir = Path(workdir or DIR / "run" / f"private-sshd-{self.port}")
        self._own_dir = workdir is None  # ours to remove at the end
        self.dir.mkdir(parents=True, exist_ok=True)
        self.pidfile = self.dir / "sshd.pid"
        self.log = self.dir / "sshd.log"
        # The user's shell rc files set PATH after sshd's SetEnv, so put the prefix first the way a
        # site's profile would: a ForceCommand that extends PATH, then runs the client's command.
        self.shell = self.dir / "login-shell"
        prefix = f'PATH={path_prefix}:"$PATH"; export PATH; ' if path_prefix else ""
        self.shell.write_text(f'#!/bin/sh\n{prefix}exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"\n')
        self.shell.chmod(0o755)
        self.config = self.dir / "sshd_config"
        self.config.write_text(
            f"ListenAddress 127.0.0.1\nPort {self.port}\n"
            f"HostKey {DIR}/ssh/host_ed25519\nPidFile {self.pidfile}\n"
            f"AuthorizedKeysFile {DIR}/ssh/authorized_keys {authorized or ''}\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
            "PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\n"
            "MaxSessions 10\nMaxStartups 50:30:100\n"
            f"SetEnv SLURM_CONF={CONF}\nForceCommand {self.shell}\n" + (f"Subsystem sftp {sftp}\n" if sftp else "")
        )
        self.known_hosts = self.dir / "known_hosts"
        host_key = (DIR / "ssh" / "host_ed25519.pub").read_text().split()
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {host_key[0]} {host_key[1]}\n")

    def __enter__(self) -> PrivateSshd:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.kill_sessions()
        self.stop()
        if self._own_dir:  # the cluster's run folder is not left a folder per test run
            shutil.rmtree(self.dir, ignore_errors=True)

    def cluster(self, **options):
        """The cluster's SSH config pointed at this sshd; ``options`` override kind options."""
        base = ssh_cluster(**options)
        ssh = dict(base.options["ssh"], port=self.port, known_hosts=str(self.known_hosts))
        return replace(base, options={**base.options, "ssh": ssh})

    def _pid(self) -> int | None:
        try:
            pid = int(self.pidfile.read_text().split()[0])
            os.kill(pid, 0)
            return pid
        except (OSError, ValueError, IndexError):
            return None

    def start(self) -> None:
        if self._pid():
            return
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        subprocess.run([SSHD, "-f", str(self.config), "-E", str(self.log)], check=True)
        wait_until(self._listening, timeout=15, what=f"private sshd on port {self.port}")

    def _listening(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    def stop(self) -> None:
        """Stop the listener; sessions already open keep running (as with a real sshd restart)."""
        pid = self._pid()
        if pid:
            os.kill(pid, signal.SIGTERM)
            wait_until(lambda: not self._listening(), timeout=15, what="private sshd to stop")

    def kill_sessions(self) -> None:
        """Kill every per-connection sshd the listener forked: each client sees its connection
        drop, as when a login node reboots or a network link dies. Call it before ``stop``."""
        listener = self._pid()
        if not listener:
            return
        out = subprocess.run(["ps", "-eo", "pid=,ppid="], capture_output=True, text=True).stdout
        for line in out.splitlines():
            pid, ppid = map(int, line.split())
            if ppid == listener:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
