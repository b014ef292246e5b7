"""Determined experiment and command configs as users have them (Determined's native job files): told
from their keys (``entrypoint``, ``searcher``, ``hyperparameters``, ``resources: {slots_per_trial}``...),
read into a ``JobSpec`` (name, slots, entrypoint) with the folder its model definition is uploaded
from; the config is sent as written. Pure, apart from checking that folder."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from yanflow_tui.backends.jobfiles import NativeFormat
from yanflow_tui.errors import SpecError
from yanflow_tui.model import JobKind, JobSpec, NativeFile
from yanflow_tui.spec import spec_from_doc, top_keys
from yanflow_tui.yamldoc import Doc

DETERMINED = "determined"
# Top-level keys of a Determined experiment or command config that our spec does not have.
DET_KEYS = frozenset(
    {
        "entrypoint",
        "searcher",
        "hyperparameters",
        "environment",
        "bind_mounts",
        "checkpoint_storage",
        "max_restarts",
        "records_per_epoch",
        "min_validation_period",
        "min_checkpoint_period",
        "scheduling_unit",
        "workspace",
        "project",
        "profiling",
        "reproducibility",
        "data",
        "optimizations",
        "checkpoint_policy",
        "perform_initial_validation",
        "debug",
        "labels",
        "notebook_idle_type",
        "idle_timeout",
        "work_dir",
        "pbs",
        "slurm",
    }
)
DET_RESOURCE_KEYS = frozenset(
    {"slots_per_trial", "slots", "max_slots", "priority", "weight", "shm_size", "resource_pool", "devices"}
)


def claims(doc: Doc) -> bool:
    """A mapping with keys of a Determined config that our spec does not have, or Determined's resources."""
    data = doc.data
    keys = {str(k) for k in data}
    resources = data.get("resources")
    det_resources = isinstance(resources, dict) and bool(DET_RESOURCE_KEYS & {str(k) for k in resources})
    return bool(keys & DET_KEYS - set(top_keys())) or det_resources


def read_determined(doc: Doc, text: str, context: str | None) -> JobSpec:
    """A Determined config as a spec: an experiment (it has a searcher or hyperparameters) or a
    command. Its name, slots and entrypoint fill the spec's fields; the config is sent as written."""
    data = doc.data
    file = doc.file
    experiment = "searcher" in data or "hyperparameters" in data
    resources = data.get("resources") if isinstance(data.get("resources"), dict) else {}
    slots = resources.get("slots_per_trial" if experiment else "slots", 1 if experiment else 0)
    entrypoint = data.get("entrypoint")
    if isinstance(entrypoint, list):
        command: Any = [str(word) for word in entrypoint]
    else:
        command = str(entrypoint) if entrypoint else "(the config's entrypoint)"
    name = data.get("name") or data.get("description") or Path(file).stem
    fields: dict[str, Any] = {
        "name": str(name),
        "kind": (JobKind.EXPERIMENT if experiment else JobKind.SINGLE).value,
        "command": command or "(the config's entrypoint)",
        "resources": {"gpus": slots if isinstance(slots, int) and not isinstance(slots, bool) else 0},
    }
    if isinstance(resources.get("resource_pool"), str):
        fields["determined"] = {"resource_pool": resources["resource_pool"]}
    where = {"name": doc.line("name"), "command": doc.line("entrypoint"), "resources.gpus": doc.line("resources")}
    written = spec_from_doc(Doc(file, fields, where))
    folder = Path(context).expanduser() if context else Path(file).expanduser().resolve().parent
    if experiment and not folder.is_dir():
        raise SpecError([(file, 0, "", f"--context: {folder} is not a folder")])
    native = NativeFile(DETERMINED, file, text, data=doc.data_as_written(), context=str(folder), written=written)
    return replace(written, native=native)


def _read(text: str, file: str, doc: Doc | None, context: str | None) -> JobSpec:
    assert doc is not None  # a YAML format: the core parsed it
    return read_determined(doc, text, context)


FORMAT = NativeFormat(
    kind=DETERMINED,
    label="Determined experiment or command configs",
    name="a Determined config",
    expected=(
        "a Determined experiment or command config (entrypoint:, searcher:, hyperparameters:, "
        "resources: {slots_per_trial: N}...)"
    ),
    read=_read,
    claims_doc=claims,
    context="Determined configs",
)
