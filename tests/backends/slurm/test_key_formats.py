"""Every private key a user holds logs in, on BOTH SSH transports, to a private sshd in front of the
real Slurm test cluster that lets these keys in: ed25519, ECDSA and RSA in OpenSSH's own format
(ssh-keygen's default since 7.8, its passphrase through bcrypt's KDF), RSA and ECDSA in PEM and in
PKCS#8, each with a passphrase. The passphrase comes the way each transport takes it: asyncssh asks
through the backend's prompter; OpenSSH's master asks through ssh's own prompt (``SSH_ASKPASS``
here, as there is no terminal). With no agent (``SSH_AUTH_SOCK`` unset), and with the key in a
running ssh-agent, where nothing is asked at all. A wrong passphrase is said as wrong, a missing
bcrypt as that."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from opensshhelpers import control, our_pids
from private_sshd import PrivateSshd
from prompthelpers import Prompts

from yanflow_tui.backends.slurm.openssh import OpenSSHTransport
from yanflow_tui.backends.slurm.transport import SshTransport, parse_ssh_option
from yanflow_tui.errors import AuthRequired, BackendError
from yanflow_tui.termlogin import log_in_batch, logged_in

PASSPHRASE = "sésame ouvre-toi"
# name: ssh-keygen's -t, its -m ("" for OpenSSH's own format), and the file's first line
FORMATS = {
    "openssh-ed25519": ("ed25519", "", "OPENSSH PRIVATE KEY"),
    "openssh-ecdsa": ("ecdsa", "", "OPENSSH PRIVATE KEY"),
    "openssh-rsa": ("rsa", "", "OPENSSH PRIVATE KEY"),
    "pem-rsa": ("rsa", "PEM", "RSA PRIVATE KEY"),
    "pem-ecdsa": ("ecdsa", "PEM", "EC PRIVATE KEY"),
    "pkcs8-rsa": ("rsa", "PKCS8", "ENCRYPTED PRIVATE KEY"),
    "pkcs8-ecdsa": ("ecdsa", "PKCS8", "ENCRYPTED PRIVATE KEY"),
}
FORMAT_NAMES = list(FORMATS)


@pytest.fixture(scope="module")
def keys(tmp_path_factory) -> dict[str, Path]:
    """One passphrase key per format, made as a user makes them."""
    folder = tmp_path_factory.mktemp("keys")
    made = {}
    for name, (kind, form, header) in FORMATS.items():
        path = folder / name
        argv = ["ssh-keygen", "-q", "-t", kind, "-N", PASSPHRASE, "-C", name, "-f", str(path)]
        subprocess.run(argv + (["-m", form] if form else []), check=True, capture_output=True, timeout=60)
        assert path.read_text().startswith(f"-----BEGIN {header}-----"), name
        made[name] = path
    return made


@pytest.fixture(scope="module")
def sshd(keys, tmp_path_factory) -> Iterator[PrivateSshd]:
    """A private sshd in front of the cluster that lets in the public keys of ``keys``."""
    authorized = tmp_path_factory.mktemp("authorized") / "authorized_keys"
    authorized.write_text("".join(Path(f"{path}.pub").read_text() for path in keys.values()))
    with PrivateSshd(authorized=authorized) as server:
        yield server


@pytest.fixture
def no_agent(monkeypatch):
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)


def askpass(folder: Path, answer: str, env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment in which OpenSSH's tools ask ``SSH_ASKPASS`` (which answers ``answer`` and
    logs each prompt to ``folder/prompts``), never a terminal."""
    program = folder / "askpass"
    answer_file = folder / "answer"
    answer_file.write_text(answer + "\n")
    program.write_text(f'#!/bin/sh\nprintf "%s\\n" "$1" >> {folder / "prompts"}\ncat {answer_file}\n')
    program.chmod(0o700)
    return {**(env or os.environ), "SSH_ASKPASS": str(program), "SSH_ASKPASS_REQUIRE": "force", "DISPLAY": ":0"}


def prompts_of(folder: Path) -> list[str]:
    path = folder / "prompts"
    return path.read_text().splitlines() if path.exists() else []


