"""The OpenSSH transport (``ssh: {transport: openssh}``) against the REAL login nodes of the test
cluster: the one-time-code sshd (2224: the key, then a TOTP code through PAM) and the key-only one
(2222). A master started with the code serves a whole session over ONE TCP connection; a master the
user runs at their own ControlPath is used as is and survives the console; the user's ssh config
(an alias, a ``Match`` block, a ProxyJump) decides the route; a gone or killed master makes the
cluster stale (never a crash, never a prompt, never a connection of its own); a timed-out command's
ssh is killed at once, and a closed log follow stops the remote tail."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import time
from dataclasses import replace

import pytest
from opensshhelpers import (
    accepted_since,
    control,
    key_openssh,
    log_size,
    master_pid,
    otp_openssh,
    our_connections,
    start_master,
)
from otphelpers import DIR, OTP, PORT
from slurmhelpers import live_state, short_spec_text
from waiting import async_wait_until

from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.backends.slurm.openssh import NO_MASTER, OpenSSHTransport, control_dir
from yanflow_tui.backends.slurm.transport import CommandTimeout, SshTarget, SshTransport, parse_ssh_option
from yanflow_tui.config import Config
from yanflow_tui.errors import ConfigError, LoginInTerminal
from yanflow_tui.hub import Health, Hub
from yanflow_tui.spec import parse_spec
from yanflow_tui.termlogin import logged_in

KEY = str(DIR / "ssh" / "client_ed25519")


def tails(path: str) -> list[str]:
    out = subprocess.run(["pgrep", "-af", "tail -n"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if path in line]


def mux_only(transport: OpenSSHTransport) -> None:
    """Every ssh the transport ran was a client of the master that could never open its own connection."""
    assert transport.commands
    for argv in transport.commands:
        joined = " ".join(argv)
        assert "-o ControlMaster=no" in joined and "-o BatchMode=yes" in joined and "ProxyCommand=false" in joined
        assert "-M" not in argv


def test_the_transport_is_chosen_per_cluster_and_a_wrong_one_is_a_config_error():
    assert parse_ssh_option({"host": "login"}).transport == "asyncssh"
    assert parse_ssh_option("alice@login:2200").transport == "asyncssh"
    assert parse_ssh_option({"host": "login", "transport": "openssh"}).transport == "openssh"
    with pytest.raises(
        ConfigError, match=r"clusters\[hpc\]\.ssh\.transport: expected asyncssh or openssh, got 'putty'"
    ):
        parse_ssh_option({"host": "login", "transport": "putty"}, "hpc")
    assert isinstance(SlurmBackend(otp_openssh()).transport, OpenSSHTransport)
    assert isinstance(SlurmBackend(replace(otp_openssh(), options={"ssh": "root@x"})).transport, SshTransport)


def test_our_socket_folder_is_private_and_short_enough(tmp_path):
    long = tmp_path / ("x" * 80)
    folder = control_dir(long)
    assert folder != long and len(str(folder)) < 60  # a socket path has at most 104 bytes
    assert os.stat(folder).st_mode & 0o777 == 0o700
    mine = tmp_path / "s"
    mine.mkdir(mode=0o755)
    assert control_dir(mine) == mine and os.stat(mine).st_mode & 0o777 == 0o700


async def test_one_connection_to_the_code_login_node_serves_a_whole_session(sockets, otp_askpass, slurm_jobs):
    backend = SlurmBackend(otp_openssh(nodes_refresh_seconds=0))
    transport = backend.transport
    assert isinstance(transport, OpenSSHTransport)
    marker = str(sockets)
    with pytest.raises(LoginInTerminal, match=re.escape(NO_MASTER)):  # no master yet: nothing runs, nothing prompts
        await backend.list_jobs()
    assert transport.commands == [] and our_connections(PORT, marker) == []
    login = backend.terminal_login()
    assert login is not None and not logged_in(login)
    assert login.argv[-2:] == ("--", "127.0.0.1") and {"-M", "-N", "-f"} <= set(login.argv)
    offset = log_size()
    start_master(login)  # as the user would, answering the code (askpass here)
    assert "One-time password" in otp_askpass.read_text()
    assert logged_in(login)
    seen = set(our_connections(PORT, marker))
    assert len(seen) == 1

    def one() -> bool:
        ports = our_connections(PORT, marker)
        seen.update(ports)
        assert len(ports) == 1, ports
        return True

    try:
        for _ in range(3):  # refreshes of the queue and the nodes
            await backend.list_jobs()
            await backend.list_nodes()
            one()
        job_id = slurm_jobs.add(
            await backend.submit(parse_spec(short_spec_text("yf-openssh", lines=6, nodes=1, gpus=1, delay=0.3)))
        )
        one()
        lines = []
        async for line in backend.stream_logs(job_id, follow=True):  # tail -F through the master
            lines.append(line.text)
            one()
        assert [f"line {i}" for i in range(1, 7)] == [x for x in lines if x.startswith("line ")] and "done" in lines
        sleeper = slurm_jobs.add(
            await backend.submit(
                parse_spec(
                    "name: yf-openssh-cancel\nkind: slurm\ncommand: sleep 300\nresources: {cpus: 1, memory: 100M}\n"
                    "slurm: {partition: cpu, output: /dev/null}\n"
                )
            )
        )
        await backend.cancel(sleeper)
        await async_wait_until(lambda: live_state(sleeper) in ("CANCELLED", None), 20, "cancelled")
        await backend.list_jobs()
        one()
        assert {"squeue", "sinfo", "sbatch", "scancel", "tail"} <= {argv[0] for argv in transport.history}
        mux_only(transport)
        assert len(seen) == 1  # the same connection all along
        assert accepted_since(offset).count(next(iter(seen))) == 1  # sshd's log: one login, our master's
        await backend.close()
        assert logged_in(login)  # the console leaves the master: it persists for the next start
    finally:
        control(login, "exit")


async def test_a_master_the_user_runs_at_their_own_control_path_is_used_as_is_and_outlives_us(sockets):
    path = sockets / "user-%r@%h:%p"
    config = sockets / "config"
    config.write_text(
        "Host yf-login\n  HostName 127.0.0.1\n  Port 2222\n  User root\n"
        f"  IdentityFile {KEY}\n  IdentitiesOnly yes\n  UserKnownHostsFile {DIR / 'ssh' / 'known_hosts'}\n"
        f"  ControlPath {path}\n"
    )
    # The alias as given: host, port, user and key come from the user's ssh config (-F here).
    transport = OpenSSHTransport(SshTarget("yf-login", transport="openssh"), 20, "mine", ssh=("ssh", "-F", str(config)))
    own, users = transport.control_path()
    assert users and own == str(sockets / "user-root@127.0.0.1:2222")
    login = transport.login()
    start = await asyncio.to_thread(
        subprocess.run,
        ["ssh", "-F", str(config), "-M", "-N", "-f", "-o", "ControlPersist=60", "yf-login"],
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert start.returncode == 0
    try:
        assert logged_in(login)
        before = our_connections(2222, str(sockets))
        assert len(before) == 1
        assert (await transport.check(["id", "-un"])).strip() == "root"
        assert (await transport.check(["sh", "-c", "echo $SLURM_CONF"])).strip()  # sshd's env: the cluster's
        assert our_connections(2222, str(sockets)) == before  # no new connection
        mux_only(transport)
        assert all(str(config) in argv for argv in transport.commands)
        await transport.close()
        assert logged_in(login)  # the user's master is theirs
    finally:
        control(login, "exit")


async def test_the_users_ssh_config_decides_the_route_a_match_block_and_a_jump_host(sockets, otp_askpass):
    config = sockets / "config"
    config.write_text(
        f"Host yf-jump\n  HostName 127.0.0.1\n  Port 2222\n  User root\n  IdentityFile {KEY}\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {DIR / 'ssh' / 'known_hosts'}\n"
        "Match host yf-otp\n  HostName 127.0.0.1\n  Port 2224\n  User root\n  ProxyJump yf-jump\n"
        f"  IdentityFile {KEY}\n  IdentitiesOnly yes\n  UserKnownHostsFile {OTP / 'known_hosts'}\n"
    )
    transport = OpenSSHTransport(SshTarget("yf-otp", transport="openssh"), 20, "jumped", ssh=("ssh", "-F", str(config)))
    assert not transport.control_path()[1]  # no ControlPath in that config: ours
    login = transport.login()
    await asyncio.to_thread(start_master, login)  # the code asked through the jump host
    try:
        seen = our_connections(2222, str(sockets))
        assert len(seen) == 1 and our_connections(PORT, str(sockets)) == []  # only the jump's -W, to 2222
        for _ in range(3):
            where = (await transport.check(["sh", "-c", "echo $SSH_CONNECTION"])).split()
            assert where[3] == str(PORT)  # the code login node, reached through the jump host
            assert our_connections(2222, str(sockets)) == seen
        mux_only(transport)
    finally:
        control(login, "exit")


async def test_a_gone_or_killed_master_makes_the_cluster_stale_and_a_new_one_brings_it_back(sockets):
    cluster = key_openssh()
    hub = Hub(Config(clusters=(cluster,)))
    backend = hub.backend(cluster.name)
    transport = backend.transport
    assert isinstance(transport, OpenSSHTransport)
    login = backend.terminal_login()
    assert login is not None
    try:
        snap = await hub.refresh(cluster.name)
        assert snap.health is Health.ERROR and snap.terminal_login and snap.needs_login
        assert NO_MASTER in snap.message and "root@127.0.0.1:2222" in snap.message
        await asyncio.to_thread(start_master, login)
        snap = await hub.refresh(cluster.name)
        assert snap.health is Health.OK and not snap.terminal_login and snap.nodes
        printed = await transport.run(["printf", "\\377ok\\n"])  # the bytes as printed; decoded when read
        assert printed.data == b"\xffok\n" and printed.stdout == "\ufffdok\n"
        control(login, "exit")  # gone: its socket too
        snap = await hub.refresh(cluster.name)
        assert snap.health is Health.STALE and snap.terminal_login and NO_MASTER in snap.message
        await asyncio.to_thread(start_master, login)
        assert (await hub.refresh(cluster.name)).health is Health.OK
        os.kill(master_pid(login), signal.SIGKILL)  # killed: its socket stays behind, dead
        await async_wait_until(lambda: not logged_in(login), 10, "master dead")
        assert await asyncio.to_thread(os.path.exists, transport.control_path()[0])
        snap = await hub.refresh(cluster.name)
        assert snap.health is Health.STALE and snap.terminal_login and NO_MASTER in snap.message
        assert our_connections(2222, str(sockets)) == []  # the commands never connected by themselves
        mux_only(transport)
    finally:
        control(login, "exit")
        await hub.close()


async def test_a_timed_out_command_kills_its_ssh_and_a_closed_stream_stops_the_remote_tail(sockets, tmp_path):
    backend = SlurmBackend(key_openssh())
    transport = backend.transport
    assert isinstance(transport, OpenSSHTransport)
    login = backend.terminal_login()
    assert login is not None
    await asyncio.to_thread(start_master, login)
    spawned = []
    spawn = transport._spawn

    async def spy():
        proc = await spawn()
        spawned.append(proc)
        return proc

    transport._spawn = spy  # type: ignore[method-assign]
    try:
        began = time.monotonic()
        with pytest.raises(CommandTimeout, match="sleep did not answer within 1 s"):
            await transport.run(["sleep", "29.5"], timeout=1)
        assert time.monotonic() - began < 10  # said at once, not when the remote sleep ends
        (proc,) = spawned
        # killed (its process group), not left to finish
        await async_wait_until(lambda: proc.returncode == -signal.SIGKILL, 5, "the ssh killed")
        assert (await transport.check(["echo", "still"])).strip() == "still"  # the master serves on
        assert transport.history[-2:] == [("sleep", "29.5"), ("echo", "still")]
        log = tmp_path / "followed.log"  # the login node is this machine: the remote tail is seen here
        log.write_text("one\ntwo\n")
        stream = await transport.tail(str(log), 10, True)
        assert [await stream.__anext__(), await stream.__anext__()] == ["one", "two"]
        assert tails(str(log))
        await stream.aclose()
        await async_wait_until(lambda: not tails(str(log)), 10, "the remote tail gone")
        assert spawned[-1].returncode == 143  # ended by itself (the remote watcher killed tail), not killed here
    finally:
        control(login, "exit")
        await backend.close()


def test_known_hosts_comes_from_our_config_and_is_enforced(sockets):
    transport = OpenSSHTransport(
        SshTarget("127.0.0.1", 2224, "root", KEY, str(OTP / "known_hosts"), transport="openssh"), 20, "otp"
    )
    argv = transport.login().argv
    joined = " ".join(argv)
    assert f"UserKnownHostsFile={OTP / 'known_hosts'}" in joined and "StrictHostKeyChecking=yes" in joined
    assert "ServerAliveInterval=15" in joined and "ConnectTimeout=15" in joined
    assert str(sockets) in transport.control_path()[0] and not transport.control_path()[1]


async def test_a_socket_folder_with_a_space_and_a_percent_is_taken_literally(sockets):
    odd = sockets / "a b%C"
    target = parse_ssh_option({**key_openssh().options["ssh"]}, "odd")
    transport = OpenSSHTransport(target, 20, "odd", sockets=odd)
    path, users = transport.control_path()
    assert path.startswith(str(odd) + "/") and not users
    login = transport.login()
    await asyncio.to_thread(start_master, login)
    try:
        assert await asyncio.to_thread(os.path.exists, path)  # the socket where we said, "%C" unexpanded
        assert (await transport.check(["echo", "ok"])).strip() == "ok"
    finally:
        control(login, "exit")
