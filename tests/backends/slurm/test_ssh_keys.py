"""SSH private keys are checked as OpenSSH checks them: a key file group or others may read is
refused, with one line naming the path and the ``chmod 600`` fix, whether it comes from our
``identity_file``, from an IdentityFile line of ~/.ssh/config, or is a default ~/.ssh/id_* key.
Against the loopback cluster's sshd: the same key at 0600 logs in."""

from __future__ import annotations

import shutil

import pytest
from slurmhelpers import DIR, ssh_cluster

from yanflow_tui.backends.slurm.transport import SshTransport, parse_ssh_option
from yanflow_tui.errors import BackendError

KEY = DIR / "ssh" / "client_ed25519"


def target(**changes):
    ssh = dict(ssh_cluster().options["ssh"], **changes)
    return parse_ssh_option({k: v for k, v in ssh.items() if v is not None}, "slurm-test")


async def run_id(transport: SshTransport) -> str:
    try:
        return (await transport.check(["id", "-un"])).strip()
    finally:
        await transport.close()


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o601])
async def test_an_identity_file_others_can_read_is_refused_with_the_fix(slurm_dir, tmp_path, mode):
    key = tmp_path / "my key"
    shutil.copy(KEY, key)
    key.chmod(mode)
    transport = SshTransport(target(identity_file=str(key)), timeout=15)
    with pytest.raises(BackendError) as refused:
        await run_id(transport)
    message = str(refused.value)
    assert "\n" not in message and str(key) in message and f"chmod 600 '{key}'" in message
    assert f"{mode:04o}" in message
    assert transport.connects == 0  # refused before any connection

    key.chmod(0o600)  # the fix it names works
    assert await run_id(SshTransport(target(identity_file=str(key)), timeout=15)) == "root"


def planted_key(home, name: str, mode: int):
    """The cluster's client key copied to ``~/.ssh/NAME`` with ``mode``."""
    ssh_dir = home / ".ssh"
    ssh_dir.mkdir(mode=0o700, exist_ok=True)
    key = ssh_dir / name
    shutil.copy(KEY, key)
    key.chmod(mode)
    return key


async def test_an_identity_file_from_ssh_config_is_checked(slurm_dir, home):
    key = planted_key(home, "cluster_key", 0o644)
    ssh_dir = key.parent
    (ssh_dir / "config").write_text(f"Host 127.0.0.1\n  IdentityFile {key}\n")
    transport = SshTransport(target(identity_file=None), timeout=15)
    with pytest.raises(BackendError, match=rf"private key {key} .*chmod 600 {key}$"):
        await run_id(transport)
    key.chmod(0o600)
    assert await run_id(SshTransport(target(identity_file=None), timeout=15)) == "root"


async def test_a_default_key_others_can_read_is_refused(slurm_dir, home):
    key = planted_key(home, "id_ed25519", 0o640)
    with pytest.raises(BackendError, match=rf"private key {key} .*mode 0640.*chmod 600 {key}$"):
        await run_id(SshTransport(target(identity_file=None), timeout=15))
    key.chmod(0o600)
    assert await run_id(SshTransport(target(identity_file=None), timeout=15)) == "root"
