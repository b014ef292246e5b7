"""Helpers for the Kubernetes tests: a running API emulator, a kubeconfig pointing at it, and a
backend/cluster config over that kubeconfig."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakes.k8s_api import K8sEmulator

from yanflow_tui.backends.kubernetes.manifests import INDEX_ANNOTATION
from yanflow_tui.config import ClusterConfig


def write_kubeconfig(
    path: Path,
    url: str,
    namespace: str = "ml",
    context: str = "emu",
    others: dict[str, str] | None = None,
    cluster_extra: dict[str, str] | None = None,
    user: dict[str, str] | None = None,
) -> Path:
    """A kubeconfig whose current context ``context`` is alice in ``namespace``; ``others``: more
    contexts (name -> namespace), each as bob (token ``<name>-token``), on the same emulator;
    ``cluster_extra``: more of the cluster's fields (``certificate-authority``...); ``user``: alice's
    credentials (default: a token)."""
    others = others or {}
    data = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": context,
        "clusters": [{"name": "emu", "cluster": {"server": url, **(cluster_extra or {})}}],
        "users": [{"name": "alice", "user": user or {"token": "not-a-real-token"}}]
        + [{"name": f"bob-{name}", "user": {"token": f"{name}-token"}} for name in others],
        "contexts": [{"name": context, "context": {"cluster": "emu", "user": "alice", "namespace": namespace}}]
        + [{"name": n, "context": {"cluster": "emu", "user": f"bob-{n}", "namespace": ns}} for n, ns in others.items()],
    }
    path.write_text(yaml.safe_dump(data))
    path.chmod(0o600)
    return path


@pytest.fixture
def emulator():
    emu = K8sEmulator().start()
    yield emu
    emu.shutdown()


@pytest.fixture
def kubeconfig(tmp_path, emulator) -> Path:
    return write_kubeconfig(tmp_path / "kubeconfig", emulator.url)


def cluster(kubeconfig: Path, name: str = "k8s", read_only: bool = False, **options: Any) -> ClusterConfig:
    return ClusterConfig(
        name, "kubernetes", read_only=read_only, refresh_seconds=0.5, options={"kubeconfig": str(kubeconfig), **options}
    )


def config_file(path: Path, kubeconfig: Path) -> Path:
    """A yanflow config at ``path`` with one cluster, ``k8s``, over ``kubeconfig`` (for CLI runs)."""
    path.write_text(
        yaml.safe_dump({"clusters": [{"name": "k8s", "kind": "kubernetes", "kubeconfig": str(kubeconfig)}]})
    )
    return path


def pod_env(container: dict, index: int) -> dict[str, str]:
    """Resolve the container's env as the kubelet would for the pod with completion index ``index``."""
    annotations = {INDEX_ANNOTATION: str(index)}
    env = {}
    for item in container["env"]:
        if "value" in item:
            env[item["name"]] = item["value"]
        else:
            path = item["valueFrom"]["fieldRef"]["fieldPath"]
            match = re.fullmatch(r"metadata\.annotations\['([^']+)'\]", path)
            assert match, path
            env[item["name"]] = annotations[match.group(1)]
    return env


@pytest.fixture
def tcp_server():
    """``tcp_server(answer)`` starts a TCP server on 127.0.0.1 (standing for a port in a pod, see
    ``emulator.streams.map_port``) and returns its port: each chunk a connection sends is answered with
    ``answer(chunk)``. Every server closes at the test's end."""
    servers: list[socket.socket] = []

    def start(answer: Callable[[bytes], bytes]) -> int:
        server = socket.create_server(("127.0.0.1", 0))
        servers.append(server)

        def serve_one(conn: socket.socket) -> None:
            with conn:
                while data := conn.recv(65536):
                    conn.sendall(answer(data))

        def serve() -> None:
            while True:
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                threading.Thread(target=serve_one, args=(conn,), daemon=True).start()

        threading.Thread(target=serve, daemon=True).start()
        return server.getsockname()[1]

    yield start
    for server in servers:
        server.close()


def read_exactly(sock: socket.socket, size: int) -> bytes:
    got = b""
    while len(got) < size:
        chunk = sock.recv(size - len(got))
        if not chunk:
            break
        got += chunk
    return got
