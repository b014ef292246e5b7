"""The Kubernetes backend's declaration: its config options, the ``kubernetes:`` section of a job spec,
and discovery (the kubeconfig files kubectl reads: $KUBECONFIG's existing ones, merged, else
~/.kube/config). Light: it does not import the ``kubernetes`` client."""

from __future__ import annotations

import os
from collections.abc import Mapping

from yanflow_tui.backends.base import BackendInfo
from yanflow_tui.backends.kubernetes import kubeconfig, nativefile
from yanflow_tui.errors import BackendError
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
    "pod_patch": "map",  # a strategic merge patch of the pod template ({metadata: ..., spec: ...})
}


def discover(env: Mapping[str, str]) -> list[ClusterConfig]:
    files = kubeconfig.paths(env)
    if not files:
        return []
    options: dict[str, object] = {"kubeconfig": os.pathsep.join(map(str, files))}
    try:
        current = kubeconfig.merge(files)["current-context"]
    except BackendError:
        current = ""  # the backend reports the broken file when it is used
    if current:
        options["context"] = current
    return [ClusterConfig("kubernetes", "kubernetes", options=options)]


INFO = BackendInfo(
    kind="kubernetes",
    backend="yanflow_tui.backends.kubernetes.backend:KubernetesBackend",
    # tensorboard: {command: [WORD, ...]}: the TensorBoard started in a job's pod (default ``tensorboard``)
    options=("kubeconfig", "context", "namespace", "all_namespaces", "log_tail", "log_since", "tensorboard"),
    section=SECTION,
    discover=discover,
    native=(nativefile.FORMAT,),
    extra="yanflow-tui[kubernetes]",  # the client is not in the core install
)
