"""sbatch scripts as users have them (Slurm's native job files): told from their content (a ``#!``
line, then ``#SBATCH`` lines), their directives read the way sbatch reads them, and read into a
``JobSpec`` whose fields are what the directives ask for (name, nodes, GPUs, CPUs, memory, partition,
time, array...), so the preview and the capacity check work. Directives we do not model stay in the
script, which is sent unchanged. Per-node values stay per node. Pure."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from yanflow_tui.backends.jobfiles import NativeFormat, NotAJobFile
from yanflow_tui.errors import SpecError
from yanflow_tui.model import JobKind, JobSpec, NativeFile
from yanflow_tui.spec import spec_from_doc
from yanflow_tui.yamldoc import Doc

SBATCH = "sbatch"
_DIRECTIVE = re.compile(r"#SBATCH(?:\s|$)")
SHORT = {
    "J": "job-name",
    "N": "nodes",
    "n": "ntasks",
    "c": "cpus-per-task",
    "p": "partition",
    "t": "time",
    "A": "account",
    "q": "qos",
    "a": "array",
    "o": "output",
    "e": "error",
    "C": "constraint",
    "D": "chdir",
    "G": "gpus",
    "d": "dependency",
    "w": "nodelist",
    "x": "exclude",
    "i": "input",
}
FLAGS = frozenset(
    {
        "exclusive",
        "requeue",
        "no-requeue",
        "hold",
        "overcommit",
        "contiguous",
        "parsable",
        "spread-job",
        "oversubscribe",
    }
)
# Directives read into the spec: option -> the slurm section key (the rest are handled below).
SECTION_OPTIONS = {
    "partition": "partition",
    "account": "account",
    "qos": "qos",
    "time": "time",
    "array": "array",
    "output": "output",
    "error": "error",
    "constraint": "constraint",
}
_GRES_GPU = re.compile(r"gpu(?::([A-Za-z0-9_.-]+))?(?::(\d+))?")
_MEM = re.compile(r"(\d+)([KMGT]?)", re.IGNORECASE)

Problem = tuple[str, int, str, str]


def claims(text: str) -> bool:
    """Whether ``text`` is an sbatch script; ``NotAJobFile`` for a script without directives or
    directives without a ``#!`` line."""
    first = text.lstrip("\ufeff").split("\n", 1)[0]
    directives = any(_DIRECTIVE.match(line) for line in text.splitlines())
    if first.startswith("#!"):
        if directives:
            return True
        raise NotAJobFile(1, "a script without #SBATCH lines")
    if directives:
        raise NotAJobFile(1, "#SBATCH lines but no #! line first (sbatch needs one, e.g. #!/bin/bash)")
    return False


def sbatch_header(text: str) -> tuple[list[tuple[int, str]], int]:
    """The ``#SBATCH`` lines as (line number, what follows ``#SBATCH``), read the way sbatch reads
    them: from the top, until the first line that is neither blank nor a comment; and the number of
    lines that header spans (the body starts after the last directive)."""
    found: list[tuple[int, str]] = []
    last = 1
    for number, line in enumerate(text.splitlines(), 1):
        if number == 1 and line.startswith("#!"):
            continue
        if _DIRECTIVE.match(line):
            found.append((number, line[len("#SBATCH") :]))
            last = number
        elif line.strip() and not line.lstrip().startswith("#"):
            break
    return found, last


def _long(words: list[str], i: int) -> tuple[str, str | None, int]:
    """The ``--name[=value]`` option at ``words[i - 1]``: its name, value (None: a flag) and the next index."""
    name, eq, value = words[i - 1][2:].partition("=")
    if eq:
        return name, value, i
    takes = name not in FLAGS and i < len(words) and not words[i].startswith("-")
    return name, (words[i] if takes else None), i + takes


