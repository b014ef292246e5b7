"""The Determined backend's declaration: its config options, the ``determined:`` section of a job spec
(an experiment may give its ``entrypoint`` instead of a command), and discovery ($DET_MASTER). Light:
it does not import the ``determined`` SDK."""

from __future__ import annotations

from collections.abc import Mapping

from yanflow_tui.backends.base import BackendInfo
from yanflow_tui.backends.determined import nativefile
from yanflow_tui.model import ClusterConfig

SECTION = {
    "resource_pool": "text",
    "searcher": "map",
    "hyperparameters": "map",
    "context": "text",
    "entrypoint": "text",
    "max_restarts": "whole",
    "description": "text",
    "checkpoint_storage": "map",
    "labels": "list",
    "config": "map",  # merged into the experiment (or command) config, over what the spec makes
}


def discover(env: Mapping[str, str]) -> list[ClusterConfig]:
    master = env.get("DET_MASTER")
    return [ClusterConfig("determined", "determined", options={"master": master})] if master else []


INFO = BackendInfo(
    kind="determined",
    backend="yanflow_tui.backends.determined.backend:DeterminedBackend",
    options=("master", "user", "cert", "noverify", "all_users"),
    section=SECTION,
    multiline=("description",),
    entrypoint="entrypoint",
    discover=discover,
    native=(nativefile.FORMAT,),
    extra="yanflow-tui[determined]",
)
