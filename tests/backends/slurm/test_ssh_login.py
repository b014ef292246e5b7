"""The asyncssh login as OpenSSH's client does it, against the real login nodes of the test cluster:
a one-time code (keyboard-interactive through PAM, on the sshd at 2224) and a key's passphrase asked
through the backend's prompter, with the server's prompt text; the time spent answering left out of
every deadline; a cancel said as such and never asked again by itself; ssh-agent's keys used; every
auth error naming the host, the user and the key paths; unknown host keys refused."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from dataclasses import replace

import pytest
from otphelpers import otp_cluster, otp_code
from prompthelpers import Prompts
from slurmhelpers import DIR, ssh_cluster

from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.backends.slurm.transport import SshTransport, parse_ssh_option
from yanflow_tui.config import Config
from yanflow_tui.errors import AuthRequired, BackendError
from yanflow_tui.hub import Health, Hub

KEY = DIR / "ssh" / "client_ed25519"


def with_ssh(cluster, **changes):
    ssh = {k: v for k, v in dict(cluster.options["ssh"], **changes).items() if v is not None}
    return replace(cluster, options={**cluster.options, "ssh": ssh})


def otp_backend(prompter, **changes) -> SlurmBackend:
    backend = SlurmBackend(with_ssh(otp_cluster(), **changes))
    backend.prompter = prompter
    return backend


def transport(**changes) -> SshTransport:
    ssh = {k: v for k, v in dict(ssh_cluster().options["ssh"], **changes).items() if v is not None}
    return SshTransport(parse_ssh_option(ssh, "slurm-test"), timeout=15)


async def user_of(t: SshTransport) -> str:
    try:
        return (await t.check(["id", "-un"])).strip()
    finally:
        await t.close()


def stranger_key(tmp_path):
    """A key no login node knows."""
    key = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    return key


def host_fingerprint() -> str:
    return subprocess.run(
        ["ssh-keygen", "-lf", str(DIR / "ssh" / "host_ed25519.pub")], capture_output=True, text=True, check=True
    ).stdout.split()[1]


def encrypted_copy(tmp_path, passphrase="pass"):
    key = tmp_path / "encrypted key"
    shutil.copy(KEY, key)
    key.chmod(0o600)
    subprocess.run(["ssh-keygen", "-q", "-p", "-N", passphrase, "-f", str(key)], check=True, capture_output=True)
    return key


async def test_the_one_time_code_is_asked_through_the_prompter_and_squeue_answers(slurm_dir):
    prompts = Prompts(otp_code)
    backend = otp_backend(prompts)
    try:
        jobs = await backend.list_jobs()
        assert isinstance(jobs, list)
        assert any(argv[0] == "squeue" for argv in backend.transport.history)
        assert len(prompts.questions) == 1
        question, secret = prompts.questions[0]
        assert "One-time password" in question and secret  # masked: the server said no echo
        assert question.isprintable()
        await backend.list_nodes()  # the same connection: nothing asked again
        assert len(prompts.questions) == 1 and backend.transport.connects == 1
    finally:
        await backend.close()


async def test_time_spent_typing_the_code_is_not_counted_by_any_timeout(slurm_dir):
    async def slow_code():
        await asyncio.sleep(8)  # longer than the hub's call timeout below
        return await asyncio.to_thread(otp_code)

    prompts = Prompts(slow_code)
    backend = otp_backend(prompts)
    hub = Hub(Config((backend.config,)), backends={backend.name: backend}, timeout=6)
    try:
        snap = await hub.refresh(backend.name)
        assert snap.health is Health.OK, snap.message
        assert len(prompts.questions) == 1
    finally:
        await hub.close()


async def test_a_caller_that_gives_up_leaves_the_login_running_and_typing_is_not_timed(slurm_dir):
    async def slow_code():
        await asyncio.sleep(3)  # longer than the command's own timeout
        return await asyncio.to_thread(otp_code)

    cluster = otp_cluster()
    t = SshTransport(parse_ssh_option(cluster.options["ssh"], cluster.name), timeout=2)
    prompts = t.asker.prompter = Prompts(slow_code)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(t.check(["id", "-un"]), 0.5)  # e.g. a screen's own short timeout
    assert await user_of(t) == "root"  # joins the login still waiting on the user, its 2 s not counting it
    assert len(prompts.questions) == 1 and t.connects == 1


async def test_a_cancelled_code_says_so_and_is_not_asked_again_until_the_user_says(slurm_dir):
    prompts = Prompts(None)  # the user cancels
    backend = otp_backend(prompts)
    hub = Hub(Config((backend.config,)), backends={backend.name: backend})
    try:
        snap = await hub.refresh(backend.name)
        assert snap.health is Health.ERROR and "login cancelled" in snap.message
        assert snap.login_user == "root" and snap.login_asks
        assert "127.0.0.1:2224" in snap.message and str(KEY) in snap.message
        for _ in range(3):  # the refreshes that follow: no prompt storm, the same clear error
            snap = await hub.refresh(backend.name)
            assert "login cancelled" in snap.message and snap.login_asks
        assert len(prompts.questions) == 1

        prompts.answers = [otp_code]
        await hub.call(backend.retry_login(), backend=backend)  # the user's l: asked again, and in
        assert len(prompts.questions) == 2
        snap = await hub.refresh(backend.name)
        assert snap.health is Health.OK and not snap.login_user and not snap.login_asks
    finally:
        await hub.close()


async def test_a_wrong_code_is_said_and_not_asked_again_by_itself(slurm_dir):
    prompts = Prompts(*["000000"] * 10)  # PAM asks again after each wrong code, a few times
    backend = otp_backend(prompts)
    try:
        with pytest.raises(AuthRequired) as failed:
            await backend.list_jobs()
        asked = len(prompts.questions)
        assert asked >= 1 and failed.value.asks
        text = str(failed.value)
        assert "permission denied" in text and "root@127.0.0.1:2224" in text and str(KEY) in text
        with pytest.raises(AuthRequired):
            await backend.list_jobs()
        assert len(prompts.questions) == asked
    finally:
        await backend.close()


async def test_without_a_prompter_the_login_says_nothing_can_ask(slurm_dir):
    backend = otp_backend(None)
    try:
        with pytest.raises(
            BackendError, match=r"root@127\.0\.0\.1:2224: the login asks .One-time password.*no console or terminal"
        ):
            await backend.list_jobs()
    finally:
        await backend.close()


async def test_a_passphrase_protected_key_is_asked_for_its_passphrase(slurm_dir, tmp_path):
    key = encrypted_copy(tmp_path)
    prompts = Prompts("pass")
    t = transport(identity_file=str(key))
    t.asker.prompter = prompts
    assert await user_of(t) == "root"
    assert prompts.questions == [(f"Passphrase for key {key}:", True)]


async def test_a_wrong_passphrase_is_said_and_asked_again(slurm_dir, tmp_path):
    key = encrypted_copy(tmp_path)
    prompts = Prompts("wrong", "pass")
    t = transport(identity_file=str(key))
    t.asker.prompter = prompts
    assert await user_of(t) == "root"
    assert [q for q, _ in prompts.questions] == [
        f"Passphrase for key {key}:",
        f"Wrong passphrase. Passphrase for key {key}:",
    ]

    prompts = Prompts("wrong", "still wrong", "no")
    t = transport(identity_file=str(key))
    t.asker.prompter = prompts
    with pytest.raises(AuthRequired, match=rf"wrong passphrase for key {key} \(3 tries\)"):
        await user_of(t)
    assert len(prompts.questions) == 3


async def test_a_missing_identity_file_names_its_path(slurm_dir, tmp_path):
    missing = tmp_path / "gone" / "id_ed25519"
    t = transport(identity_file=str(missing))
    with pytest.raises(BackendError, match=rf"root@127\.0\.0\.1:2222: identity file not found: {missing}$"):
        await user_of(t)
    assert t.connects == 0


async def test_an_auth_failure_names_host_user_and_key_path(slurm_dir, tmp_path, monkeypatch):
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    stranger = stranger_key(tmp_path)
    with pytest.raises(BackendError) as refused:
        await user_of(transport(identity_file=str(stranger)))
    text = str(refused.value)
    assert "permission denied" in text and "root@127.0.0.1:2222" in text and f"tried {stranger}" in text


@pytest.fixture
def agent(tmp_path, monkeypatch):
    """A private ssh-agent holding the cluster's client key, as $SSH_AUTH_SOCK."""
    sock = tmp_path / "sock"
    started = subprocess.run(["ssh-agent", "-a", str(sock)], capture_output=True, text=True, check=True)
    pid = int(started.stdout.split("SSH_AGENT_PID=")[1].split(";")[0])
    try:
        env = dict(os.environ, SSH_AUTH_SOCK=str(sock))
        copy = tmp_path / "agent key"
        shutil.copy(KEY, copy)
        copy.chmod(0o600)
        subprocess.run(["ssh-add", str(copy)], env=env, check=True, capture_output=True)
        copy.unlink()  # only the agent has it now
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
        yield sock
    finally:
        os.kill(pid, 15)


