"""Job spec files: one YAML format for the platform's four job types.

    name: train-resnet            # any text; never interpreted by a shell
    kind: single                  # single | multi-node | experiment | slurm
    cluster: local                # optional; --cluster overrides it
    command: python train.py      # a shell line, or a list of argv words
    image: pytorch:2.4            # containers (Kubernetes, Determined)
    workdir: ~/project
    outputs: checkpoints          # the folder the Files view opens (relative to the workdir); default the workdir
    resume: "ckpt/step_*.pt"      # optional: the job's checkpoints (a glob under outputs), for resume
    env: {WANDB_MODE: offline}
    mounts: ["/data:/data:ro"]    # or {source, target, read_only}
    resources: {nodes: 1, gpus: 2, cpus: 8, memory: 32G}   # gpus/cpus/memory are per node
    launcher: torchrun            # multi-node/experiment: torchrun|deepspeed|accelerate|horovod|tensorflow|none
    slurm: {partition: gpu, time: "01:00:00"}
    tensorboard: {logdir: runs}   # event files the console plots; default WORKDIR/tb
    kubernetes: {namespace: ml}
    determined: {searcher: {...}, hyperparameters: {...}}

The backend sections (``slurm:``, ``kubernetes:``...) and their keys are what each backend package
declares (``BackendInfo.section`` in the backend registry); nothing here lists them.

Problems are reported as ``file:line: field: message``. Every key and text value is checked for
control characters, lone surrogates and bytes that are not UTF-8; tab and line break are allowed
only in the multi-line fields (the command and descriptions).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from yanflow_tui import curves
from yanflow_tui.backends import registry
from yanflow_tui.errors import SpecError
from yanflow_tui.fieldtable import MOUNT_FIELDS, RESOURCE_FIELDS, SPEC_FIELDS, keys, required
from yanflow_tui.model import JobKind, JobSpec, Mount, Resources
from yanflow_tui.yamldoc import Checker, Doc, join, load_yaml, load_yaml_bytes, show

# The fields, their limits and choices: the declarative table (``fieldtable``) the JSON Schema is made from.
COMMON_KEYS = keys(SPEC_FIELDS)
RESOURCE_KEYS = keys(RESOURCE_FIELDS)
MAX_NAME = SPEC_FIELDS["name"].max_length or 200
OPTION_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
MULTILINE = ("command", "description")  # tab and line break allowed (and in the sections' declared keys)


def section_keys() -> dict[str, Mapping[str, str]]:
    """The sections of a spec, by name, each its keys -> their type: one per backend that declares one
    (named by its kind), then ``tensorboard:`` ({logdir: ...}, for every kind: see ``yanflow_tui.curves``)."""
    sections = {info.kind: info.section for info in registry.infos() if info.section}
    return {**sections, curves.SECTION: curves.SECTION_KEYS}


def top_keys() -> tuple[str, ...]:
    """Every key a spec may have at its top: the common ones, then one section per backend that has one."""
    return COMMON_KEYS + tuple(section_keys())


def multiline(path: str) -> bool:
    """Whether the spec field at ``path`` may hold several lines (a command's words too)."""
    if path in MULTILINE or path.startswith("command["):
        return True
    section, _, key = path.partition(".")
    info = registry.info(section) if key else None
    return info is not None and key in info.multiline


def text_problems(doc: Doc) -> list[tuple[str, int, str, str]]:
    """The located problems of characters no field may hold (a file that has any is not loaded)."""
    check = Checker(doc)
    check.text(multiline)
    return check.problems


def load_spec(path: str | Path) -> JobSpec:
    """Read and validate a spec file. Raises ``SpecError`` with located problems."""
    path_text = str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise SpecError([(path_text, 0, "", "no such file")]) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        raise SpecError([(path_text, 0, "", f"cannot read: {exc}")]) from None
    return spec_from_doc(load_yaml_bytes(data, path_text))


def parse_spec(text: str, file: str = "<spec>") -> JobSpec:
    return spec_from_doc(load_yaml(text, file))


def spec_from_data(data: dict[str, Any], file: str = "<form>") -> JobSpec:
    """Validate a plain mapping (from the Submit form) with the same rules as a file."""
    return spec_from_doc(Doc(file, data, {}))


def spec_from_doc(doc: Doc) -> JobSpec:
    check = Checker(doc)
    check.text(multiline)  # first: a field with a bad character gets that one problem
    top = check.mapping("", doc.data, top_keys(), required=required(SPEC_FIELDS))
    name = check.string("name", top.get("name"))
    if name is not None and len(name) > MAX_NAME:
        check.error("name", f"longer than {MAX_NAME} characters")
    kind_text = check.string("kind", top.get("kind", SPEC_FIELDS["kind"].default), choices=_choices("kind"))
    kind = JobKind(kind_text) if kind_text else JobKind.SINGLE
    command = _command(check, top.get("command"))
    resources = _resources(check, top.get("resources"))
    launcher = check.string("launcher", top.get("launcher"), choices=_choices("launcher")) or "none"
    sections = {s: _section(check, s, keys, top.get(s)) for s, keys in section_keys().items()}

    if command is None and not (kind is JobKind.EXPERIMENT and _entrypoint(sections)):
        if top.get("command") is None:  # absent, or an empty ``command:``
            check.error("command", "required field is missing")
    if kind is JobKind.SINGLE and resources.nodes != 1:
        check.error("resources.nodes", f"a single job runs on exactly 1 node, got {resources.nodes}")
    if launcher != "none" and kind not in (JobKind.MULTI_NODE, JobKind.EXPERIMENT):
        check.error("launcher", f"only multi-node and experiment jobs take a launcher, not {kind.value}")

    spec = JobSpec(
        name=name or "",
        kind=kind,
        command=command if command is not None else "",
        cluster=check.string("cluster", top.get("cluster")),
        image=check.string("image", top.get("image")),
        workdir=check.string("workdir", top.get("workdir")),
        outputs=check.string("outputs", top.get("outputs")),
        resume=check.string("resume", top.get("resume")),
        env=check.env("env", top.get("env")),
        mounts=_mounts(check, top.get("mounts")),
        resources=resources,
        launcher=launcher,
        sections={
            s: values for s, values in sections.items() if values or top.get(s) is not None
        },  # ``kubernetes: {}``: a spec for that kind
        source=doc.file,
    )
    check.string("description", top.get("description"), nonempty=SPEC_FIELDS["description"].nonempty)
    check.raise_if_any()
    return spec


def _choices(name: str) -> list[str]:
    choices = SPEC_FIELDS[name].choices
    return list(choices()) if choices else []


def _command(check: Checker, value: Any) -> str | tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, list):
        words = check.string_list("command", value)
        if words is not None and not words:
            check.error("command", "must not be an empty list")
        return tuple(words) if words else None
    return check.string("command", value)