def _short(words: list[str], i: int) -> tuple[str, str | None, int]:
    """The ``-X[value]`` option at ``words[i - 1]``, as ``_long``."""
    word = words[i - 1]
    value = word[2:].removeprefix("=")
    if not value and i < len(words) and not words[i].startswith("-"):
        value, i = words[i], i + 1
    return SHORT.get(word[1], word[1]), value or None, i


def _directive_options(rest: str, number: int, file: str, problems: list[Problem]):
    """The options of one directive line as (line, name, value or None)."""
    try:
        words = shlex.split(rest, comments=True)
    except ValueError as exc:
        problems.append((file, number, "#SBATCH", f"cannot read the directive: {exc}"))
        return
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word.startswith("--"):
            name, value, i = _long(words, i)
        elif word.startswith("-") and len(word) >= 2:
            name, value, i = _short(words, i)
        else:
            problems.append((file, number, "#SBATCH", f"not an option: {word!r}"))
            continue
        yield number, name, value


def sbatch_options(text: str, file: str) -> list[tuple[int, str, str | None]]:
    """Every directive as (line, long option name, value or None for a flag)."""
    problems: list[Problem] = []
    out = [
        option for number, rest in sbatch_header(text)[0] for option in _directive_options(rest, number, file, problems)
    ]
    if problems:
        raise SpecError(problems)
    return out


@dataclass
class _Reading:
    """What the directives of one script say so far, with the line each field came from."""

    file: str
    data: dict[str, Any]
    lines: dict[str, int] = field(default_factory=dict)
    resources: dict[str, Any] = field(default_factory=dict)
    slurm: dict[str, Any] = field(default_factory=dict)
    gpus_total: tuple[int, int] | None = None  # (--gpus=N, its line): per job, divided over the nodes
    problems: list[Problem] = field(default_factory=list)

    def put(self, where: dict[str, Any], key: str, value: Any, path: str, line: int) -> None:
        where[key] = value
        self.lines[path] = line

    def gpu_type(self, kind: str | None, line: int) -> None:
        if kind:
            self.put(self.slurm, "gpu_type", kind, "slurm.gpu_type", line)


def _gpu_request(text: str) -> tuple[str | None, int] | None:
    """(type or None, count) of a ``gpu[:type][:count]`` request; None when it is not one."""
    match = _GRES_GPU.fullmatch(text.split("(")[0])
    if not match:
        return None
    kind, count = match.group(1), match.group(2)
    if kind and kind.isdigit() and count is None:  # gpu:2
        kind, count = None, kind
    return kind, int(count or 1)


def _job_name(r: _Reading, name: str, value: str, line: int) -> None:
    r.put(r.data, "name", value, "name", line)


def _nodes(r: _Reading, name: str, value: str, line: int) -> None:
    low = value.split("-")[0].split(":")[0]
    if not low.isdigit():
        r.problems.append((r.file, line, "resources.nodes", f"--nodes: expected a number, got {value!r}"))
    else:
        r.put(r.resources, "nodes", int(low), "resources.nodes", line)


def _gres(r: _Reading, name: str, value: str, line: int) -> None:
    for item in value.split(","):
        found = _gpu_request(item if name == "gres" else f"gpu:{item}")
        if found:
            r.put(r.resources, "gpus", found[1], "resources.gpus", line)
            r.gpu_type(found[0], line)


def _gpus(r: _Reading, name: str, value: str, line: int) -> None:
    found = _gpu_request(f"gpu:{value}")
    if found:
        r.gpus_total = (found[1], line)
        r.gpu_type(found[0], line)


def _cpus(r: _Reading, name: str, value: str, line: int) -> None:
    if value.isdigit():
        r.put(r.resources, "cpus", int(value), "resources.cpus", line)


def _mem(r: _Reading, name: str, value: str, line: int) -> None:
    match = _MEM.fullmatch(value)
    if match and int(match.group(1)):
        unit = match.group(2).upper() or "M"  # sbatch's default unit is megabytes
        r.put(r.resources, "memory", f"{match.group(1)}{unit}", "resources.memory", line)


