"""Job specs rendered as Kubernetes manifests: a batch/v1 Job (Indexed for multi-node) plus, for
multi-node jobs, a headless Service giving pod 0 a stable DNS name for the rendezvous.

The container runs ``/bin/sh -c SCRIPT``. The script is the launcher's fixed prefix
(``yanflow_tui.launchers``), which refers only to environment variables (``$NNODES``, ``$NODE_RANK``
from the pod's completion index...) that the shell expands, followed by the user's command: an argv
list is quoted with ``shlex.join``; a shell line is kept as the user wrote it (one simple command
under a launcher). horovod is refused: it needs the MPI Operator.
No other user value (job name, env, paths) ever enters the script. Pure functions, no I/O.
"""

from __future__ import annotations

import copy
import hashlib
import re
import shlex
from typing import Any

import yaml

from yanflow_tui import launchers
from yanflow_tui.backends.kubernetes.extract import (
    ANN_COMMAND,
    ANN_KIND,
    ANN_LOGDIR,
    ANN_NAME,
    ANN_OUTPUTS,
    ANN_SUBMIT_ID,
    ANN_USER,
    INDEX_ANNOTATION,
)
from yanflow_tui.curves import LOGDIR_ENV, SECTION
from yanflow_tui.errors import BackendError
from yanflow_tui.model import JobKind, JobSpec

DEFAULT_GPU_RESOURCE = "nvidia.com/gpu"
DEFAULT_MASTER_PORT = 29500
DEFAULT_TTL = 86400
DEFAULT_IMAGE = "python:3.11-slim"
MANAGED_BY = "yanflow-tui"
JOB_LABEL = "yanflow.io/job"
NAME_PREFIX_MAX = 40
LAUNCHERS = tuple(name for name in launchers.LAUNCHERS if name != "horovod")  # horovod: MPI Operator
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def dns_name(name: str, token: str) -> str:
    """A DNS-1035 label from any spec name plus a short token: ``[a-z]([-a-z0-9]*[a-z0-9])?``."""
    base = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:NAME_PREFIX_MAX].strip("-") or "job"
    if not base[0].isalpha():
        base = "j-" + base
    return f"{base}-{token[:8]}"


def content_token(spec: JobSpec) -> str:
    """A stable short hash of the spec (used for ``--dry-run`` names; submits use a fresh token)."""
    return hashlib.sha256(repr(spec).encode()).hexdigest()[:8]


def script(spec: JobSpec) -> str:
    """The ``/bin/sh -c`` script: the launcher's fixed options + the user's command (a leading python
    dropped where the launcher runs Python itself)."""
    prefix = launchers.PER_NODE.get(spec.launcher)
    if isinstance(spec.command, tuple):
        words = launchers.handed_words(spec.launcher, spec.command)
        return f"exec {prefix} {shlex.join(words)}" if prefix else f"exec {shlex.join(words)}"
    if prefix is None:
        return spec.command
    return f"exec {prefix} {launchers.handed_line(spec.launcher, spec.command)}"


def check(spec: JobSpec) -> None:
    """Raise ``BackendError`` for what Kubernetes cannot run as asked."""
    opts = spec.section("kubernetes")
    if spec.launcher == "horovod":
        raise BackendError(
            "launcher: horovod needs MPI (or SSH) between the pods, which a batch/v1 Job does "
            "not set up; run it as an MPIJob with the Kubeflow MPI Operator, or use torchrun, "
            "deepspeed or accelerate"
        )
    if spec.kind is JobKind.MULTI_NODE:
        clash = sorted(set(spec.env) & set(launchers.reserved_env(spec.launcher)))
        if clash:
            raise BackendError(
                f"env: {', '.join(clash)} are set by the launcher for multi-node jobs; "
                "use kubernetes.master_port to change the port"
            )
    namespace = opts.get("namespace")
    if namespace is not None and not _DNS_LABEL.match(namespace):
        raise BackendError(f"kubernetes.namespace: not a valid namespace name: {namespace!r}")
    for i, mount in enumerate(spec.mounts):
        volume(mount.source, i)  # raises on a bad source
    port = opts.get("master_port", DEFAULT_MASTER_PORT)
    if not 1 <= port <= 65535:
        raise BackendError(f"kubernetes.master_port: expected 1-65535, got {port}")
    script(spec)  # raises on a command the launcher cannot take
    patch = opts.get("pod_patch")
    if patch is not None:
        extra = sorted(str(k) for k in patch if k not in ("metadata", "spec"))
        if extra:
            raise BackendError(
                f"kubernetes.pod_patch: a patch of the pod template takes metadata: and spec:, not {', '.join(extra)}"
            )
        for part in ("metadata", "spec"):
            if part in patch and not isinstance(patch[part], dict):
                raise BackendError(f"kubernetes.pod_patch.{part}: expected a mapping")
    for key in ("node_selector",):
        for k, v in (opts.get(key) or {}).items():
            if not isinstance(v, (str, int, float, bool)):
                raise BackendError(f"kubernetes.{key}.{k}: expected a text value")


