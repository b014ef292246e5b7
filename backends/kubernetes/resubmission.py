"""A Job this console did not make (``kubectl apply``'d), given back to create again
(``Backend.native_resubmission``, what ``resume`` sends when no spec was kept): a new Job from the old one's
``spec.template`` under a new name (``<name>-resume-<n>``, at most 63 characters: the Job controller puts
the name in a pod label), without what the API server and the Job controller added (the selector, the
``controller-uid`` and ``job-name`` labels, status, uid, resourceVersion, managedFields...), with the
environment to add set in every container. Sent as a manifest written as it is (``nativefile``), through the
one gate. Pure."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

import yaml

NAME_LIMIT = 63  # a label value: the controller labels the Job's pods with its name
MAX_TRIES = 100  # names tried for a free one (each a read)
SUFFIX = "-resume-"
# Labels the Job controller puts on the template (and its selector matches): the new Job gets its own.
CONTROLLER_LABELS = ("controller-uid", "job-name")
CONTROLLER_PREFIX = "batch.kubernetes.io/"
# Metadata the server keeps of an object, not part of what was asked for.
SERVER_METADATA = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "ownerReferences",
    "finalizers",
    "selfLink",
    "generateName",
)
SERVER_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)
_RESUMED = re.compile(r"(.*)-resume-(\d+)")


def base_name(name: str) -> str:
    """The name a resumed Job's name was made from (``train-resume-2`` -> ``train``)."""
    match = _RESUMED.fullmatch(name)
    return match.group(1) if match else name


def resumed_name(name: str, n: int) -> str:
    """``<name>-resume-<n>`` within ``NAME_LIMIT``: the name cut short where it must be, never ending in
    a character a name may not end in."""
    suffix = f"{SUFFIX}{n}"
    head = base_name(name)[: NAME_LIMIT - len(suffix)].rstrip("-.")
    return f"{head or 'job'}{suffix}"


def _own_labels(labels: Any) -> dict[str, str]:
    if not isinstance(labels, dict):
        return {}
    return {k: v for k, v in labels.items() if k not in CONTROLLER_LABELS and not str(k).startswith(CONTROLLER_PREFIX)}


def _metadata(meta: Mapping[str, Any], name: str, namespace: str) -> dict[str, Any]:
    out = {k: copy.deepcopy(v) for k, v in meta.items() if k not in SERVER_METADATA}
    out["name"], out["namespace"] = name, namespace
    labels = _own_labels(out.pop("labels", None))
    annotations = {
        k: v
        for k, v in (out.pop("annotations", None) or {}).items()
        if k not in SERVER_ANNOTATIONS and not str(k).startswith(CONTROLLER_PREFIX)
    }
    if labels:
        out["labels"] = labels
    if annotations:
        out["annotations"] = annotations
    return out


def set_env(container: dict[str, Any], env: Mapping[str, str]) -> None:
    """``env`` set in ``container``'s environment: a variable of that name replaced where it is, else added."""
    entries = [e for e in (container.get("env") or []) if isinstance(e, dict)]
    for key, value in env.items():
        entry = {"name": key, "value": value}
        at = next((i for i, e in enumerate(entries) if e.get("name") == key), None)
        if at is None:
            entries.append(entry)
        else:
            entries[at] = entry
    container["env"] = entries


def new_job(job: Mapping[str, Any], name: str, env: Mapping[str, str]) -> dict[str, Any]:
    """A Job to create from ``job`` (as the API server holds it) under ``name``: its template and its other
    settings as they are, ``env`` set in every container. The server's and the controller's additions are
    left out, for the new Job to get its own."""
    meta = job.get("metadata") or {}
    spec = {k: copy.deepcopy(v) for k, v in (job.get("spec") or {}).items() if k not in ("selector", "manualSelector")}
    template = spec.setdefault("template", {})
    tmeta = template.get("metadata") or {}
    tmeta = {k: v for k, v in tmeta.items() if k not in SERVER_METADATA}
    labels = _own_labels(tmeta.pop("labels", None))
    if labels:
        tmeta["labels"] = labels
    if tmeta:
        template["metadata"] = tmeta
    else:
        template.pop("metadata", None)
    for container in (template.get("spec") or {}).get("containers") or []:
        if isinstance(container, dict):
            set_env(container, env)
    return {
        "apiVersion": str(job.get("apiVersion") or "batch/v1"),
        "kind": "Job",
        "metadata": _metadata(meta, name, str(meta.get("namespace") or "")),
        "spec": spec,
    }


def manifest_text(job: Mapping[str, Any], source: str) -> str:
    """The new Job as the YAML file the Submit form shows (and the console sends as written)."""
    head = f"# YanFlow: Job {source} created again under a new name (the API server's additions left out)\n"
    return head + yaml.safe_dump(dict(job), sort_keys=False, allow_unicode=True)
