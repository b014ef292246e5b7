"""Job specs to Determined configs: ``single`` -> a command (``LaunchCommand``), ``experiment`` -> an
experiment (``CreateExperiment``) with its model-definition context directory read the way the det
CLI reads it (``.detignore`` honoured, the master's size limit checked before upload).

Each submission carries a client tag (a label for experiments, a description suffix for commands) so
a submit whose answer was lost can be found instead of sent twice. Building a config does no I/O;
``read_context`` reads files and is called in a worker thread.
"""

from __future__ import annotations

import copy
import re
import shlex
from pathlib import Path
from typing import Any

import yaml
from determined.common import constants, detignore, v1file_utils
from determined.common import util as det_util
from determined.common.api import bindings

from yanflow_tui.errors import BackendError
from yanflow_tui.model import JobKind, JobSpec

LAUNCH_MODULES = {
    "torchrun": "determined.launch.torch_distributed",
    "deepspeed": "determined.launch.deepspeed",
    "horovod": "determined.launch.horovod",
}
LAUNCHERS = (*LAUNCH_MODULES, "none")
TRIAL_REFERENCE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")  # a legacy Trial class: model_def:MyTrial
CONTEXT_LIMIT = constants.MAX_CONTEXT_SIZE  # 95 MiB, as the det CLI enforces it
TAG_LABEL = "yanflow:"


def tag_description(name: str, tag: str) -> str:
    return f"{name} #yf-{tag}"


def check(spec: JobSpec) -> None:
    """What the master would refuse, said before any I/O."""
    det = spec.section("determined")
    if spec.kind is JobKind.EXPERIMENT:
        if not isinstance(det.get("searcher"), dict) or not det["searcher"].get("name"):
            raise BackendError(
                "determined.searcher: an experiment needs a searcher with a name (e.g. {name: single, metric: loss})"
            )
        if spec.launcher in ("accelerate", "tensorflow"):
            raise BackendError(
                f"launcher: Determined has no {spec.launcher} launcher; use torchrun, deepspeed, horovod or none"
            )
    if spec.workdir:
        raise BackendError(
            "workdir: Determined runs in the task's own directory; remove workdir: (experiments use determined.context)"
        )


def _environment(spec: JobSpec) -> dict[str, Any]:
    env: dict[str, Any] = {}
    if spec.image:
        env["image"] = spec.image
    if spec.env:
        env["environment_variables"] = [f"{key}={value}" for key, value in spec.env.items()]
    return env


def _bind_mounts(spec: JobSpec) -> list[dict[str, Any]]:
    return [{"host_path": m.source, "container_path": m.target, "read_only": m.read_only} for m in spec.mounts]


def command_entrypoint(spec: JobSpec) -> list[str]:
    """argv for a command: an argv list as is; a shell line through ``/bin/sh -c``."""
    if isinstance(spec.command, tuple):
        return list(spec.command)
    return ["/bin/sh", "-c", spec.command]


def experiment_entrypoint(spec: JobSpec) -> str | list[str]:
    """The trial entrypoint, prefixed with the launcher's module. Determined's launch modules run a
    command (``python3 -m determined.launch.torch_distributed python3 train.py``), so a leading python
    is kept; a legacy Trial reference (``model_def:MyTrial``) goes behind ``--trial``."""
    base: str | list[str]
    if spec.section("determined").get("entrypoint"):
        base = str(spec.section("determined")["entrypoint"])
    elif isinstance(spec.command, tuple):
        base = list(spec.command)
    else:
        base = spec.command.strip()
    module = LAUNCH_MODULES.get(spec.launcher)
    if module is None:
        return base
    prefix = ["python3", "-m", module]
    if isinstance(base, str) and TRIAL_REFERENCE.fullmatch(base):
        prefix.append("--trial")
    if isinstance(base, list):
        return prefix + base
    return f"{shlex.join(prefix)} {base}"


