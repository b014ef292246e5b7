"""The Submit wizard's fields: which spec fields a backend uses for a job kind (each backend declares
them in ``Backend.form_fields``), and the pure conversions between a field's text and spec data.

A field's ``key`` is its dotted path in the spec file format (``name``, ``resources.gpus``,
``slurm.partition``, ``determined.searcher.name``). The form holds every field as text; ``form_data``
turns the texts of the shown fields into a spec mapping, ``split_data`` turns a mapping (a loaded
file, a template, a draft) back into texts plus what no field shows. No Textual here.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import yaml

from yanflow_tui.launchers import LAUNCHERS
from yanflow_tui.model import JobKind

TEXT, NUMBER, CHOICE, FLAG = "text", "number", "choice", "flag"
COMMAND, ENV, MOUNTS, MAPPING = "command", "env", "mounts", "mapping"
MULTILINE = (COMMAND, ENV, MOUNTS, MAPPING)
KIND_LABELS = {
    JobKind.SINGLE: "single: one node",
    JobKind.MULTI_NODE: "multi-node: whole nodes",
    JobKind.EXPERIMENT: "experiment: HP search",
    JobKind.SLURM: "slurm: batch script",
}


@dataclass(frozen=True)
class FormField:
    """One field of the Submit form."""

    key: str  # dotted spec path
    label: str
    help: str = ""
    # The text it starts with, unless the cluster's ``defaults:`` set one. Keep it what the spec format
    # means when the field is left out, so a loaded file that leaves it out means the same in the form.
    default: str = ""
    kind: str = TEXT  # text | number | choice | flag | command | env | mounts | mapping
    choices: tuple[str, ...] = ()  # for ``choice``: the values offered ("" = not set)
    placeholder: str = ""
    pool: bool = False  # names the partition/pool whose free nodes the capacity check counts
    lines: int = 3  # height of a multi-line field

    @property
    def widget_id(self) -> str:
        """A Textual id: ``name``, ``gpus``, ``slurm-partition``, ``determined-searcher-name``."""
        return self.key.removeprefix("resources.").replace(".", "-")

    @property
    def multiline(self) -> bool:
        return self.kind in MULTILINE


# -- the common fields, for backends to compose ----------------------------------------------------

NAME = FormField("name", "Name", "Any text; shown in the queue", placeholder="job name")
COMMAND_FIELD = FormField("command", "Command", "A shell line (several lines are one script)", kind=COMMAND, lines=4)
IMAGE = FormField("image", "Image", "Container image", placeholder="e.g. pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime")
WORKDIR = FormField("workdir", "Workdir", "Directory the command starts in")
OUTPUTS = FormField(
    "outputs",
    "Outputs",
    "The folder of the job's files and weights (relative to the workdir)",
    placeholder="the workdir",
)
NODES = FormField("resources.nodes", "Nodes", "Whole nodes", default="1", kind=NUMBER)
GPUS = FormField("resources.gpus", "GPUs/node", "GPUs on each node", default="0", kind=NUMBER)
CPUS = FormField("resources.cpus", "CPUs/node", "CPU cores on each node", kind=NUMBER)
MEMORY = FormField("resources.memory", "Memory/node", "e.g. 32G or 512M", kind=NUMBER)
ENV_FIELD = FormField("env", "Env", "One NAME=value a line", kind=ENV)
MOUNTS_FIELD = FormField("mounts", "Mounts", "One source:target[:ro] a line", kind=MOUNTS)


def launcher(choices: Iterable[str] = LAUNCHERS, default: str = "none") -> FormField:
    return FormField(
        "launcher",
        "Launcher",
        "Starts one process per GPU on every node and sets up the rendezvous",
        default=default,
        kind=CHOICE,
        choices=tuple(choices),
    )


def resources(kind: JobKind, cpus: bool = True, memory: bool = True) -> list[FormField]:
    """Nodes (not for single jobs: they run on one), GPUs, CPUs and memory."""
    if kind is JobKind.SINGLE:
        fields = [replace(GPUS, label="GPUs", help="GPUs for the job")]
    else:
        fields = [NODES, GPUS]
    return fields + ([CPUS] if cpus else []) + ([MEMORY] if memory else [])


def default_fields(kind: JobKind) -> tuple[FormField, ...]:
    """The generic spec fields, for a backend that declares none of its own."""
    fields = [NAME, COMMAND_FIELD, IMAGE, WORKDIR, OUTPUTS, *resources(kind)]
    if kind in (JobKind.MULTI_NODE, JobKind.EXPERIMENT):
        fields.append(launcher())
    fields.append(ENV_FIELD)
    return tuple(fields)


# -- mapping paths ---------------------------------------------------------------------------------


def get_path(data: Any, key: str) -> Any:
    for part in key.split("."):
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data


def set_path(data: dict, key: str, value: Any) -> None:
    *parents, last = key.split(".")
    for part in parents:
        if not isinstance(data.get(part), dict):
            data[part] = {}
        data = data[part]
    data[last] = value


def pop_path(data: dict, key: str) -> None:
    """Remove ``key``; parents left empty are removed too."""
    *parents, last = key.split(".")
    chain = [data]
    for part in parents:
        if not isinstance(chain[-1].get(part), dict):
            return
        chain.append(chain[-1][part])
    chain[-1].pop(last, None)
    for holder, part in zip(reversed(chain[:-1]), reversed(parents)):
        if holder.get(part) == {}:
            holder.pop(part)


def leaf_paths(data: Any, prefix: str = "") -> list[str]:
    """Dotted paths of every non-mapping value (``kubernetes.tolerations``)."""
    if not isinstance(data, dict) or (prefix and not data):
        return [prefix] if prefix else []
    out: list[str] = []
    for key, value in data.items():
        out += leaf_paths(value, f"{prefix}.{key}" if prefix else str(key))
    return out


# -- text <-> data -----------------------------------------------------------------------------------


def to_text(field: FormField, value: Any) -> str:
    """A spec value as the field's text (a best effort for values of the wrong type)."""
    if value is None:
        return ""
    if field.kind == FLAG:
        return "true" if value is True else ""
    if field.kind == COMMAND and isinstance(value, list):
        import shlex

        return shlex.join(str(v) for v in value)
    if field.kind == ENV and isinstance(value, dict):
        return "\n".join(f"{k}={_scalar(v)}" for k, v in value.items())
    if field.kind == MOUNTS and isinstance(value, list):
        return "\n".join(_mount_text(item) for item in value)
    if field.kind == MAPPING and isinstance(value, dict):
        return yaml.safe_dump(value, sort_keys=False, default_flow_style=False).rstrip("\n") if value else ""
    return _scalar(value)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return yaml.safe_dump(value, default_flow_style=True).strip()
    return str(value)