async def test_ssh_agent_keys_log_in_with_no_identity_file(slurm_dir, home, agent):
    assert await user_of(transport(identity_file=None)) == "root"


async def test_ssh_agent_keys_come_first_even_with_an_identity_file(slurm_dir, tmp_path, agent):
    stranger = stranger_key(tmp_path)
    assert await user_of(transport(identity_file=str(stranger))) == "root"


async def test_identities_only_in_ssh_config_keeps_the_agent_s_other_keys_out(slurm_dir, home, tmp_path, agent):
    stranger = stranger_key(tmp_path)
    (home / ".ssh").mkdir(mode=0o700)
    (home / ".ssh" / "config").write_text(f"Host 127.0.0.1\n  IdentitiesOnly yes\n  IdentityFile {stranger}\n")
    with pytest.raises(BackendError, match=rf"permission denied.*tried ssh-agent \(0 keys\), {stranger}"):
        await user_of(transport(identity_file=None))
    (home / ".ssh" / "config").write_text(f"Host 127.0.0.1\n  IdentityFile {stranger}\n")
    assert await user_of(transport(identity_file=None)) == "root"


async def test_a_jump_host_that_wants_a_code_asks_it_through_the_same_prompter(slurm_dir, home, tmp_path, agent):
    """ProxyJump through the one-time-code node (its key from the agent, then the code) to the login node."""
    known = tmp_path / "known_hosts"
    pub = " ".join((DIR / "ssh" / "host_ed25519.pub").read_text().split()[:2])
    known.write_text(f"[127.0.0.1]:2222 {pub}\n[127.0.0.1]:2224 {pub}\n")
    prompts = Prompts(otp_code)
    t = transport(proxy_jump="root@127.0.0.1:2224", known_hosts=str(known))
    t.asker.prompter = prompts
    assert await user_of(t) == "root"
    assert len(prompts.questions) == 1 and "One-time password" in prompts.questions[0][0]

    t = transport(proxy_jump="root@127.0.0.1:2224", known_hosts=str(known))  # nothing can ask: the jump host said
    with pytest.raises(BackendError, match=r"root@127\.0\.0\.1:2224: the login asks .One-time password"):
        await user_of(t)