def command_config(spec: JobSpec, tag: str | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {"slots": spec.resources.gpus}
    if spec.section("determined").get("resource_pool"):
        resources["resource_pool"] = spec.section("determined")["resource_pool"]
    config: dict[str, Any] = {
        "description": tag_description(spec.name, tag) if tag else spec.name,
        "entrypoint": command_entrypoint(spec),
        "resources": resources,
    }
    return merged(_with_container(config, spec), spec.section("determined").get("config"))


def merged(config: dict[str, Any], extra: dict[str, Any] | None) -> dict[str, Any]:
    """``determined.config`` merged into the config the spec makes: mappings key by key, anything else
    (lists too) replaced. Neither argument is changed."""
    out = copy.deepcopy(config)
    for key, value in (extra or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _with_container(config: dict[str, Any], spec: JobSpec) -> dict[str, Any]:
    """The parts commands and experiments share: image and env, bind mounts."""
    environment = _environment(spec)
    if environment:
        config["environment"] = environment
    if spec.mounts:
        config["bind_mounts"] = _bind_mounts(spec)
    return config


def experiment_config(spec: JobSpec, tag: str | None = None) -> dict[str, Any]:
    det = spec.section("determined")
    resources: dict[str, Any] = {"slots_per_trial": spec.resources.nodes * spec.resources.gpus}
    if det.get("resource_pool"):
        resources["resource_pool"] = det["resource_pool"]
    config: dict[str, Any] = {
        "name": spec.name,
        "entrypoint": experiment_entrypoint(spec),
        "searcher": copy.deepcopy(det.get("searcher") or {}),
        "hyperparameters": copy.deepcopy(det.get("hyperparameters") or {}),
        "resources": resources,
    }
    if det.get("description"):
        config["description"] = det["description"]
    if "max_restarts" in det:
        config["max_restarts"] = det["max_restarts"]
    if det.get("checkpoint_storage"):
        config["checkpoint_storage"] = copy.deepcopy(det["checkpoint_storage"])
    labels = [str(label) for label in det.get("labels") or ()]
    if labels:
        config["labels"] = labels
    config = merged(_with_container(config, spec), det.get("config"))
    return with_tag(config, tag) if tag else config


def with_tag(config: dict[str, Any], tag: str) -> dict[str, Any]:
    """The experiment config plus the label a lost submit is found by (nothing else changes)."""
    out = dict(config)
    out["labels"] = [*(config.get("labels") or []), TAG_LABEL + tag]
    return out


def context_dir(spec: JobSpec) -> Path | None:
    """``determined.context``, relative to the spec file's directory."""
    raw = spec.section("determined").get("context")
    if not raw:
        return None
    path = Path(str(raw)).expanduser()
    if not path.is_absolute() and spec.source and not spec.source.startswith("<"):
        path = Path(spec.source).resolve().parent / path
    return path


def render(spec: JobSpec) -> str:
    """The config ``submit`` would send, as YAML (no I/O; the client tag is added at submit)."""
    if spec.kind is JobKind.EXPERIMENT:
        head = "# Determined experiment config (CreateExperiment)\n"
        context = context_dir(spec)
        if context is not None:
            head += f"# model definition: {context} (uploaded at submit; .detignore honoured)\n"
        body = experiment_config(spec)
    else:
        head = "# Determined command config (LaunchCommand)\n"
        body = command_config(spec)
    return head + yaml.safe_dump(body, sort_keys=False, allow_unicode=True, default_flow_style=False)


def render_native(config: dict[str, Any], file: str, experiment: bool, context: str, text: str) -> str:
    """A config file sent as written, for the preview: what it is, the folder uploaded, the file."""
    if experiment:
        head = f"# Determined experiment config (CreateExperiment), as written in {file}\n"
        head += f"# model definition: {context} (uploaded at submit; .detignore honoured)\n"
    else:
        head = f"# Determined command config (LaunchCommand), as written in {file}\n"
    return head + text


def native_experiment_request(
    config: dict[str, Any], files: list[bindings.v1File], tag: str
) -> bindings.v1CreateExperimentRequest:
    body = yaml.safe_dump(with_tag(config, tag), sort_keys=False)
    return bindings.v1CreateExperimentRequest(config=body, modelDefinition=files, activate=True)


def native_command_request(config: dict[str, Any], tag: str) -> tuple[bindings.v1LaunchCommandRequest, str]:
    """The command config plus its tag in the description (how a lost submit is found), and that description."""
    out = copy.deepcopy(config)
    out["description"] = tag_description(str(config.get("description") or "command"), tag)
    return bindings.v1LaunchCommandRequest(config=out), out["description"]


def read_context(path: Path, limit: int | None = None) -> list[bindings.v1File]:
    """The model definition as ``v1File``s, with ``.detignore`` honoured (the det CLI's walk).
    Raises ``BackendError`` over ``limit`` bytes, naming the size, before anything is sent."""
    limit = CONTEXT_LIMIT if limit is None else limit
    if not path.is_dir():
        raise BackendError(f"determined.context: {path} is not a directory")
    files: list[bindings.v1File] = []
    size = 0
    for item in detignore.os_walk_to_v1Files(path.resolve(), Path("")):
        files.append(item)
        size += v1file_utils.v1File_size(item)
        if size > limit:
            raise BackendError(
                f"determined.context: {path} holds more than the master accepts "
                f"({det_util.sizeof_fmt(limit)}); list large files in its .detignore"
            )
    return files


def experiment_request(spec: JobSpec, files: list[bindings.v1File], tag: str) -> bindings.v1CreateExperimentRequest:
    config = yaml.safe_dump(experiment_config(spec, tag), sort_keys=False)
    return bindings.v1CreateExperimentRequest(config=config, modelDefinition=files, activate=True)


def command_request(spec: JobSpec, tag: str) -> bindings.v1LaunchCommandRequest:
    return bindings.v1LaunchCommandRequest(config=command_config(spec, tag))
