"""YAML documents that remember where each value came from, and a checker that reports
problems as ``file:line: field: message``. Job specs and the config file both use it."""

from __future__ import annotations

import difflib
import json
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

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
    undecodable: bool = False  # the file was not UTF-8: its bad bytes are U+DC80..U+DCFF in the text
    unread: list[tuple[int, str]] = field(default_factory=list)  # (line, char) YAML refuses, outside values

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


# Characters YAML's reader refuses anywhere in a document (NUL, other C0/C1 controls, lone
# surrogates, U+FFFE/U+FFFF). Each is swapped for a stand-in from plane 15 (private use) before
# parsing and swapped back in the values after, so ``Checker.text`` can name the field that holds it.
_UNREADABLE = yaml.reader.Reader.NON_PRINTABLE
_STAND_IN = 0xF0000
_STAND_INS = re.compile("[\U000f0000-\U000fffff]")


def _restore(text: str) -> str:
    return _STAND_INS.sub(lambda m: chr(ord(m.group()) - _STAND_IN), text)


def decode(data: bytes) -> tuple[str, bool]:
    """File bytes as text, and whether they were not UTF-8 (bad bytes kept as U+DC80..U+DCFF, so
    the field that holds them is reported, never a bare decode error)."""
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return data.decode("utf-8", "surrogateescape"), True


def load_yaml_bytes(data: bytes, file: str) -> Doc:
    """``load_yaml`` of a file's bytes, which need not be UTF-8 (the checker reports where not)."""
    text, undecodable = decode(data)
    doc = load_yaml(text, file)
    doc.undecodable = undecodable
    return doc


def load_yaml(text: str, file: str) -> Doc:
    """Parse one YAML document. Syntax errors and duplicate keys raise ``SpecError``. Characters
    YAML refuses stay in the values, for ``Checker.text`` to report with their field."""
    unread = [(m.start(), m.group()) for m in _UNREADABLE.finditer(text)]
    swap = bool(unread) and not _STAND_INS.search(text)  # text already in plane 15: YAML reports it
    if swap:
        text = _UNREADABLE.sub(lambda m: chr(ord(m.group()) + _STAND_IN), text)
    loader = None
    try:
        loader = yaml.SafeLoader(text)  # its reader checks every character here
        node = loader.get_single_node()
        if node is None:
            if unread:
                at, char = unread[0]
                line = text.count("\n", 0, at) + 1
                raise SpecError([(file, line, "", f"{char_problem(char, False)} outside any field")])
            return Doc(file, None, {"": 1})
        builder = _Builder(loader, file, swap)
        builder.lines[""] = node.start_mark.line + 1
        data = builder.build(node, "")
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        char = chr(exc.character) if isinstance(exc.character, int) else "\x00"
        raise SpecError([(file, line, "", char_problem(char, False))]) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        problem = exc.problem or exc.context or "invalid YAML"
        raise SpecError([(file, line, "", f"YAML syntax error: {problem}")]) from None
    except yaml.YAMLError as exc:
        raise SpecError([(file, 1, "", f"YAML syntax error: {exc}")]) from None
    finally:
        if loader is not None:
            loader.dispose()
    outside = [(text.count("\n", 0, at) + 1, char) for at, char in unread if swap and not builder.covers(at)]
    return Doc(file, data, builder.lines, builder.raw, unread=outside)


class _Builder:
    """Builds Python values from the node tree, recording each path's line and, for plain scalars
    that YAML 1.1 turned into something else (``1:30:00`` -> 5400, ``0x1F`` -> 31, ``yes`` -> True),
    the text as written, which text fields use."""

    def __init__(self, loader: yaml.SafeLoader, file: str, swapped: bool = False):
        self.loader, self.file, self.swapped = loader, file, swapped
        self.lines: dict[Path, int] = {}
        self.raw: dict[Path, str] = {}
        self.spans: list[tuple[int, int]] = []  # where each scalar (key or value) is in the text

    def covers(self, index: int) -> bool:
        return any(start <= index < end for start, end in self.spans)

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
            self.raw[path] = _restore(node.value) if self.swapped else node.value
        return value

    def scalar(self, node: yaml.Node, path: Path) -> Any:
        """Construct one value; PyYAML raises a bare ValueError for some (``2024-13-45``): locate it."""
        self.spans.append((node.start_mark.index, node.end_mark.index))
        try:
            value = self.loader.construct_object(node, deep=True)
            return _restore(value) if self.swapped and isinstance(value, str) else value
        except (ValueError, OverflowError) as exc:
            raise SpecError([(self.file, node.start_mark.line + 1, path, f"invalid value: {exc}")]) from None


