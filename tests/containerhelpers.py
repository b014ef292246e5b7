"""Real podman for the container tests: a containers.conf this machine needs (runc, cgroupfs, no default
ulimits: Debian's crun fails here) and a tiny image built from a busybox rootfs with ``podman import``
(no registry is reachable). ``scripts/podman-setup`` installs podman, runc and busybox-static; without
them these tests fail, saying so."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

IMAGE = "localhost/yanflow-test-busybox:1"
APPLETS = ("sh", "echo", "cat", "sleep", "touch", "ls", "pwd", "env", "true", "false", "test", "[")
CONF = """\
[containers]
default_ulimits = []
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
"""


@dataclass(frozen=True)
class Podman:
    path: str
    conf: Path  # the containers.conf the cluster config names (container.conf)
    image: str

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, CONTAINERS_CONF=str(self.conf))
        return subprocess.run(
            [self.path, *args], capture_output=True, text=True, env=env, timeout=timeout, stdin=subprocess.DEVNULL
        )

    def containers(self, prefix: str) -> list[str]:
        """Names of every container, running or not, that starts with ``prefix`` (``podman ps -a``)."""
        result = self.run("ps", "-a", "--format", "{{.Names}}")
        assert result.returncode == 0, result.stderr
        return [name for name in result.stdout.split() if name.startswith(prefix)]


def _busybox() -> str:
    for candidate in ("/bin/busybox", "/usr/bin/busybox"):
        if os.access(candidate, os.X_OK):
            return candidate
    pytest.fail("busybox is not installed: run scripts/podman-setup (apt-get install busybox-static)")


@pytest.fixture(scope="session")
def podman(tmp_path_factory) -> Podman:
    path = shutil.which("podman")
    if path is None:
        pytest.fail("podman is not installed: run scripts/podman-setup (apt-get install podman runc busybox-static)")
    work = tmp_path_factory.mktemp("podman")
    conf = work / "containers.conf"
    conf.write_text(CONF)
    found = Podman(path, conf, IMAGE)
    _build(found, work)
    check = found.run("run", "--rm", "--network", "none", IMAGE, "echo", "ready")
    assert check.stdout.strip() == "ready", f"podman cannot run a container here: {check.stderr}"
    return found


def _build(podman: Podman, work: Path) -> None:
    """The image: busybox and its applets as links, imported from a tarball of that folder."""
    root = work / "rootfs"
    (root / "bin").mkdir(parents=True)
    shutil.copy2(_busybox(), root / "bin" / "busybox")
    for applet in APPLETS:
        (root / "bin" / applet).symlink_to("busybox")
    (root / "tmp").mkdir()
    tar = work / "rootfs.tar"
    subprocess.run(["tar", "-C", str(root), "-cf", str(tar), "."], check=True)
    podman.run("rmi", "--force", IMAGE)  # the last run's, so untagged copies do not pile up
    result = podman.run("import", "-q", str(tar), IMAGE, timeout=120)
    assert result.returncode == 0, f"podman import failed: {result.stderr}"
