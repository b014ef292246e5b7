"""Kubeconfig files as kubectl reads them: which files (``$KUBECONFIG``, else ``~/.kube/config``) and
their merge. Light: plain YAML, no ``kubernetes`` client.

kubectl's rules (https://kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig/
#merging-kubeconfig-files): files listed in ``$KUBECONFIG`` that do not exist are skipped; for the maps
(clusters, users, contexts) the first file that defines a name wins; ``current-context`` comes from the
first file that sets it; the namespace is the chosen context's, else ``default``.

The client's ``KubeConfigMerger`` keeps the first definition of a name too, but takes ``current-context``
from the *last* file that sets it and refuses empty files; :func:`paths` and :func:`merge` give the
backend what it needs to correct both.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from yanflow_tui.errors import BackendError

MAPS = ("clusters", "users", "contexts")


def split(spec: str) -> list[Path]:
    """The existing files of a ``KUBECONFIG``-style list (``a:b``), in order, ``~`` expanded."""
    found: list[Path] = []
    for part in spec.split(os.pathsep):
        path = Path(os.path.expanduser(part)) if part else None
        if path is not None and path.is_file() and path not in found:
            found.append(path)
    return found


def paths(env: Mapping[str, str], explicit: str | None = None) -> list[Path]:
    """The files kubectl would read: ``explicit`` (a path or a list), else ``$KUBECONFIG``, else ~/.kube/config."""
    if explicit:
        return split(explicit)
    if env.get("KUBECONFIG"):
        return split(env["KUBECONFIG"])
    home = env.get("HOME") or os.path.expanduser("~")
    default = Path(home) / ".kube" / "config"
    return [default] if default.is_file() else []


def load(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BackendError(f"kubeconfig: {exc.strerror or exc}: {path}") from None
    except yaml.YAMLError as exc:
        raise BackendError(f"kubeconfig {path}: invalid YAML ({exc})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise BackendError(f"kubeconfig {path}: not a mapping")
    return data


def merge(files: Sequence[Path]) -> dict[str, Any]:
    """One config from ``files`` by kubectl's rules (first definition of a name, first current-context)."""
    merged: dict[str, Any] = {name: [] for name in MAPS}
    merged["current-context"] = ""
    for path in files:
        data = load(path)
        for name in MAPS:
            known = {entry.get("name") for entry in merged[name]}
            for entry in data.get(name) or ():
                if isinstance(entry, dict) and entry.get("name") not in known:
                    merged[name].append(entry)
                    known.add(entry.get("name"))
        if not merged["current-context"] and data.get("current-context"):
            merged["current-context"] = str(data["current-context"])
    return merged


def contexts(merged: Mapping[str, Any]) -> list[str]:
    return [str(entry["name"]) for entry in merged.get("contexts") or () if entry.get("name")]


def context_namespace(merged: Mapping[str, Any], context: str | None = None) -> str:
    """The namespace of ``context`` (else the current one), else ``default``."""
    wanted = context or merged.get("current-context")
    for entry in merged.get("contexts") or ():
        if entry.get("name") == wanted:
            return str((entry.get("context") or {}).get("namespace") or "default")
    return "default"


def context_users(merged: Mapping[str, Any]) -> dict[str, str]:
    """Each context's user (its ``user:`` entry, the name of a kubeconfig ``users`` item)."""
    return {
        str(entry["name"]): str((entry.get("context") or {}).get("user") or "")
        for entry in merged.get("contexts") or ()
        if entry.get("name")
    }


def nonempty(files: Sequence[Path]) -> list[Path]:
    """The files the client's merger accepts (it refuses an empty one; kubectl reads it as nothing)."""
    return [path for path in files if load(path)]