def volume(source: str, index: int) -> tuple[dict, str | None]:
    """A volume from a mount source, and the subPath inside it (PVC only).

    ``pvc:CLAIM[/SUBPATH]``, ``nfs://SERVER/PATH``, or an absolute path on the node (hostPath)."""
    name = f"vol-{index}"
    if source.startswith("pvc:"):
        claim, _, sub = source[4:].partition("/")
        if not _DNS_LABEL.match(claim or "-"):
            raise BackendError(f"mounts[{index}].source: not a valid PVC name: {claim!r}")
        return {"name": name, "persistentVolumeClaim": {"claimName": claim}}, (sub or None)
    if source.startswith("nfs://"):
        server, slash, path = source[6:].partition("/")
        if not server or not slash:
            raise BackendError(f"mounts[{index}].source: expected nfs://SERVER/PATH, got {source!r}")
        return {"name": name, "nfs": {"server": server, "path": "/" + path}}, None
    if source.startswith("/"):
        return {"name": name, "hostPath": {"path": source}}, None
    raise BackendError(
        f"mounts[{index}].source: expected pvc:CLAIM[/SUBPATH], nfs://SERVER/PATH or an absolute path, got {source!r}"
    )


def manifests(spec: JobSpec, token: str, namespace: str, user: str = "") -> list[dict[str, Any]]:
    """The objects to create, in order: the Job, then (multi-node) its headless Service."""
    check(spec)
    opts = spec.section("kubernetes")
    name = dns_name(spec.name, token)
    multi = spec.kind is JobKind.MULTI_NODE
    nodes = spec.resources.nodes if multi else 1
    gpus = spec.resources.gpus
    gpu_resource = opts.get("gpu_resource") or DEFAULT_GPU_RESOURCE
    port = opts.get("master_port", DEFAULT_MASTER_PORT)
    labels = {"app.kubernetes.io/managed-by": MANAGED_BY, JOB_LABEL: name}
    annotations = {
        ANN_NAME: spec.name,
        ANN_KIND: spec.kind.value,
        ANN_SUBMIT_ID: token,
        ANN_COMMAND: spec.command_text[:1000],
    }
    if user:
        annotations[ANN_USER] = user
    logdir = str(spec.section(SECTION).get("logdir") or "")
    if spec.outputs:
        annotations[ANN_OUTPUTS] = spec.outputs

    env: list[dict[str, Any]] = [{"name": k, "value": str(v)} for k, v in spec.env.items()]
    if logdir:  # the console reads it back from the pod's annotation (``tbfiles``); the job may use the env
        annotations[ANN_LOGDIR] = logdir
        if LOGDIR_ENV not in spec.env:
            env.append({"name": LOGDIR_ENV, "value": logdir})
    if multi:
        master = f"{name}-0.{name}.{namespace}.svc"
        env += [
            {"name": "MASTER_ADDR", "value": master},
            {"name": "MASTER_PORT", "value": str(port)},
            {"name": "NNODES", "value": str(nodes)},
            {
                "name": "NODE_RANK",
                "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{INDEX_ANNOTATION}']"}},
            },
            {"name": "NPROC_PER_NODE", "value": str(max(1, gpus))},
            {"name": "WORLD_SIZE", "value": str(nodes * max(1, gpus))},
        ]
        if spec.launcher == "tensorflow":  # every pod's host:port, for the TF_CONFIG each pod builds
            workers = ",".join(f"{name}-{i}.{name}.{namespace}.svc:{port}" for i in range(nodes))
            env.append({"name": "TF_WORKERS", "value": workers})
    limits: dict[str, str] = {}
    requests: dict[str, str] = {}
    if gpus:
        limits[gpu_resource] = str(gpus)
    if spec.resources.cpus:
        requests["cpu"] = limits["cpu"] = str(spec.resources.cpus)
    if spec.resources.memory_mb:
        requests["memory"] = limits["memory"] = f"{spec.resources.memory_mb}Mi"
    container: dict[str, Any] = {
        "name": "main",
        "image": spec.image or DEFAULT_IMAGE,
        "command": ["/bin/sh", "-c", script(spec)],
        "env": env,
        "resources": {k: v for k, v in (("limits", limits), ("requests", requests)) if v},
    }
    if spec.workdir:
        container["workingDir"] = spec.workdir
    if opts.get("image_pull_policy"):
        container["imagePullPolicy"] = opts["image_pull_policy"]
    volumes, mounts = [], []
    for i, mount in enumerate(spec.mounts):
        vol, sub = volume(mount.source, i)
        volumes.append(vol)
        entry = {"name": vol["name"], "mountPath": mount.target, "readOnly": mount.read_only}
        if sub:
            entry["subPath"] = sub
        mounts.append(entry)
    if mounts:
        container["volumeMounts"] = mounts

    pod_spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [container]}
    if volumes:
        pod_spec["volumes"] = volumes
    if multi:
        pod_spec["subdomain"] = name
        pod_spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {JOB_LABEL: name}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        }
    if opts.get("node_selector"):
        pod_spec["nodeSelector"] = {str(k): str(v) for k, v in opts["node_selector"].items()}
    if opts.get("tolerations"):
        pod_spec["tolerations"] = list(opts["tolerations"])
    if opts.get("priority_class"):
        pod_spec["priorityClassName"] = opts["priority_class"]
    if opts.get("service_account"):
        pod_spec["serviceAccountName"] = opts["service_account"]

    template: dict[str, Any] = {
        "metadata": {"labels": dict(labels), "annotations": dict(annotations)},
        "spec": pod_spec,
    }
    if opts.get("pod_patch"):
        template = strategic_merge(template, opts["pod_patch"])
    job_spec: dict[str, Any] = {
        "backoffLimit": 0,
        "ttlSecondsAfterFinished": opts.get("ttl_seconds_after_finished", DEFAULT_TTL),
        "template": template,
    }
    if multi:
        job_spec.update(completionMode="Indexed", completions=nodes, parallelism=nodes)
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels, "annotations": annotations},
        "spec": job_spec,
    }
    out = [job]
    if multi:
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "labels": dict(labels),
                    "annotations": {ANN_SUBMIT_ID: token},
                },
                "spec": {
                    "clusterIP": "None",
                    "selector": {JOB_LABEL: name},
                    "ports": [{"name": "rendezvous", "port": port}],
                    "publishNotReadyAddresses": True,
                },
            }
        )
    return out


