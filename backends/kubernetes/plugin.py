"""The Kubernetes backend's declaration: its config options, the ``kubernetes:`` section of a job spec,
and discovery (a kubeconfig file: $KUBECONFIG's first existing one, else ~/.kube/config). Light: it
does not import the ``kubernetes`` client."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from yanflow_tui.backends.base import BackendInfo
from yanflow_tui.model import ClusterConfig

SECTION = {
    "namespace": "text",
    "node_selector": "map",
    "tolerations": "list",
    "priority_class": "text",
    "service_account": "text",
    "gpu_resource": "text",
    "ttl_seconds_after_finished": "whole",
    "master_port": "whole",
    "image_pull_policy": "text",
}


def kubeconfig(env: Mapping[str, str]) -> Path | None:
    for part in (env.get("KUBECONFIG") or "").split(os.pathsep):
        if part and Path(part).is_file():
            return Path(part)
    home = env.get("HOME") or os.path.expanduser("~")
    default = Path(home) / ".kube" / "config"
    return default if default.is_file() else None


def discover(env: Mapping[str, str]) -> list[ClusterConfig]:
    found = kubeconfig(env)
    return [ClusterConfig("kubernetes", "kubernetes", options={"kubeconfig": str(found)})] if found else []


INFO = BackendInfo(
    kind="kubernetes",
    backend="yanflow_tui.backends.kubernetes.backend:KubernetesBackend",
    options=("kubeconfig", "context", "namespace", "all_namespaces", "log_tail", "log_since"),
    section=SECTION,
    discover=discover,
)
