"""The local backend's declaration: kind ``local``, one option (``container``: the runtime that runs a
job's image, see ``containers``), no spec section; this machine is always discovered. Light: the
registry imports it whatever is configured."""

from __future__ import annotations

from collections.abc import Mapping

from yanflow_tui.backends.base import BackendInfo
from yanflow_tui.model import ClusterConfig


def discover(env: Mapping[str, str]) -> list[ClusterConfig]:
    return [ClusterConfig("local", "local", description="this machine")]


INFO = BackendInfo(
    kind="local",
    backend="yanflow_tui.backends.local.backend:LocalBackend",
    options=("container",),
    discover=discover,
)