@pytest.fixture
def agent(tmp_path, monkeypatch) -> Iterator[Path]:
    """A private ssh-agent of our own, as $SSH_AUTH_SOCK; ``add(key)`` hands it a key."""
    sock = tmp_path / "agent.sock"
    started = subprocess.run(["ssh-agent", "-a", str(sock)], capture_output=True, text=True, check=True)
    pid = int(started.stdout.split("SSH_AGENT_PID=")[1].split(";")[0])
    monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
    try:
        yield sock
    finally:
        os.kill(pid, 15)


def add_to_agent(agent: Path, key: Path, folder: Path) -> None:
    """``ssh-add KEY``, its passphrase typed (through ssh-add's askpass)."""
    env = askpass(folder, PASSPHRASE, dict(os.environ, SSH_AUTH_SOCK=str(agent)))
    added = subprocess.run(["ssh-add", str(key)], env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    assert added.returncode == 0, added.stderr


def ssh_options(sshd: PrivateSshd, key: Path) -> dict:
    return {**sshd.cluster().options["ssh"], "identity_file": str(key)}


def asyncssh_transport(sshd: PrivateSshd, key: Path) -> SshTransport:
    return SshTransport(parse_ssh_option(ssh_options(sshd, key), "keys"), timeout=30)


def openssh_transport(sshd: PrivateSshd, key: Path) -> OpenSSHTransport:
    """The OpenSSH transport, reading no ssh config (``-F /dev/null``: ssh reads the passwd home's)."""
    return OpenSSHTransport(
        parse_ssh_option(ssh_options(sshd, key), "keys"), 30, "keys", ssh=("ssh", "-F", "/dev/null")
    )


async def nodes_through(transport) -> str:
    try:
        return await transport.check(["sinfo", "-h", "-o", "%N"])
    finally:
        await transport.close()


def test_bcrypt_is_a_dependency():
    """asyncssh reads an OpenSSH-format key with a passphrase only with bcrypt, which it does not require."""
    requires = importlib.metadata.requires("yanflow-tui") or []
    assert any(r.split(";")[0].strip().startswith("bcrypt") and ";" not in r for r in requires), requires


# -- asyncssh (the default transport): the prompter asks --------------------------------------------
@pytest.mark.parametrize("form", FORMAT_NAMES)
async def test_asyncssh_asks_the_passphrase_of_every_key_format_and_logs_in(slurm_dir, sshd, keys, form, no_agent):
    key = keys[form]
    prompts = Prompts(PASSPHRASE)
    transport = asyncssh_transport(sshd, key)
    transport.asker.prompter = prompts
    assert "gpu" in await nodes_through(transport)
    assert prompts.questions == [(f"Passphrase for key {key}:", True)]


@pytest.mark.parametrize("form", FORMAT_NAMES)
async def test_asyncssh_uses_the_agent_s_key_of_every_format_without_asking(
    slurm_dir, sshd, keys, form, agent, tmp_path
):
    add_to_agent(agent, keys[form], tmp_path)
    prompts = Prompts(PASSPHRASE)
    transport = asyncssh_transport(sshd, keys[form])
    transport.asker.prompter = prompts
    assert "gpu" in await nodes_through(transport)
    assert prompts.questions == []


@pytest.mark.parametrize("form", FORMAT_NAMES)
async def test_asyncssh_says_a_wrong_passphrase_is_wrong(slurm_dir, sshd, keys, form, no_agent):
    key = keys[form]
    prompts = Prompts("not it", "nor this", "nope")
    transport = asyncssh_transport(sshd, key)
    transport.asker.prompter = prompts
    with pytest.raises(AuthRequired, match=rf"wrong passphrase for key {key} \(3 tries\)"):
        await nodes_through(transport)
    assert [q for q, _ in prompts.questions[1:]] == [f"Wrong passphrase. Passphrase for key {key}:"] * 2


def unimportable_bcrypt(monkeypatch) -> None:
    """bcrypt as if it were not installed: not importable, and asyncssh's own check says so too."""
    from asyncssh import public_key

    monkeypatch.setitem(sys.modules, "bcrypt", None)
    monkeypatch.setattr(public_key, "_bcrypt_available", False)


@pytest.mark.parametrize("form", ["openssh-ed25519", "openssh-rsa"])
async def test_a_missing_bcrypt_is_said_as_that_never_as_a_wrong_passphrase(
    slurm_dir, sshd, keys, form, no_agent, monkeypatch
):
    unimportable_bcrypt(monkeypatch)
    key = keys[form]
    prompts = Prompts(PASSPHRASE)
    transport = asyncssh_transport(sshd, key)
    transport.asker.prompter = prompts
    with pytest.raises(BackendError) as failed:
        await nodes_through(transport)
    text = str(failed.value)
    assert f"key {key}: its passphrase cannot be tried" in text and "pip install bcrypt" in text
    assert "wrong passphrase" not in text.lower()
    assert prompts.questions == []  # no passphrase could work: none is asked for


async def test_without_bcrypt_the_keys_that_need_no_kdf_still_log_in(slurm_dir, sshd, keys, no_agent, monkeypatch):
    unimportable_bcrypt(monkeypatch)
    for form in ("pem-rsa", "pkcs8-ecdsa"):
        prompts = Prompts(PASSPHRASE)
        transport = asyncssh_transport(sshd, keys[form])
        transport.asker.prompter = prompts
        assert "gpu" in await nodes_through(transport)
        assert len(prompts.questions) == 1


# -- OpenSSH (``transport: openssh``): ssh's own prompt starts the master ----------------------------
def start_master(transport: OpenSSHTransport, env: dict[str, str]) -> subprocess.CompletedProcess:
    """The login with no terminal, as ``login.argv`` runs it (ssh asks its askpass program)."""
    login = transport.login()
    return subprocess.run(
        login.argv,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=90,
        start_new_session=True,
    )


@pytest.mark.parametrize("form", FORMAT_NAMES)
async def test_openssh_asks_the_passphrase_of_every_key_format_and_logs_in(
    slurm_dir, sshd, keys, form, no_agent, sockets, tmp_path
):
    key = keys[form]
    transport = openssh_transport(sshd, key)
    login = transport.login()
    try:
        started = start_master(transport, askpass(tmp_path, PASSPHRASE))
        assert started.returncode == 0, started.stderr
        assert prompts_of(tmp_path) == [f"Enter passphrase for key '{key}': "]
        assert logged_in(login)
        assert "gpu" in await nodes_through(transport)
    finally:
        control(login, "exit")


@pytest.mark.parametrize("form", FORMAT_NAMES)
async def test_openssh_with_the_key_in_the_agent_logs_in_with_no_terminal(
    slurm_dir, sshd, keys, form, agent, sockets, tmp_path
):
    add_to_agent(agent, keys[form], tmp_path)
    transport = openssh_transport(sshd, keys[form])
    login = transport.login()
    assert "BatchMode=yes" in login.batch and "BatchMode=yes" not in login.argv
    try:
        assert log_in_batch(login) == ""  # BatchMode: nothing could be asked, nothing needed
        assert logged_in(login)
        assert "gpu" in await nodes_through(transport)
    finally:
        control(login, "exit")


async def test_openssh_asks_again_after_a_wrong_passphrase_and_starts_no_master(
    slurm_dir, sshd, keys, no_agent, sockets, tmp_path
):
    """OpenSSH's own client says nothing of a wrong passphrase but asks again (NumberOfPasswordPrompts,
    3), then gives up on the key: no master is left."""
    key = keys["openssh-ed25519"]
    transport = openssh_transport(sshd, key)
    started = start_master(transport, askpass(tmp_path, "not it"))
    assert started.returncode != 0 and "Permission denied" in started.stderr
    assert prompts_of(tmp_path) == [f"Enter passphrase for key '{key}': "] * 3
    assert not logged_in(transport.login()) and our_pids(str(sockets)) == []


async def test_openssh_with_no_terminal_and_a_passphrase_key_fails_and_says_why(
    slurm_dir, sshd, keys, no_agent, sockets
):
    transport = openssh_transport(sshd, keys["pem-rsa"])
    why = log_in_batch(transport.login())
    assert "login failed with no terminal to answer prompts (" in why and "Permission denied" in why
    assert "ssh-agent" in why and "press" not in why