async def test_an_encrypted_file_is_not_asked_for_when_the_agent_s_key_logs_in(slurm_dir, tmp_path, agent):
    key = encrypted_copy(tmp_path)
    prompts = Prompts("pass")
    t = transport(identity_file=str(key))
    t.asker.prompter = prompts
    assert await user_of(t) == "root"
    assert prompts.questions == []  # the agent's key logged in: the passphrase was never needed


@pytest.mark.parametrize("known_as", ["unknown", "changed"])
async def test_an_unknown_or_changed_host_key_is_refused_with_its_fingerprint_and_line(slurm_dir, tmp_path, known_as):
    known = tmp_path / "known_hosts"
    if known_as == "unknown":
        known.write_text("")  # the host is in no known_hosts at all
    else:  # known_hosts holds another key for it
        other = stranger_key(tmp_path)
        known.write_text(f"[127.0.0.1]:2222 {' '.join(other.with_suffix('.pub').read_text().split()[:2])}\n")
    pub = (DIR / "ssh" / "host_ed25519.pub").read_text().split()
    fingerprint = host_fingerprint()
    t = transport(known_hosts=str(known))
    with pytest.raises(BackendError) as refused:
        await user_of(t)
    text = str(refused.value)
    assert "not trusted" in text and f"ssh-ed25519 {fingerprint}" in text and "refusing" in text
    assert f"[127.0.0.1]:2222 {pub[0]} {pub[1]}" in text
    assert t.connects == 0
