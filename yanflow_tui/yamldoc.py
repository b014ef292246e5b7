"""YAML documents that remember where each value came from, and a checker that reports
problems as ``file:line: field: message``. Job specs and the config file both use it."""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

import yaml

from yanflow_tui.errors import SpecError

Path = str  # dotted field path: "resources.gpus", "mounts[0].source", "env.FOO"


def join(path: Path, key: str | int) -> Path:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def as_written(value: Any, path: Path, raw: dict[Path, str]) -> Any:
    """Numbers YAML 1.1 read from text (``1:30:00`` -> 5400, ``0x1F`` -> 31) back as the text written."""
    if isinstance(value, dict):
        return {k: as_written(v, join(path, k), raw) for k, v in value.items()}
    if isinstance(value, list):
        return [as_written(v, join(path, i), raw) for i, v in enumerate(value)]
    if isinstance(value, (int, float)) and not isinstance(value, bool) and path in raw and raw[path] != str(value):
        return raw[path]
    return value


@dataclass
class Doc:
    """A parsed YAML document plus the line (1-based) where each field path starts."""

    file: str
    data: Any
    lines: dict[Path, int] = field(default_factory=dict)
    raw: dict[Path, str] = field(default_factory=dict)  # plain scalars' source text, where not a string

    def data_as_written(self) -> Any:
        """``data`` with numbers that YAML 1.1 made of text given back as that text."""
        return as_written(self.data, "", self.raw)

    def line(self, path: Path) -> int:
        """The line of ``path``, or of its nearest parent that has one."""
        while path:
            if path in self.lines:
                return self.lines[path]
            cut = max(path.rfind("."), path.rfind("["))
            path = path[:cut] if cut > 0 else ""
        return self.lines.get("", 1)