# Lists of a pod template that a strategic merge patch merges item by item, by this key (as
# ``kubectl patch --type strategic`` does); every other list is replaced.
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
}


def strategic_merge(base: Any, patch: Any, key: str = "") -> Any:
    """``patch`` merged into ``base`` the way a strategic merge patch is: mappings key by key (a null
    removes the key), the lists of ``MERGE_KEYS`` item by item by their merge key, anything else
    replaced. Neither argument is changed."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            if v is None:
                out.pop(k, None)
            else:
                out[k] = strategic_merge(out[k], v, str(k)) if k in out else copy.deepcopy(v)
        return out
    if isinstance(base, list) and isinstance(patch, list) and key in MERGE_KEYS:
        merge_key = MERGE_KEYS[key]
        merged = list(base)
        for item in patch:
            at = next(
                (
                    i
                    for i, old in enumerate(merged)
                    if isinstance(item, dict)
                    and isinstance(old, dict)
                    and merge_key in item
                    and old.get(merge_key) == item[merge_key]
                ),
                None,
            )
            if at is None:
                merged.append(copy.deepcopy(item))
            else:
                merged[at] = strategic_merge(merged[at], item)
        return merged
    return copy.deepcopy(patch)


def to_yaml(objects: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(objects, sort_keys=False, default_flow_style=False, width=1000)


QUANTITY_MAPS = frozenset({"limits", "requests", "overhead", "hard"})


def quantities_as_text(value: Any) -> Any:
    """A copy of a manifest with every resource quantity that is a number written as text (2 -> "2"),
    which the API server reads the same. Client 37's typed models refuse a number there (a pydantic
    ValidationError, ``string_type``) where 36 sent it as written; kubectl takes both."""
    if isinstance(value, list):
        return [quantities_as_text(item) for item in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        if key in QUANTITY_MAPS and isinstance(item, dict):
            item = {name: _text(amount) for name, amount in item.items()}
        elif key == "sizeLimit":
            item = _text(item)
        out[key] = quantities_as_text(item)
    return out


def _text(amount: Any) -> Any:
    return str(amount) if isinstance(amount, (int, float)) and not isinstance(amount, bool) else amount