def _resources(check: Checker, value: Any) -> Resources:
    res = check.mapping("resources", value, RESOURCE_KEYS)
    least = {key: int(field.minimum) for key, field in RESOURCE_FIELDS.items()}
    return Resources(
        nodes=check.whole("resources.nodes", res.get("nodes"), minimum=least["nodes"]) or 1,
        gpus=check.whole("resources.gpus", res.get("gpus"), minimum=least["gpus"]) or 0,
        cpus=check.whole("resources.cpus", res.get("cpus"), minimum=least["cpus"]),
        memory_mb=check.memory_mb("resources.memory", res.get("memory")),
    )


def _mounts(check: Checker, value: Any) -> tuple[Mount, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        check.error("mounts", f"expected a list of mounts, got {show(value)}")
        return ()
    mounts = []
    for i, item in enumerate(value):
        path = join("mounts", i)
        if isinstance(item, str):
            parts = item.split(":")
            if len(parts) not in (2, 3) or not all(parts[:2]) or (len(parts) == 3 and parts[2] not in ("ro", "rw")):
                check.error(path, f'expected "source:target" or "source:target:ro", got {show(item)}')
                continue
            mounts.append(Mount(parts[0], parts[1], len(parts) == 3 and parts[2] == "ro"))
        else:
            entry = check.mapping(path, item, keys(MOUNT_FIELDS), required=required(MOUNT_FIELDS))
            source = check.string(join(path, "source"), entry.get("source"))
            target = check.string(join(path, "target"), entry.get("target"))
            read_only = check.boolean(join(path, "read_only"), entry.get("read_only")) or False
            if source and target:
                mounts.append(Mount(source, target, read_only))
    for i, mount in enumerate(mounts):
        if not mount.target.startswith("/"):
            check.error(join("mounts", i), f"target must be an absolute path, got {show(mount.target)}")
    return tuple(mounts)


def _entrypoint(sections: Mapping[str, dict[str, Any]]) -> bool:
    """Whether a section gives what an experiment runs instead of a command (Determined's ``entrypoint``)."""
    for name, values in sections.items():
        info = registry.info(name)
        if info is not None and info.entrypoint and values.get(info.entrypoint):
            return True
    return False


def _section(check: Checker, section: str, fields: Mapping[str, str], value: Any) -> dict[str, Any]:
    data = check.mapping(section, value, fields)
    out: dict[str, Any] = {}
    for key, item in data.items():
        if key not in fields or item is None:
            continue
        path = join(section, key)
        expected = fields[key]
        if expected == "text":
            item = check.string(path, item)
        elif expected == "bool":
            item = check.boolean(path, item)
        elif expected == "whole":
            item = check.whole(path, item)
        elif expected == "map" and not isinstance(item, dict):
            check.error(path, f"expected a mapping, got {show(item)}")
            item = None
        elif expected == "list" and not isinstance(item, list):
            check.error(path, f"expected a list, got {show(item)}")
            item = None
        elif expected == "options":
            item = _options(check, path, item)
        if item is not None:
            out[key] = item
    return out


def _options(check: Checker, path: str, value: Any) -> dict[str, Any] | None:
    """Extra command-line options, as ``{name: value}`` (``True`` for a bare flag), from a mapping
    (``{dependency: "afterok:12", exclusive: true}``) or a list (``["mail-type=END", "--exclusive"]``).
    Names are long option names; values are text (each goes to the backend as one argument)."""
    items: list[tuple[str, Any, str]] = []  # (name, value, path)
    if isinstance(value, dict):
        items = [(str(k), v, join(path, str(k))) for k, v in value.items()]
    elif isinstance(value, list):
        for i, entry in enumerate(value):
            where = join(path, i)
            if isinstance(entry, dict) and len(entry) == 1:
                ((k, v),) = entry.items()
                items.append((str(k), v, where))
            elif isinstance(entry, str):
                name, eq, text = entry.removeprefix("--").partition("=")
                items.append((name, text if eq else True, where))
            else:
                check.error(where, f'expected "name" or "name=value", got {show(entry)}')
    else:
        check.error(path, f'expected a mapping of options or a list of "name=value", got {show(value)}')
        return None
    out: dict[str, Any] = {}
    for name, item, where in items:
        name = name.removeprefix("--")
        if not OPTION_NAME.fullmatch(name):
            check.error(where, f"not an option name: {show(name)} (expected a long name such as mail-type)")
            continue
        if name in out:
            check.error(where, f"option {name} is set twice")
            continue
        if item is None or item is True:
            out[name] = True
        elif item is False:
            continue  # a flag turned off: not passed
        else:
            shown = check.string(where, item)
            if shown is not None:
                out[name] = shown
    return out


def spec_to_data(spec: JobSpec) -> dict[str, Any]:
    """The spec as a plain mapping, in file format (for saving templates and the form)."""
    data: dict[str, Any] = {"name": spec.name, "kind": spec.kind.value}
    if spec.cluster:
        data["cluster"] = spec.cluster
    data["command"] = list(spec.command) if isinstance(spec.command, tuple) else spec.command
    for key in ("image", "workdir", "outputs", "resume"):
        if getattr(spec, key):
            data[key] = getattr(spec, key)
    if spec.env:
        data["env"] = dict(spec.env)
    if spec.mounts:
        data["mounts"] = [{"source": m.source, "target": m.target, "read_only": m.read_only} for m in spec.mounts]
    res: dict[str, Any] = {"nodes": spec.resources.nodes, "gpus": spec.resources.gpus}
    if spec.resources.cpus is not None:
        res["cpus"] = spec.resources.cpus
    if spec.resources.memory_mb is not None:
        res["memory"] = f"{spec.resources.memory_mb}M"
    data["resources"] = res
    if spec.launcher != "none":
        data["launcher"] = spec.launcher
    for section, values in spec.sections.items():  # in the registry's order, as loaded (an empty one names its kind)
        data[section] = dict(values)
    return data
