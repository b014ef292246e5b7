"""Job templates: spec YAML files in the ``sample_jobs/`` format. The picker lists the samples that
ship beside the package (a source checkout's ``sample_jobs/``) and the user's own templates in
``$XDG_CONFIG_HOME/yanflow/templates/``, then the template projects (``yanflow_tui.projects``: a
folder each, written into a folder of the user's before its spec loads); "save as template" writes
the Submit form there (atomically, mode 0600, never over an existing file unless asked). Plain file
I/O: call these from a thread.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from yanflow_tui.errors import SpecError
from yanflow_tui.locations import default_config_path, private_file
from yanflow_tui.projects import list_projects
from yanflow_tui.spec import top_keys
from yanflow_tui.yamldoc import Doc, first_line, load_yaml_bytes

PACKAGE = Path(__file__).resolve().parent
SAMPLE_DIRS = (PACKAGE.parent / "sample_jobs", PACKAGE / "sample_jobs")
SUFFIXES = (".yaml", ".yml")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
HEADER = "# Saved from the YanFlow Submit form. Load it with the Templates key or: yanflow-tui submit FILE\n"


@dataclass(frozen=True)
class Template:
    name: str  # the file name without .yaml
    path: Path
    origin: str  # "mine", "sample" or "project" (path: the project's folder)
    description: str = ""  # the file's first comment line


def user_dir(env: Mapping[str, str] = os.environ) -> Path:
    return default_config_path(env).parent / "templates"


def list_templates(env: Mapping[str, str] = os.environ) -> list[Template]:
    """The user's templates, then the samples, then the projects; each group by name."""
    found: list[Template] = []
    seen: set[Path] = set()
    for origin, folder in [("mine", user_dir(env))] + [("sample", d) for d in SAMPLE_DIRS]:
        try:
            files = sorted(p for p in folder.iterdir() if p.suffix in SUFFIXES and p.is_file())
        except OSError:
            continue
        for path in files:
            if path.resolve() not in seen:
                seen.add(path.resolve())
                found.append(Template(path.stem, path, origin, _description(path)))
    found += [Template(p.name, p.folder, "project", p.description) for p in list_projects()]
    return found


def read_template(path: str | Path) -> Doc:
    """A spec file as a located YAML document (the form fills from it even when it has problems).
    Raises ``SpecError`` when it cannot be read or is not YAML."""
    try:
        data = Path(path).expanduser().read_bytes()
    except FileNotFoundError:
        raise SpecError([(str(path), 0, "", "no such file")]) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        raise SpecError([(str(path), 0, "", f"cannot read: {exc}")]) from None
    return load_yaml_bytes(data, str(Path(path).expanduser().resolve()))


def _description(path: Path) -> str:
    try:
        with path.open(encoding="utf-8") as fh:
            first = first_line(fh.readline(500) + fh.readline(500))
    except (OSError, UnicodeDecodeError):
        return ""
    return first.lstrip("#").strip() if first.startswith("#") and not first.startswith(HEADER[:20]) else ""


def template_name(text: str) -> str:
    """A file name from any text (a job name): letters, digits, ``.``, ``_`` and ``-``."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-._")[:100]
    return slug or "template"


def template_path(name: str, env: Mapping[str, str] = os.environ) -> Path:
    """Where template ``name`` is saved. Raises ``ValueError`` for a name that is not a plain file name."""
    name = name.strip()
    stem = name[: -len(Path(name).suffix)] if Path(name).suffix in SUFFIXES else name
    if not _NAME.match(stem):
        raise ValueError(f"template name {name!r}: use letters, digits, '.', '_' and '-' only")
    return user_dir(env) / f"{stem}.yaml"


class _Dumper(yaml.SafeDumper):
    """Multi-line text as ``|`` blocks, so a saved command reads as the script it is."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _text)


def template_text(data: Mapping[str, Any]) -> str:
    """The spec mapping as a template file, keys in the spec format's order."""
    order = {key: i for i, key in enumerate(top_keys())}
    ordered = dict(sorted(data.items(), key=lambda kv: order.get(kv[0], len(order))))
    return HEADER + yaml.dump(
        ordered, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000
    )


def save_template(
    data: Mapping[str, Any], name: str, env: Mapping[str, str] = os.environ, overwrite: bool = False
) -> Path:
    """Write ``data`` as template ``name``. Raises ``FileExistsError`` if it exists and not ``overwrite``."""
    path = template_path(name, env)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    private_file(path, template_text(data), replace=overwrite)  # the existence check is the link itself
    return path
