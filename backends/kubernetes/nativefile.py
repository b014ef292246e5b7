"""Kubernetes manifests as users have them (Kubernetes' native job files): told from ``apiVersion``
plus ``kind: Job | Pod | PyTorchJob | MPIJob``, read into a ``JobSpec`` (name, the first container's
image, command, GPUs, CPUs and memory per pod) for the preview and the capacity check; the object is
created as written. Pure."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from yanflow_tui.backends.jobfiles import NativeFormat
from yanflow_tui.errors import SpecError
from yanflow_tui.model import JobKind, JobSpec, NativeFile
from yanflow_tui.spec import spec_from_doc
from yanflow_tui.yamldoc import Doc

KUBERNETES = "kubernetes"
MANIFEST_KINDS = ("Job", "Pod", "PyTorchJob", "MPIJob")


def claims(doc: Doc) -> bool:
    """A mapping with ``apiVersion`` and ``kind``; ``SpecError`` for an object that is not a job."""
    keys = {str(k) for k in doc.data}
    if "apiVersion" not in keys or "kind" not in keys:
        return False
    kind = doc.data.get("kind")
    if kind not in MANIFEST_KINDS:
        message = f"a Kubernetes {kind} cannot be submitted; expected " + ", ".join(MANIFEST_KINDS)
        raise SpecError([(doc.file, doc.line("kind"), "kind", message)])
    return True


def read_manifest(doc: Doc, text: str) -> JobSpec:
    """A Kubernetes object as a spec: its name, and the GPUs, CPUs and memory its first container
    asks for (per pod), for the preview and the capacity check. It is created as written."""
    data = doc.data
    file = doc.file
    meta = data.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta.get("name"):
        line = doc.line("metadata")
        if isinstance(meta, dict) and meta.get("generateName"):
            raise SpecError([(file, line, "metadata.name", "generateName is not taken: give metadata.name")])
        raise SpecError([(file, line, "metadata.name", "required: the object's name")])
    container = _first_container(data)
    fields: dict[str, Any] = {"name": meta["name"], "kind": JobKind.SINGLE.value}
    command = container.get("command") or container.get("args") or ["(the image's entrypoint)"]
    fields["command"] = [str(w) for w in command] if isinstance(command, list) else str(command)
    if container.get("image"):
        fields["image"] = str(container["image"])
    fields["resources"] = _resources(container)
    if isinstance(meta.get("namespace"), str):
        fields["kubernetes"] = {"namespace": meta["namespace"]}
    written = spec_from_doc(Doc(file, fields, {"name": doc.line("metadata.name")}))
    native = NativeFile(KUBERNETES, file, text, data=doc.data_as_written(), written=written)
    return replace(written, native=native)


def _resources(container: dict) -> dict[str, Any]:
    """The GPUs, CPUs and memory a container asks for (limits first, then requests)."""
    limits = (container.get("resources") or {}).get("limits") or {}
    requests = (container.get("resources") or {}).get("requests") or {}
    gpus = next((v for k, v in {**requests, **limits}.items() if str(k).endswith("/gpu")), 0)
    res: dict[str, Any] = {"gpus": int(gpus) if str(gpus).isdigit() else 0}
    cpu = str(limits.get("cpu") or requests.get("cpu") or "")
    if cpu.isdigit() and int(cpu) > 0:
        res["cpus"] = int(cpu)
    memory = str(limits.get("memory") or requests.get("memory") or "")
    if re.fullmatch(r"\d+(Mi|Gi|Ti|M|G|T)", memory):
        res["memory"] = memory
    return res


def _first_container(obj: dict) -> dict:
    """The first container of a Pod, a Job's template, or a Kubeflow job's first replica."""
    spec = _mapping(obj.get("spec"))
    if obj.get("kind") == "Pod":
        pod = spec
    elif obj.get("kind") == "Job":
        pod = _mapping(_mapping(spec.get("template")).get("spec"))
    else:
        replicas = _mapping(spec.get("pytorchReplicaSpecs") or spec.get("mpiReplicaSpecs"))
        first = _mapping(next(iter(replicas.values()), None))
        pod = _mapping(_mapping(first.get("template")).get("spec"))
    containers = pod.get("containers")
    return containers[0] if isinstance(containers, list) and containers and isinstance(containers[0], dict) else {}


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _read(text: str, file: str, doc: Doc | None, context: str | None) -> JobSpec:
    assert doc is not None  # a YAML format: the core parsed it
    return read_manifest(doc, text)


FORMAT = NativeFormat(
    kind=KUBERNETES,
    label="Kubernetes manifests",
    name="a Kubernetes manifest",
    expected="a Kubernetes manifest (apiVersion: and kind: Job, Pod, PyTorchJob or MPIJob)",
    read=_read,
    claims_doc=claims,
)
