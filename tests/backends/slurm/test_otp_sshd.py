"""The one-time-code login node of the test cluster is real: OpenSSH's own client gets in with the
key plus a fresh TOTP code, and is refused without a code or with a code already used."""

from __future__ import annotations

import os
import subprocess

from otphelpers import DIR, OTP, PORT, askpass, otp_code, require_otp


def _ssh(env: dict[str, str]) -> subprocess.CompletedProcess:
    argv = ["ssh", "-F", "/dev/null", "-p", str(PORT), "-i", str(DIR / "ssh" / "client_ed25519")]
    argv += ["-o", f"UserKnownHostsFile={OTP / 'known_hosts'}", "-o", "IdentitiesOnly=yes"]
    argv += ["-o", "NumberOfPasswordPrompts=1", "-o", "BatchMode=no", "127.0.0.1", "echo logged-in"]
    return subprocess.run(argv, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)


def test_the_login_node_wants_the_key_and_a_fresh_code(tmp_path):
    require_otp()
    env = dict(os.environ, SSH_ASKPASS=str(askpass(tmp_path)), SSH_ASKPASS_REQUIRE="force")
    ok = _ssh(env)
    assert ok.returncode == 0 and ok.stdout.strip() == "logged-in", ok.stderr
    assert "One-time password" in (tmp_path / "prompts").read_text()

    code = otp_code()
    once = tmp_path / "once"
    once.write_text(f"#!/bin/sh\necho {code}\n")
    once.chmod(0o700)
    env["SSH_ASKPASS"] = str(once)
    assert _ssh(env).returncode == 0
    replayed = _ssh(env)  # the same code again: pam_oath refuses a replay
    assert replayed.returncode == 255 and "logged-in" not in replayed.stdout

    wrong = tmp_path / "wrong"
    wrong.write_text("#!/bin/sh\necho 000000\n")
    wrong.chmod(0o700)
    env["SSH_ASKPASS"] = str(wrong)
    assert _ssh(env).returncode == 255
