"""Job files as users already have them: which kind a file is (from its content, never its name), and
what it asks for, read into a ``JobSpec`` whose ``native`` carries the file to send as written.

- our own YAML spec (``yanflow_tui.spec``);
- an sbatch script: a ``#!`` line, then ``#SBATCH`` lines. Its directives fill the spec's fields (name,
  nodes, GPUs, CPUs, memory, partition, time, array...), so the preview and the capacity check work;
  directives we do not model stay in the script, which is sent unchanged. Per-node values stay per node;
- a Determined experiment or command config (``entrypoint``, ``searcher``, ``hyperparameters``,
  ``resources: {slots_per_trial}``...), with the folder its model definition is uploaded from;
- a Kubernetes manifest (``apiVersion`` plus ``kind: Job | Pod | PyTorchJob | MPIJob``).

A file that is none of these gets one problem naming what was expected. Pure, apart from reading the
file in ``load_job_file`` (call it in a thread from the console).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import replace
from pathlib import Path
from typing import Any

from yanflow_tui.errors import SpecError
from yanflow_tui.model import JobKind, JobSpec, NativeFile
from yanflow_tui.spec import spec_from_doc, top_keys
from yanflow_tui.yamldoc import Doc, decode, load_yaml

SPEC = "spec"
SBATCH, DETERMINED, KUBERNETES = "sbatch", "determined", "kubernetes"
EXPECTED = (
    "expected a YanFlow job spec (a mapping with name: and command:), an sbatch script (a #! line, then "
    "#SBATCH lines), a Determined experiment or command config (entrypoint:, searcher:, hyperparameters:, "
    "resources: {slots_per_trial: N}...) or a Kubernetes manifest (apiVersion: and kind: Job, Pod, "
    "PyTorchJob or MPIJob)"
)
MANIFEST_KINDS = ("Job", "Pod", "PyTorchJob", "MPIJob")
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


def _none(file: str, line: int, what: str) -> SpecError:
    return SpecError([(file, line, "", f"{what}; {EXPECTED}")])


def recognise(text: str, file: str) -> tuple[str, Doc | None]:
    """The kind of job file ``text`` is (``spec``, ``sbatch``, ``determined``, ``kubernetes``) and, for
    the YAML kinds, its parsed document. Raises ``SpecError`` (``file:line``) for YAML that does not
    parse and for a file that is none of these."""
    first = text.lstrip("\ufeff").split("\n", 1)[0]
    directives = any(_DIRECTIVE.match(line) for line in text.splitlines())
    if first.startswith("#!"):
        if directives:
            return SBATCH, None
        raise _none(file, 1, "a script without #SBATCH lines")
    if directives:
        raise _none(file, 1, "#SBATCH lines but no #! line first (sbatch needs one, e.g. #!/bin/bash)")
    doc = load_yaml(text, file)
    data = doc.data
    if not isinstance(data, dict):
        what = "an empty file" if data is None else f"a YAML {type(data).__name__}, not a mapping"
        raise _none(file, doc.line("") or 1, what)
    keys = {str(k) for k in data}
    if "apiVersion" in keys and "kind" in keys:
        kind = data.get("kind")
        if kind not in MANIFEST_KINDS:
            raise SpecError(
                [
                    (
                        file,
                        doc.line("kind"),
                        "kind",
                        f"a Kubernetes {kind} cannot be submitted; expected " + ", ".join(MANIFEST_KINDS),
                    )
                ]
            )
        return KUBERNETES, doc
    resources = data.get("resources")
    det_resources = isinstance(resources, dict) and bool(DET_RESOURCE_KEYS & {str(k) for k in resources})
    ours = set(top_keys())
    if (keys & DET_KEYS - ours) or det_resources:
        return DETERMINED, doc
    if keys & {"name", "command", "kind"} or keys <= ours:
        return SPEC, doc  # our own spec (its loader names any unknown key, with a "did you mean")
    first_keys = [str(k) for k in data][:5]
    raise _none(file, doc.line(first_keys[0]), f"a mapping with the keys {', '.join(first_keys)}")


def load_job_file(path: str | Path, context: str | None = None) -> JobSpec:
    """Read ``path`` as whichever job file it is. ``context``: a Determined experiment's model
    definition folder (default: the file's folder). Raises ``SpecError`` with located problems."""
    shown = str(path)
    try:
        data = Path(path).expanduser().read_bytes()
    except FileNotFoundError:
        raise SpecError([(shown, 0, "", "no such file")]) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        raise SpecError([(shown, 0, "", f"cannot read: {exc}")]) from None
    text, undecodable = decode(data)
    return read_job_text(text, shown, context, undecodable)


def read_job_text(text: str, file: str, context: str | None = None, undecodable: bool = False) -> JobSpec:
    kind, doc = recognise(text, file)
    if context is not None and kind != DETERMINED:
        raise SpecError([(file, 0, "", "--context is for Determined configs; this file is " + _label(kind))])
    if kind == SBATCH:
        return read_sbatch(text, file)
    assert doc is not None
    doc.undecodable = undecodable
    if kind == SPEC:
        return spec_from_doc(doc)
    if kind == DETERMINED:
        return read_determined(doc, text, context)
    return read_manifest(doc, text)


def _label(kind: str) -> str:
    return {SPEC: "a YanFlow spec", SBATCH: "an sbatch script", KUBERNETES: "a Kubernetes manifest"}.get(kind, kind)


# -- sbatch scripts ----------------------------------------------------------------------------------


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


def sbatch_options(text: str, file: str) -> list[tuple[int, str, str | None]]:
    """Every directive as (line, long option name, value or None for a flag)."""
    problems: list[tuple[str, int, str, str]] = []
    out: list[tuple[int, str, str | None]] = []
    for number, rest in sbatch_header(text)[0]:
        try:
            words = shlex.split(rest, comments=True)
        except ValueError as exc:
            problems.append((file, number, "#SBATCH", f"cannot read the directive: {exc}"))
            continue
        i = 0
        while i < len(words):
            word = words[i]
            i += 1
            if word.startswith("--"):
                name, eq, value = word[2:].partition("=")
                if not eq:
                    takes = name not in FLAGS and i < len(words) and not words[i].startswith("-")
                    value = words[i] if takes else ""
                    i += takes
                    eq = "=" if takes else ""
                out.append((number, name, value if eq else None))
            elif word.startswith("-") and len(word) >= 2:
                name = SHORT.get(word[1], word[1])
                value = word[2:].removeprefix("=")
                if not value and i < len(words) and not words[i].startswith("-"):
                    value, i = words[i], i + 1
                out.append((number, name, value or None))
            else:
                problems.append((file, number, "#SBATCH", f"not an option: {word!r}"))
    if problems:
        raise SpecError(problems)
    return out


def read_sbatch(text: str, file: str) -> JobSpec:
    """An sbatch script as a spec of kind ``slurm``: its directives as the spec's fields (what sbatch
    would do without them where the script does not say: one node, the file's name as job name), its
    body as the command. The script is sent as written (``JobSpec.native``)."""
    data: dict[str, Any] = {"name": Path(file).name, "kind": JobKind.SLURM.value}
    lines: dict[str, int] = {}
    resources: dict[str, Any] = {}
    slurm: dict[str, Any] = {}
    gpus_total: tuple[int, int] | None = None  # (--gpus=N, its line): per job, divided over the nodes
    problems: list[tuple[str, int, str, str]] = []

    def put(where: dict[str, Any], key: str, value: Any, path: str, line: int) -> None:
        where[key] = value
        lines[path] = line

    for line, name, value in sbatch_options(text, file):
        if name == "job-name" and value:
            put(data, "name", value, "name", line)
        elif name == "nodes" and value:
            low = value.split("-")[0].split(":")[0]
            if not low.isdigit():
                problems.append((file, line, "resources.nodes", f"--nodes: expected a number, got {value!r}"))
            else:
                put(resources, "nodes", int(low), "resources.nodes", line)
        elif name in ("gres", "gpus-per-node") and value:
            for item in value.split(","):
                text_ = item if name == "gres" else f"gpu:{item}"
                match = _GRES_GPU.fullmatch(text_.split("(")[0])
                if match:
                    kind, count = match.group(1), match.group(2)
                    if kind and kind.isdigit() and count is None:  # gpu:2
                        kind, count = None, kind
                    put(resources, "gpus", int(count or 1), "resources.gpus", line)
                    if kind:
                        put(slurm, "gpu_type", kind, "slurm.gpu_type", line)
        elif name == "gpus" and value:
            match = _GRES_GPU.fullmatch(f"gpu:{value}")
            if match:
                kind, count = match.group(1), match.group(2)
                if kind and kind.isdigit() and count is None:
                    kind, count = None, kind
                gpus_total = (int(count or 1), line)
                if kind:
                    put(slurm, "gpu_type", kind, "slurm.gpu_type", line)
        elif name == "cpus-per-task" and value and value.isdigit():
            put(resources, "cpus", int(value), "resources.cpus", line)
        elif name == "mem" and value and (match := _MEM.fullmatch(value)) and int(match.group(1)):
            unit = match.group(2).upper() or "M"  # sbatch's default unit is megabytes
            put(resources, "memory", f"{match.group(1)}{unit}", "resources.memory", line)
        elif name in SECTION_OPTIONS and value:
            put(slurm, SECTION_OPTIONS[name], value, f"slurm.{SECTION_OPTIONS[name]}", line)
        elif name == "exclusive":
            put(slurm, "exclusive", True, "slurm.exclusive", line)
        elif name == "chdir" and value:
            put(data, "workdir", value, "workdir", line)
    if problems:
        raise SpecError(problems)
    if gpus_total is not None and "gpus" not in resources:
        nodes = resources.get("nodes", 1)
        if gpus_total[0] % nodes == 0:  # --gpus is per job: per node it is the share of each
            put(resources, "gpus", gpus_total[0] // nodes, "resources.gpus", gpus_total[1])
    header_end = sbatch_header(text)[1]
    body = "\n".join(text.splitlines()[header_end:]).strip("\n")
    data["command"] = body or "true"
    lines["command"] = header_end + 1
    if resources:
        data["resources"] = resources
    if slurm:
        data["slurm"] = slurm
    written = spec_from_doc(Doc(file, data, lines))
    native = NativeFile(SBATCH, file, text, written=written, editable=True)
    return replace(written, native=native)


def sbatch_body(native: NativeFile) -> str:
    """The script's body (after its last directive), as ``read_sbatch`` put it in the command."""
    header_end = sbatch_header(native.text)[1]
    return "\n".join(native.text.splitlines()[header_end:]).strip("\n")


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


# -- Determined configs ------------------------------------------------------------------------------


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


def det_is_experiment(native: NativeFile) -> bool:
    return isinstance(native.data, dict) and ("searcher" in native.data or "hyperparameters" in native.data)


# -- Kubernetes manifests ----------------------------------------------------------------------------


def read_manifest(doc: Doc, text: str) -> JobSpec:
    """A Kubernetes object as a spec: its name, and the GPUs, CPUs and memory its first container
    asks for (per pod), for the preview and the capacity check. It is created as written."""
    data = doc.data
    file = doc.file
    problems = []
    meta = data.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta.get("name"):
        line = doc.line("metadata")
        if isinstance(meta, dict) and meta.get("generateName"):
            problems.append((file, line, "metadata.name", "generateName is not taken: give metadata.name"))
        else:
            problems.append((file, line, "metadata.name", "required: the object's name"))
    if problems:
        raise SpecError(problems)
    container = _first_container(data)
    fields: dict[str, Any] = {"name": meta["name"], "kind": JobKind.SINGLE.value}
    command = container.get("command") or container.get("args") or ["(the image's entrypoint)"]
    fields["command"] = [str(w) for w in command] if isinstance(command, list) else str(command)
    if container.get("image"):
        fields["image"] = str(container["image"])
    limits = (container.get("resources") or {}).get("limits") or {}
    requests = (container.get("resources") or {}).get("requests") or {}
    gpus = next((v for k, v in {**requests, **limits}.items() if str(k).endswith("/gpu")), 0)
    res: dict[str, Any] = {"gpus": int(gpus) if str(gpus).isdigit() else 0}
    cpu = str(limits.get("cpu") or requests.get("cpu") or "")
    if cpu.isdigit() and int(cpu) > 0:
        res["cpus"] = int(cpu)
    memory = str(limits.get("memory") or requests.get("memory") or "")
    if re.fullmatch(r"\d+(Mi|Gi|Ti|M|G|T)", memory):
        res["memory"] = memory
    fields["resources"] = res
    if isinstance(meta.get("namespace"), str):
        fields["kubernetes"] = {"namespace": meta["namespace"]}
    written = spec_from_doc(Doc(file, fields, {"name": doc.line("metadata.name")}))
    native = NativeFile(KUBERNETES, file, text, data=doc.data_as_written(), written=written)
    return replace(written, native=native)


def _first_container(obj: dict) -> dict:
    """The first container of a Pod, a Job's template, or a Kubeflow job's first replica."""
    spec = _mapping(obj.get("spec"))
    if obj.get("kind") == "Pod":
        pod = spec
    elif obj.get("kind") == "Job":
        pod = _mapping(_mapping(spec.get("template")).get("spec"))
    else:
        replicas = _mapping(spec.get("pytorchReplicaSpecs") or spec.get("mpiReplicaSpecs"))
        first = _mapping(next(iter(replicas.values()), None))
        pod = _mapping(_mapping(first.get("template")).get("spec"))
    containers = pod.get("containers")
    return containers[0] if isinstance(containers, list) and containers and isinstance(containers[0], dict) else {}


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def changed_fields(spec: JobSpec) -> list[str]:
    """What a spec from the form says differently from its file, for a file that is sent as written
    (``NativeFile.editable`` false): those changes would be lost, so the form says so. The fields
    are those of the spec format (``resources``, not ``resources.gpus``)."""
    native = spec.native
    if native is None or native.editable or native.written is None:
        return []
    written = native.written
    out = []
    for key in ("name", "command", "image", "workdir", "env", "mounts", "resources", "launcher"):
        if getattr(spec, key) != getattr(written, key):
            out.append(key)
    return out  # the backend sections are the cluster's choices (a namespace where the file sets none)