def _mount_text(item: Any) -> str:
    if isinstance(item, dict):
        text = f"{item.get('source', '')}:{item.get('target', '')}"
        return text + (":ro" if item.get("read_only") is True else "")
    return _scalar(item)


def from_text(field: FormField, text: str) -> tuple[Any, list[str]]:
    """The field's text as a spec value (None: leave it out), and problems the text alone shows."""
    if field.kind == COMMAND:
        return (text.strip("\n") or None), []
    if field.kind == ENV:
        return _env(text)
    if field.kind == MOUNTS:
        return _mounts(text), []
    if field.kind == MAPPING:
        return _mapping(text)
    if field.kind == FLAG:  # unticking a field that starts ticked says false; else it is left out
        return (True if text == "true" else False if field.default == "true" else None), []
    text = text.strip()
    if not text:
        return None, []
    if field.kind == NUMBER and text.isdigit():
        return int(text), []
    return text, []


def _env(text: str) -> tuple[dict[str, str] | None, list[str]]:
    env: dict[str, str] = {}
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        if not sep:
            problems.append(f"line {number}: expected NAME=value, got {line.strip()!r}")
            continue
        env[key.strip()] = value
    return env or None, problems


def _mounts(text: str) -> list[Any] | None:
    """``source:target[:ro|:rw]`` a line; the source may hold colons (``pvc:claim``, ``nfs://``)."""
    out: list[Any] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        body, read_only = line, False
        if re.search(r":(ro|rw)$", line) and line.count(":") >= 2:
            body, read_only = line[:-3], line.endswith(":ro")
        source, sep, target = body.rpartition(":")
        if not sep or not source or not target:
            out.append(line)  # the spec check says what is wrong with it
        else:
            out.append({"source": source, "target": target, "read_only": read_only})
    return out or None


def _mapping(text: str) -> tuple[dict | None, list[str]]:
    if not text.strip():
        return None, []
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark else ""
        return None, [f"{where}YAML syntax error: {getattr(exc, 'problem', None) or exc}"]
    if not isinstance(value, dict):
        return None, ["expected a mapping (key: value lines)"]
    return value, []


# -- whole forms --------------------------------------------------------------------------------------


def form_data(
    fields: Iterable[FormField], values: Mapping[str, str], base: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The shown fields' texts over ``base`` (what the form does not show), as a spec mapping; and
    the problems found in the texts themselves, by field key."""
    data = copy.deepcopy(dict(base or {}))
    problems: dict[str, list[str]] = {}
    for field in fields:
        value, found = from_text(field, values.get(field.key, ""))
        if found:
            problems[field.key] = found
        if value is None:
            pop_path(data, field.key)
        else:
            set_path(data, field.key, value)
    return data, problems


def split_data(data: Any, fields: Iterable[FormField]) -> tuple[dict[str, str], dict[str, Any]]:
    """A spec mapping as texts for ``fields`` that it sets, plus the rest (deep-copied)."""
    rest = copy.deepcopy(data) if isinstance(data, dict) else {}
    values: dict[str, str] = {}
    for field in fields:
        value = get_path(rest, field.key)
        if value is not None:
            values[field.key] = to_text(field, value)
            pop_path(rest, field.key)
    return values, rest


def initial_text(field: FormField, defaults: Mapping[str, Any]) -> str:
    """What a field starts with: the cluster's ``defaults:`` value, else the field's default."""
    value = get_path(dict(defaults), field.key)
    return to_text(field, value) if value is not None else field.default


_PATH = re.compile(r"^[A-Za-z_][\w\-]*(?:(?:\.[\w\-]+)|(?:\[\d+\]))*$")


def field_for(path: str, fields: Iterable[FormField]) -> str | None:
    """The key of the field a problem at ``path`` belongs to: the field itself, the field holding it
    (``mounts[0].source`` -> ``mounts``, ``env.FOO`` -> ``env``), or the first field inside it
    (``determined.searcher`` -> ``determined.searcher.name``)."""
    keys = [f.key for f in fields]
    plain = re.sub(r"\[\d+\]", "", path)
    best = None
    for key in keys:
        if plain == key or plain.startswith(key + "."):
            if best is None or len(key) > len(best):
                best = key
    if best is not None:
        return best
    return next((key for key in keys if key.startswith(plain + ".")), None)


def message_field(message: str, fields: Iterable[FormField]) -> tuple[str | None, str]:
    """A backend's one-line error (``kubernetes.namespace: not valid``, perhaps after a file name) as
    (field key or None, the message without the path)."""
    fields = list(fields)
    parts = message.split(": ")
    for i, part in enumerate(parts[:-1]):
        if _PATH.match(part):
            key = field_for(part, fields)
            if key is not None:
                return key, ": ".join(parts[i + 1 :])
    return None, message
