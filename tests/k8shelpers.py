"""Helpers for the Kubernetes tests: a running API emulator, a kubeconfig pointing at it, and a
backend/cluster config over that kubeconfig."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakes.k8s_api import K8sEmulator

from yanflow_tui.backends.kubernetes.manifests import INDEX_ANNOTATION
from yanflow_tui.config import ClusterConfig


def write_kubeconfig(
    path: Path, url: str, namespace: str = "ml", context: str = "emu", others: dict[str, str] | None = None
) -> Path:
    """A kubeconfig whose current context ``context`` is alice in ``namespace``; ``others``: more
    contexts (name -> namespace), each as bob (token ``<name>-token``), on the same emulator."""
    others = others or {}
    data = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": context,
        "clusters": [{"name": "emu", "cluster": {"server": url}}],
        "users": [{"name": "alice", "user": {"token": "not-a-real-token"}}]
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
