"""The Submit form's draft: the unfinished form, saved under the state dir so that it survives closing
the app, restored when the Submit screen is next built, removed after a successful submit.

``$XDG_STATE_HOME/yanflow/submit-draft.yaml``, written atomically with mode 0600. Plain file I/O:
call these from a thread.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from yanflow_tui.errors import YanflowError
from yanflow_tui.locations import private_file, state_dir

DRAFT_NAME = "submit-draft.yaml"
VERSION = 1
HEADER = "# YanFlow: the unfinished Submit form, restored at the next start (removed after a submit)\n"


class DraftError(YanflowError):
    """The draft file exists but cannot be used."""


@dataclass(frozen=True)
class Draft:
    cluster: str
    kind: str
    spec: dict[str, Any]  # the form as spec data: what a submit would send
    form: dict[str, str] = field(default_factory=dict)  # each field's text as typed, errors and all
    touched: tuple[str, ...] = ()  # the fields the user set (the others follow the cluster's defaults)
    source: str = ""  # the file the form was loaded from (relative paths in it are relative to that)


def draft_path(env: Mapping[str, str] = os.environ) -> Path:
    return state_dir(env) / DRAFT_NAME


def save_draft(draft: Draft, env: Mapping[str, str] = os.environ) -> Path:
    data = {
        "version": VERSION,
        "cluster": draft.cluster,
        "kind": draft.kind,
        "source": draft.source,
        "touched": list(draft.touched),
        "form": dict(draft.form),
        "spec": draft.spec,
    }
    path = draft_path(env)
    private_file(path, HEADER + yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path


def load_draft(env: Mapping[str, str] = os.environ) -> Draft | None:
    """The saved draft; None when there is none. Raises ``DraftError`` when it is unreadable."""
    path = draft_path(env)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise DraftError(f"{path}: cannot read: {exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise DraftError(f"{path}:{mark.line + 1 if mark else 1}: not valid YAML") from None
    return parse_draft(data, str(path))


def parse_draft(data: Any, where: str = "draft") -> Draft:
    if not isinstance(data, dict):
        raise DraftError(f"{where}: expected a mapping")
    if data.get("version") != VERSION:
        raise DraftError(f"{where}: version: expected {VERSION}, got {data.get('version')!r}")
    for key in ("cluster", "kind", "source"):
        if not isinstance(data.get(key, ""), str):
            raise DraftError(f"{where}: {key}: expected text")
    spec, form, touched = (_or(data.get("spec"), {}), _or(data.get("form"), {}), _or(data.get("touched"), []))
    if not isinstance(spec, dict):
        raise DraftError(f"{where}: spec: expected a mapping")
    if not isinstance(form, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in form.items()):
        raise DraftError(f"{where}: form: expected field: text lines")
    if not isinstance(touched, list) or not all(isinstance(k, str) for k in touched):
        raise DraftError(f"{where}: touched: expected a list of field names")
    return Draft(data.get("cluster", ""), data.get("kind", ""), spec, form, tuple(touched), data.get("source", ""))


def _or(value: Any, empty: Any) -> Any:
    return empty if value is None else value


def clear_draft(env: Mapping[str, str] = os.environ) -> None:
    draft_path(env).unlink(missing_ok=True)
