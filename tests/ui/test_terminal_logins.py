"""Logins in a real terminal: the console runs in a pseudo-terminal with the real Slurm test cluster
over SSH, a Determined master that needs a password, and a master that cannot be reached. The
password prompt that opens never holds back the Slurm cluster, the dead master never asks, a wrong
password never brings the prompt back, and the Clusters screen (``5``) says where each one stands."""

from __future__ import annotations

import sys

import yaml
from dethelpers import seed
from private_sshd import free_port
from slurmhelpers import DIR, require_cluster
from terminal import Terminal
from waiting import wait_until


def test_a_password_prompt_never_delays_another_cluster_and_fails_without_coming_back(master, home, tmp_path):
    require_cluster()
    seed(master)
    slurm = yaml.safe_load((DIR / "yanflow.yaml").read_text())["clusters"][0]
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "clusters": [
                    {"name": "det", "kind": "determined", "master": master.url, "user": "alice"},
                    {
                        "name": "dead",
                        "kind": "determined",
                        "master": f"http://127.0.0.1:{free_port()}",
                        "user": "alice",
                    },
                    {**slurm, "refresh_seconds": 1},
                ]
            }
        )
    )
    term = Terminal([sys.executable, "-m", "yanflow_tui", "--config", str(config)], home, 100, 30)
    try:
        term.wait_text("Password for alice on det:", timeout=40)
        # While the prompt is open the Slurm cluster refreshes: its age in the header, never "connecting".
        term.wait(
            lambda text: (
                "Password for alice on det:" in text
                and "slurm-test connecting" not in text
                and "slurm-test " in text
                and "dead error" in text
                and text
            ),
            "Slurm healthy under the prompt",
            timeout=40,
        )
        term.press("wrong-password", "enter")
        term.wait_gone("Password for alice on det:")
        term.wait_text("det login needed", timeout=20)
        asked = len(master.requests)
        term.press("r")  # another refresh of every cluster: the prompt stays shut
        wait_until(lambda: len(master.requests) > asked, 20, "det read again after r", pause=term.pump)
        term.press("5")
        term.wait_title("Clusters")
        text = term.wait(lambda t: "cannot reach the master" in t and t, "the dead master's error", timeout=20)
        assert "Password for" not in text
        term.press("1")
        term.wait_title("Queue")
        assert "Password for" not in term.text()
        term.press("q")
        assert term.exit_code() == 0
    finally:
        term.close()