def _section(r: _Reading, name: str, value: str, line: int) -> None:
    r.put(r.slurm, SECTION_OPTIONS[name], value, f"slurm.{SECTION_OPTIONS[name]}", line)


def _chdir(r: _Reading, name: str, value: str, line: int) -> None:
    r.put(r.data, "workdir", value, "workdir", line)


# Directive -> how its value goes into the spec (only directives with a value; ``--exclusive`` is a flag).
_READERS: dict[str, Callable[[_Reading, str, str, int], None]] = {
    "job-name": _job_name,
    "nodes": _nodes,
    "gres": _gres,
    "gpus-per-node": _gres,
    "gpus": _gpus,
    "cpus-per-task": _cpus,
    "mem": _mem,
    "chdir": _chdir,
    **dict.fromkeys(SECTION_OPTIONS, _section),
}


def _read_directive(r: _Reading, line: int, name: str, value: str | None) -> None:
    if name == "exclusive":
        r.put(r.slurm, "exclusive", True, "slurm.exclusive", line)
    elif value and name in _READERS:
        _READERS[name](r, name, value, line)


def _share_gpus(r: _Reading) -> None:
    """``--gpus`` is per job: per node it is the share of each, when it divides evenly."""
    if r.gpus_total is not None and "gpus" not in r.resources:
        nodes = r.resources.get("nodes", 1)
        if r.gpus_total[0] % nodes == 0:
            r.put(r.resources, "gpus", r.gpus_total[0] // nodes, "resources.gpus", r.gpus_total[1])


def read_sbatch(text: str, file: str) -> JobSpec:
    """An sbatch script as a spec of kind ``slurm``: its directives as the spec's fields (what sbatch
    would do without them where the script does not say: one node, the file's name as job name), its
    body as the command. The script is sent as written (``JobSpec.native``)."""
    r = _Reading(file, {"name": Path(file).name, "kind": JobKind.SLURM.value})
    for line, name, value in sbatch_options(text, file):
        _read_directive(r, line, name, value)
    if r.problems:
        raise SpecError(r.problems)
    _share_gpus(r)
    header_end = sbatch_header(text)[1]
    r.data["command"] = _body(text, header_end) or "true"
    r.lines["command"] = header_end + 1
    if r.resources:
        r.data["resources"] = r.resources
    if r.slurm:
        r.data["slurm"] = r.slurm
    written = spec_from_doc(Doc(file, r.data, r.lines))
    native = NativeFile(SBATCH, file, text, written=written, editable=True)
    return replace(written, native=native)


def _body(text: str, header_end: int) -> str:
    return "\n".join(text.splitlines()[header_end:]).strip("\n")


def sbatch_body(native: NativeFile) -> str:
    """The script's body (after its last directive), as ``read_sbatch`` put it in the command."""
    return _body(native.text, sbatch_header(native.text)[1])


def sbatch_with_body(native: NativeFile, command: str) -> str:
    """The script to send: as written, unless the form's command differs from its body; then the
    ``#!`` line and directives as written, followed by that command."""
    if command.strip() == sbatch_body(native).strip() or (command.strip() == "true" and not sbatch_body(native)):
        return native.text
    header_end = sbatch_header(native.text)[1]
    head = "\n".join(native.text.splitlines()[:header_end])
    return f"{head}\n{command.rstrip()}\n"


def sbatch_sets(native: NativeFile, option: str) -> bool:
    """Whether the script's own directives set ``option`` (a long name)."""
    return any(name == option for _, name, _ in sbatch_options(native.text, native.file))


FORMAT = NativeFormat(
    kind=SBATCH,
    label="sbatch scripts",
    name="an sbatch script",
    expected="an sbatch script (a #! line, then #SBATCH lines)",
    read=lambda text, file, doc, context: read_sbatch(text, file),
    claims_text=claims,
)