def load_yaml(text: str, file: str) -> Doc:
    """Parse one YAML document. Syntax errors and duplicate keys raise ``SpecError``."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return Doc(file, None, {"": 1})
        builder = _Builder(loader, file)
        builder.lines[""] = node.start_mark.line + 1
        data = builder.build(node, "")
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        problem = exc.problem or exc.context or "invalid YAML"
        raise SpecError([(file, line, "", f"YAML syntax error: {problem}")]) from None
    except yaml.YAMLError as exc:
        raise SpecError([(file, 1, "", f"YAML syntax error: {exc}")]) from None
    finally:
        loader.dispose()
    return Doc(file, data, builder.lines, builder.raw)


class _Builder:
    """Builds Python values from the node tree, recording each path's line and, for plain scalars
    that YAML 1.1 turned into something else (``1:30:00`` -> 5400, ``0x1F`` -> 31, ``yes`` -> True),
    the text as written, which text fields use."""

    def __init__(self, loader: yaml.SafeLoader, file: str):
        self.loader, self.file = loader, file
        self.lines: dict[Path, int] = {}
        self.raw: dict[Path, str] = {}

    def build(self, node: yaml.Node, path: Path) -> Any:
        if isinstance(node, yaml.MappingNode):
            self.loader.flatten_mapping(node)
            out: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                key = self.scalar(key_node, path)
                if not isinstance(key, (str, int, float, bool)) or key is None:
                    raise SpecError([(self.file, key_node.start_mark.line + 1, path, "keys must be plain text")])
                key = key if isinstance(key, str) else key_node.value
                sub = join(path, key)
                if key in out:
                    raise SpecError([(self.file, key_node.start_mark.line + 1, sub, "duplicate key")])
                self.lines[sub] = key_node.start_mark.line + 1
                out[key] = self.build(value_node, sub)
            return out
        if isinstance(node, yaml.SequenceNode):
            items = []
            for i, item in enumerate(node.value):
                sub = join(path, i)
                self.lines[sub] = item.start_mark.line + 1
                items.append(self.build(item, sub))
            return items
        value = self.scalar(node, path)
        if isinstance(node, yaml.ScalarNode) and node.style is None and not isinstance(value, str):
            self.raw[path] = node.value
        return value

    def scalar(self, node: yaml.Node, path: Path) -> Any:
        """Construct one value; PyYAML raises a bare ValueError for some (``2024-13-45``): locate it."""
        try:
            return self.loader.construct_object(node, deep=True)
        except (ValueError, OverflowError) as exc:
            raise SpecError([(self.file, node.start_mark.line + 1, path, f"invalid value: {exc}")]) from None


def show(value: Any) -> str:
    """A value as a user would write it in YAML, for error messages."""
    if isinstance(value, str):
        return json.dumps(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return str(value)


_MEMORY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B?|B)?\s*$", re.IGNORECASE)
_UNIT_MB = {"": 1, "B": 1 / 2**20, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024**2}
ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Checker:
    """Reads values out of a ``Doc``, collecting located problems instead of stopping at the first."""

    def __init__(self, doc: Doc):
        self.doc = doc
        self.problems: list[tuple[str, int, str, str]] = []

    def error(self, path: Path, message: str) -> None:
        self.problems.append((self.doc.file, self.doc.line(path), path, message))

    def raise_if_any(self) -> None:
        if self.problems:
            self.problems.sort(key=lambda p: p[1])
            raise SpecError(self.problems)

    def mapping(
        self, path: Path, value: Any, allowed: Iterable[str], required: Iterable[str] = ()
    ) -> dict[str, Any]:
        """Check that ``value`` is a mapping with only ``allowed`` keys and every ``required`` one."""
        if value is None:
            value = {}
        if not isinstance(value, dict):
            self.error(path, f"expected a mapping, got {show(value)}")
            return {}
        allowed = list(allowed)
        for key in value:
            if key not in allowed:
                guess = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
                hint = f'; did you mean "{guess[0]}"?' if guess else f"; expected one of: {', '.join(allowed)}"
                self.error(join(path, key), f"unknown key{hint}")
        for key in required:
            if value.get(key) is None:
                self.error(join(path, key), "required field is missing")
        return value

    def string(
        self, path: Path, value: Any, *, choices: Iterable[str] | None = None, nonempty: bool = True
    ) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str) and path in self.doc.raw:
            value = self.doc.raw[path]  # the text as written: 1:30:00, 0x1F, yes
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            self.error(path, f"expected text, got {show(value)}")
            return None
        text = str(value)
        if nonempty and not text.strip():
            self.error(path, "must not be empty")
            return None
        if choices is not None:
            options = list(choices)
            if text not in options:
                guess = difflib.get_close_matches(text, options, n=1, cutoff=0.6)
                hint = f'; did you mean "{guess[0]}"?' if guess else ""
                self.error(path, f"expected one of {', '.join(options)}, got {show(value)}{hint}")
                return None
        return text

    def whole(self, path: Path, value: Any, *, minimum: int = 0) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.error(path, f"expected a whole number >= {minimum}, got {show(value)}")
            return None
        return value

    def number(self, path: Path, value: Any, *, minimum: float = 0) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
            self.error(path, f"expected a number >= {minimum:g}, got {show(value)}")
            return None
        return float(value)

    def boolean(self, path: Path, value: Any) -> bool | None:
        if value is None:
            return None
        if not isinstance(value, bool):
            self.error(path, f"expected true or false, got {show(value)}")
            return None
        return value

    def memory_mb(self, path: Path, value: Any) -> int | None:
        """Memory as whole MiB: a bare number is MiB; ``"16G"``, ``"512Mi"``, ``"1T"`` are accepted."""
        if value is None:
            return None
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        match = _MEMORY.match(value) if isinstance(value, str) else None
        if not match:
            self.error(path, f'expected a size such as 16G or 512M, got {show(value)}')
            return None
        unit = (match.group(2) or "").upper().rstrip("B").rstrip("I") or ("B" if match.group(2) else "")
        return max(0, int(round(float(match.group(1)) * _UNIT_MB[unit])))

    def env(self, path: Path, value: Any) -> dict[str, str]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.error(path, f"expected a mapping of NAME: value, got {show(value)}")
            return {}
        out: dict[str, str] = {}
        for key, item in value.items():
            sub = join(path, key)
            if not ENV_KEY.fullmatch(key):  # match() would let a trailing newline through $
                self.error(sub, "environment names must match [A-Za-z_][A-Za-z0-9_]*")
                continue
            if isinstance(item, (dict, list)) or item is None:
                self.error(sub, f"expected text, got {show(item)}")
                continue
            out[key] = self.doc.raw.get(sub) or (show(item) if isinstance(item, bool) else str(item))
        return out

    def string_list(self, path: Path, value: Any) -> list[str] | None:
        if value is None:
            return None
        if not isinstance(value, list):
            self.error(path, f"expected a list of text, got {show(value)}")
            return None
        out = []
        for i, item in enumerate(value):
            text = self.string(join(path, i), item, nonempty=False)
            if text is not None:
                out.append(text)
        return out