MODELINE = "# yaml-language-server:"  # an editor's pointer to the file's JSON Schema (yanflow_tui.fileschemas)


def first_line(text: str) -> str:
    """The first line of a YAML file's ``text``, past an editor's ``# yaml-language-server:`` modeline."""
    lines = text.split("\n", 2)
    return lines[1] if lines[0].startswith(MODELINE) and len(lines) > 1 else lines[0]


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


_NAMED = {"\x00": "NUL", "\t": "tab", "\n": "line break", "\r": "carriage return", "\x1b": "ESC", "\x7f": "DEL"}


def bad_char(char: str, multiline: bool) -> bool:
    """Not allowed in any text we read: control characters (C0, C1, DEL), lone surrogates, line
    and paragraph separators, U+FFFE/U+FFFF; tab and line break only in a multi-line field."""
    if char in "\t\n":
        return not multiline
    return unicodedata.category(char) in ("Cc", "Cs", "Zl", "Zp") or char in "\ufffe\uffff"


def char_problem(char: str, undecodable: bool) -> str:
    """What is wrong with ``char``, without the character itself (it may not even print)."""
    code = ord(char)
    if undecodable and 0xDC80 <= code <= 0xDCFF:
        return f"is not valid UTF-8 (byte 0x{code - 0xDC00:02X})"
    if unicodedata.category(char) == "Cs":
        return f"contains a lone surrogate (U+{code:04X}), which is not text"
    if char in "\t\n":
        return f"must be one line: contains a {_NAMED[char]} (U+{code:04X})"
    name = _NAMED.get(char) or unicodedata.name(char, "")
    return f"contains a control character (U+{code:04X}{' ' + name if name else ''})"


def printable(text: str) -> str:
    """``text`` with its bad characters as ``\\uXXXX`` escapes (for paths and messages)."""
    if text.isprintable():
        return text
    return "".join(f"\\u{ord(c):04x}" if bad_char(c, False) else c for c in text)


_MEMORY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B?|B)?\s*$", re.IGNORECASE)
_UNIT_MB = {"": 1, "B": 1 / 2**20, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024**2}
ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Checker:
    """Reads values out of a ``Doc``, collecting located problems instead of stopping at the first."""

    def __init__(self, doc: Doc):
        self.doc = doc
        self.problems: list[tuple[str, int, str, str]] = []
        self.bad_text: set[Path] = set()  # paths whose text was refused: one problem each

    def error(self, path: Path, message: str) -> None:
        shown = printable(path)
        if shown in self.bad_text:
            return  # its text is refused already; what else is wrong with it is beside the point
        self.problems.append((self.doc.file, self.doc.line(path), shown, message))

    def text(self, multiline: Callable[[Path], bool] = lambda path: False) -> None:
        """Refuse control characters, lone surrogates and bytes that are not UTF-8 in every key and
        every text value of the document (tab and line break only where ``multiline(path)``), each
        with its field; and any YAML could not read outside a field (a comment)."""

        def refuse(path: Path, char: str) -> None:
            self.error(path, char_problem(char, self.doc.undecodable))
            self.bad_text.add(printable(path))

        def first_bad(text: str, lines: bool) -> str | None:
            if text.isprintable():  # the common case, at C speed
                return None
            return next((c for c in text if bad_char(c, lines)), None)

        def walk(value: Any, path: Path) -> None:
            if isinstance(value, str):
                char = first_bad(value, multiline(path))
                if char is not None:
                    refuse(path, char)
            elif isinstance(value, dict):
                for key, item in value.items():
                    sub = join(path, key)
                    char = first_bad(key, False) if isinstance(key, str) else None
                    if char is not None:
                        refuse(sub, char)
                    else:
                        walk(item, sub)
            elif isinstance(value, list):
                for i, item in enumerate(value):
                    walk(item, join(path, i))

        walk(self.doc.data, "")
        for line, char in self.doc.unread:  # in a comment, or between tokens: still not a file we take
            self.problems.append(
                (self.doc.file, line, "", f"{char_problem(char, self.doc.undecodable)} outside any field")
            )

    def raise_if_any(self) -> None:
        if self.problems:
            self.problems.sort(key=lambda p: p[1])
            raise SpecError(self.problems)

    def mapping(self, path: Path, value: Any, allowed: Iterable[str], required: Iterable[str] = ()) -> dict[str, Any]:
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
            self.error(path, f"expected a size such as 16G or 512M, got {show(value)}")
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
