"""The Clusters screen (``5``) over real failures: an unknown SSH host key on the real Slurm login
node, a wrong key in the config file, and a Kubernetes API nobody answers. Each error is shown in
full at 80x24, with its fix; the header keeps one short state per cluster; Nodes and Queue say the
error instead of an empty list."""

from __future__ import annotations

import subprocess

from k8shelpers import write_kubeconfig
from private_sshd import free_port
from slurmhelpers import DIR
from uihelpers import screen_text
from waiting import wait_for

from yanflow_tui.app import YanflowApp
from yanflow_tui.config import load_config
from yanflow_tui.hub import Health, Hub


def squeezed(text: str) -> str:
    return "".join(text.split())


def broken_config(tmp_path):
    """A config with three broken clusters; returns (path, fingerprint, known_hosts line)."""
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    known = tmp_path / "kh"
    known.write_text(f"[127.0.0.1]:2222 {' '.join(other.with_suffix('.pub').read_text().split()[:2])}\n")
    pub = (DIR / "ssh" / "host_ed25519.pub").read_text().split()
    fingerprint = subprocess.run(
        ["ssh-keygen", "-lf", str(DIR / "ssh" / "host_ed25519.pub")], capture_output=True, text=True, check=True
    ).stdout.split()[1]
    kubeconfig = write_kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{free_port()}")
    path = tmp_path / "c.yaml"
    path.write_text(
        "clusters:\n"
        "  - name: hostkey\n    kind: slurm\n"
        f"    ssh: {{host: 127.0.0.1, port: 2222, user: root, identity_file: {DIR}/ssh/client_ed25519,"
        f" known_hosts: {known}}}\n"
        "  - name: badkey\n    kind: slurm\n    sssh: login\n"
        f"  - name: k8s\n    kind: kubernetes\n    kubeconfig: {kubeconfig}\n"
    )
    return path, fingerprint, f"[127.0.0.1]:2222 {pub[0]} {pub[1]}", known


async def test_the_clusters_screen_shows_each_error_in_full_at_80x24(home, slurm_dir, tmp_path):
    path, fingerprint, line, known = broken_config(tmp_path)
    config = load_config(str(path), lenient=True)  # as the console loads it: the bad entry does not stop it
    app = YanflowApp(config, Hub(config))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(
            pilot,
            lambda: all(s.health is Health.ERROR for s in app.hub.snapshots.values()),
            timeout=40,
            what="three clusters in error",
        )
        await wait_for(
            pilot,
            lambda: all(f"{name} error" in screen_text(app) for name in ("hostkey", "badkey", "k8s")),
            what="the header's states",
        )  # the header
        await pilot.press("2")
        await wait_for(pilot, lambda: "badkey: error" in screen_text(app), what="Nodes says the error")
        assert "badkey: 0 node(s)" not in screen_text(app)
        await pilot.press("1")
        await wait_for(pilot, lambda: "badkey: error" in screen_text(app), what="Queue says the error")
        await pilot.press("5")
        await wait_for(pilot, lambda: app.current_mode == "clusters", what="Clusters screen")
        await wait_for(
            pilot,
            lambda: squeezed(f"ssh-ed25519 {fingerprint} is not in {known}") in squeezed(screen_text(app)),
            what="the errors in full",
        )
        text = screen_text(app)
        flat = squeezed(text)
        assert squeezed(f'{path}:7: clusters[1].sssh: unknown key; did you mean "ssh"?') in flat
        assert squeezed(f"ssh-ed25519 {fingerprint} is not in {known}") in flat
        assert squeezed(f"add this line to {known}: {line}") in flat
        assert "API server unreachable" in text
        assert squeezed(app.hub.snapshots["k8s"].detail) in flat
        assert "▁" not in text and "▇" not in text  # no scrollbar: nothing hidden below
        assert "The console's own log: ~/.local/state/yanflow/yanflow.log" in text
