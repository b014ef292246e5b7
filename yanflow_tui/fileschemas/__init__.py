"""JSON Schemas (draft 2020-12) of the job spec and of the config, for editors (the YAML language server,
VS Code, Neovim): made from the declarative field table the checkers read (``yanflow_tui.fieldtable``) and
the backend registry's sections and options, so they cannot drift. The shipped files beside this module
(``spec.schema.json``, ``config.schema.json``) are this generator's output for the shipped backends, and so
is ``sample_jobs/spec.schema.json``: the samples' and template projects' ``$schema`` line is a path relative to
the file (``spec.schema.json``, ``../../spec.schema.json``), which an editor resolves offline, in a source
checkout and in an installed package alike (``sample_jobs/`` sits beside ``yanflow_tui/`` in one, inside it in
the other); ``yanflow-tui init`` points a project's copy at this install's file (a ``file:`` URI).
``python -m yanflow_tui.fileschemas`` writes them again, and a test checks that they are current.
``yanflow-tui schema spec|config`` prints the schema of this install (a site's backend plugins included).

The schema checks what an editor can: keys, types, limits, choices, and the rules between fields a single
job, a launcher and an experiment's entrypoint follow. The checker stays the judge (it reads the text as
written, and refuses control characters), with the same messages as ever."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from yanflow_tui.fieldtable import (
    CLUSTER_FIELDS,
    CLUSTER_SHARED_OPTIONS,
    CONFIG_FIELDS,
    IDLE_GPU_FIELDS,
    IMAGE_FIELDS,
    METRICS_FIELDS,
    MOUNT_FIELDS,
    NOTIFY_FIELDS,
    RESOURCE_FIELDS,
    SPEC_FIELDS,
    Field,
    required,
)

NAMES = ("spec", "config")
DRAFT = "https://json-schema.org/draft/2020-12/schema"
# Where the shipped files are published (the project's repository): the schemas' ``$id``, an identifier only
# (no file points an editor there: it is not reachable offline, and ``main`` may differ from this install).
BASE_URL = "https://raw.githubusercontent.com/yanflow/yanflow-tui/main/yanflow_tui/fileschemas/"
HERE = Path(__file__).resolve().parent
# The samples' folder: beside the package in a source checkout, inside it once installed.
SAMPLE_DIRS = (HERE.parents[1] / "sample_jobs", HERE.parent / "sample_jobs")
SAMPLE_SCHEMA = "spec.schema.json"  # the spec schema's copy in the samples' folder, which their modelines name
TITLES = {"spec": "YanFlow TUI job spec", "config": "YanFlow TUI config"}
TEXT: dict[str, Any] = {"type": ["string", "number"]}  # a number is kept as written (1:30:00, 0x1F)


def path(name: str) -> Path:
    """The shipped file of schema ``name`` (spec or config)."""
    return HERE / f"{name}.schema.json"


def url(name: str) -> str:
    return f"{BASE_URL}{name}.schema.json"


def modeline(schema: str) -> str:
    """The first line of a YAML file that points the YAML language server at ``schema``: a path relative to
    the file, an absolute path or a URI (no spaces: the server reads the value up to the first one)."""
    return f"# yaml-language-server: $schema={schema}"


def sample_modeline(relative: Path) -> str:
    """The modeline of the sample at ``relative`` (to the samples' folder): their schema copy, relatively."""
    return modeline("../" * (len(relative.parts) - 1) + SAMPLE_SCHEMA)


def install_modeline(name: str) -> str:
    """The modeline of a file written outside the package (``yanflow-tui init``): this install's schema file."""
    return modeline(path(name).as_uri())


def samples_dir() -> Path | None:
    return next((d for d in SAMPLE_DIRS if d.is_dir()), None)


def build(name: str) -> dict[str, Any]:
    """Schema ``name`` (spec or config) as this install's field table and registry make it."""
    if name not in NAMES:
        raise ValueError(f"no schema {name!r} (one of: {', '.join(NAMES)})")
    body = _spec() if name == "spec" else _config()
    return {"$schema": DRAFT, "$id": url(name), "title": TITLES[name], **body}


def dumps(schema: Mapping[str, Any]) -> str:
    """The text of a schema file: indented, keys in the table's order, one newline at the end."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def _ignore_case(pattern: str) -> str:
    """A Python pattern compiled with IGNORECASE, as an ECMA-262 pattern (which has no inline flags)."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if char in "[]":
            in_class = char == "["
        if char.isalpha():
            pair = char.upper() + char.lower()
            out.append(pair if in_class else f"[{pair}]")
        else:
            out.append(char)
        i += 1
    return "".join(out)


def _text(field: Field) -> dict[str, Any]:
    out = dict(TEXT)
    if field.nonempty:
        out["pattern"] = r"\S"
    if field.max_length:
        out["maxLength"] = field.max_length
    return out


def _object(table: Mapping[str, Field], **more: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": {k: _field(f) for k, f in table.items()}}
    if required(dict(table)):
        out["required"] = list(required(dict(table)))
    out["additionalProperties"] = False
    out.update(more)
    return out


def _field(field: Field) -> dict[str, Any]:
    """The schema of one field of the table."""
    from yanflow_tui.yamldoc import _MEMORY, ENV_KEY

    kind = field.type
    out: dict[str, Any]
    if kind == "text":
        out = _text(field)
    elif kind == "whole":
        out = {"type": "integer", "minimum": int(field.minimum)}
    elif kind == "number":
        out = {"type": "number", "minimum": field.minimum}
    elif kind == "bool":
        out = {"type": "boolean"}
    elif kind == "choice":
        out = {"enum": list(field.choices()) if field.choices else []}
    elif kind == "command":
        words = {"type": "array", "items": TEXT, "minItems": 1}
        out = {"anyOf": [_text(field), words]}
    elif kind == "env":
        value = {"type": ["string", "number", "boolean"]}
        out = {"type": "object", "propertyNames": {"pattern": ENV_KEY.pattern}, "additionalProperties": value}
    elif kind == "mounts":
        short = {"type": "string", "pattern": r"^[^:]+:/[^:]*(:(ro|rw))?$"}
        long = _object(MOUNT_FIELDS)
        long["properties"]["target"] = {"type": "string", "pattern": "^/"}
        out = {"type": "array", "items": {"anyOf": [short, long]}}
    elif kind == "memory":
        size = {"type": "string", "pattern": _ignore_case(_MEMORY.pattern)}
        out = {"anyOf": [{"type": "integer", "minimum": 0}, size]}
    elif kind == "resources":
        out = _object(RESOURCE_FIELDS)
    elif kind == "clusters":
        out = {"type": "array", "items": _cluster(), "minItems": 1}
    elif kind == "keymap":
        out = {"type": "object", "additionalProperties": _text(field)}
    elif kind == "defaults":
        spec = _spec()
        out = {"type": "object", "properties": {k: v for k, v in spec["properties"].items() if k != "cluster"}}
        out["additionalProperties"] = False
    elif kind == "images":
        out = {"type": "array", "items": {"anyOf": [{"type": "string", "pattern": r"^\S+$"}, _object(IMAGE_FIELDS)]}}
    elif kind == "notify":
        out = {"anyOf": [{"type": "boolean"}, _object(NOTIFY_FIELDS)]}
    elif kind == "end_states":
        from yanflow_tui.notices import END_STATES

        out = {"type": "array", "items": {"enum": list(END_STATES)}}
    elif kind == "idle_gpus":
        out = _object(IDLE_GPU_FIELDS)
        out["properties"]["below_percent"]["maximum"] = 100
    elif kind == "metrics":
        out = _object(METRICS_FIELDS)
        out["properties"]["prometheus"] = {"type": "string", "pattern": "^https?://"}
    else:
        out = _section_type(kind)
    if field.help:
        out = {"description": field.help, **out}
    if field.default is not None:
        out["default"] = field.default
    return out


def _section_type(kind: str) -> dict[str, Any]:
    """A backend section's key of type ``kind`` (``backends.base.SECTION_TYPES``)."""
    if kind == "text":
        return dict(TEXT)
    if kind == "bool":
        return {"type": "boolean"}
    if kind == "whole":
        return {"type": "integer", "minimum": 0}
    if kind == "map":
        return {"type": "object"}
    if kind == "list":
        return {"type": "array"}
    if kind == "options":  # {name: value} or ["name=value", {name: value}, "--flag"]
        one = {"anyOf": [{"type": "string"}, {"type": "object", "minProperties": 1, "maxProperties": 1}]}
        return {"anyOf": [{"type": "object"}, {"type": "array", "items": one}]}
    raise ValueError(f"no schema for a field of type {kind!r}")


def _spec() -> dict[str, Any]:
    from yanflow_tui import spec as specs
    from yanflow_tui.backends import registry

    properties = {k: _field(f) for k, f in SPEC_FIELDS.items()}
    for section, keys in specs.section_keys().items():
        fields = {key: _section_type(kind) for key, kind in keys.items()}
        properties[section] = {
            "description": f"the {section} section",
            "type": ["object", "null"],
            "properties": fields,
            "additionalProperties": False,
        }
    # A command, unless an experiment names its entrypoint in a section (Determined's).
    command_or: list[dict[str, Any]] = [{"required": ["command"]}]
    for info in registry.infos():
        if info.entrypoint and info.section:
            command_or.append(
                {
                    "required": ["kind", info.kind],
                    "properties": {"kind": {"const": "experiment"}, info.kind: {"required": [info.entrypoint]}},
                }
            )
    single = {"anyOf": [{"not": {"required": ["kind"]}}, {"properties": {"kind": {"const": "single"}}}]}
    takes_launcher = {"required": ["kind"], "properties": {"kind": {"enum": ["multi-node", "experiment"]}}}
    return {
        "type": "object",
        "properties": properties,
        "required": list(required(SPEC_FIELDS)),
        "additionalProperties": False,
        "allOf": [
            {"anyOf": command_or},
            {"if": single, "then": {"properties": {"resources": {"properties": {"nodes": {"const": 1}}}}}},
            {"if": {"not": takes_launcher}, "then": {"properties": {"launcher": {"const": "none"}}}},
        ],
    }


def _cluster() -> dict[str, Any]:
    from yanflow_tui.backends import registry

    out = _object({**CLUSTER_FIELDS, **CLUSTER_SHARED_OPTIONS})
    common = list(out["properties"])
    rules = []
    for info in registry.infos():
        for option in info.options:
            out["properties"].setdefault(option, {"description": f"an option of the {info.kind} kind"})
        rules.append(
            {
                "if": {"required": ["kind"], "properties": {"kind": {"const": info.kind}}},
                "then": {"propertyNames": {"enum": common + [o for o in info.options if o not in common]}},
            }
        )
    out["allOf"] = rules
    return out


def _config() -> dict[str, Any]:
    return _object(CONFIG_FIELDS)


def write() -> list[Path]:
    """Write every shipped schema file again (``python -m yanflow_tui.fileschemas``)."""
    targets = [(name, path(name)) for name in NAMES]
    samples = samples_dir()
    if samples is not None:
        targets.append(("spec", samples / SAMPLE_SCHEMA))
    for name, target in targets:
        target.write_text(dumps(build(name)), encoding="utf-8")
    return [target for _, target in targets]
