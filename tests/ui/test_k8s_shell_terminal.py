"""A real terminal (pty) runs the console over the Kubernetes emulator: ``x`` on a running job suspends
the console and opens an interactive shell in its pod (exec with a TTY, the emulator's real pty);
``echo $HOSTNAME`` answers the pod's name, ``exit`` brings the console back as it was. An exec whose
handshake the API server refuses (RBAC denies ``pods/exec``) brings the console back at once, with the
server's reason, and every key works again."""

from __future__ import annotations

import re
import sys

import yaml
from fakes.k8s_api import make_job, make_pod
from terminal import Terminal

NS = "ml"

AGE = re.compile(r" \d+[smhd]\b")  # the AGE column ticks while the shell is open


def _console(home, emulator, kubeconfig, tmp_path) -> Terminal:
    """The console over a job with one running pod, its Queue showing the job."""
    emulator.add_node("gpu-a", 8)
    emulator.put("jobs", make_job("train", NS))
    emulator.put("pods", make_pod("train-1", NS, node="gpu-a", job="train"))
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump({"clusters": [{"name": "k8s", "kind": "kubernetes", "kubeconfig": str(kubeconfig)}]})
    )
    return Terminal([sys.executable, "-m", "yanflow_tui", "--config", str(config)], home, 120, 30)


def test_x_opens_a_shell_in_the_pod_and_exit_brings_the_console_back(home, emulator, kubeconfig, tmp_path):
    term = _console(home, emulator, kubeconfig, tmp_path)
    try:
        term.wait_title("Queue", timeout=40)
        term.wait_text(r"ml/train", timeout=40)
        row = next(i for i in range(term.lines) if "ml/train" in term.line(i))
        before = _steady(term.line(row))
        term.press("x")
        term.wait_text(r"yanflow: shell in pod ml/train-1", timeout=20)
        term.press('echo "i""d=${HOSTNAME}:$(pwd)"', "enter")  # the typed line itself holds no "id="
        found = term.wait(lambda text: re.search(r"id=(\S+):(\S+)", text), "the pod's hostname echoed", timeout=20)
        assert found.group(1) == "train-1" and found.group(2) == str(emulator.streams.root(NS, "train-1"))
        assert emulator.streams.execs[-1][4] is True  # a TTY exec
        term.press("exit", "enter")
        term.wait_title("Queue", timeout=20)
        term.wait(lambda text: "id=" not in text and "ml/train" in text, "the console redrawn", timeout=20)
        term.wait(lambda text: _steady(term.line(row)) == before, f"the job's row as it was: {before!r}", timeout=20)
        term.wait_text(r"shell in pod ml/train-1 .* exited \(0\)", timeout=10)
        term.press("q")
        assert term.exit_code() == 0
    finally:
        term.close()


def test_x_whose_exec_handshake_is_refused_shows_why_and_the_console_answers_keys(home, emulator, kubeconfig, tmp_path):
    emulator.streams.refuse_exec(403, 'pods "train-1" is forbidden: User "alice" cannot create resource "pods/exec"')
    term = _console(home, emulator, kubeconfig, tmp_path)
    try:
        term.wait_title("Queue", timeout=40)
        term.wait_text(r"ml/train", timeout=40)
        term.press("x")
        term.wait_text(r"Shell failed", timeout=20)
        # The server's reason as it wrote it (wrapped in the notification; its JSON quotes undone)
        term.wait(lambda text: 'pods "train-1" is forbidden' in text and '"pods/exec"' in text, "why", timeout=5)
        assert "\\" not in term.text()
        assert not emulator.streams.execs  # refused before any command ran
        term.press("2")  # the console reads keys again: the Nodes screen
        term.wait_title("Nodes", timeout=10)
        term.press("1")
        term.wait_title("Queue", timeout=10)
        term.press("q")
        assert term.exit_code() == 0
    finally:
        term.close()


def _steady(line: str) -> str:
    """The row without what moves on by itself: its age (and the spaces around it)."""
    return AGE.sub(" AGE ", " ".join(line.split()))
