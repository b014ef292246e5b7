"""Job files as users already have them: which kind a file is (from its content, never its name), and
what it asks for, read into a ``JobSpec`` whose ``native`` carries the file to send as written.

Our own YAML spec (``yanflow_tui.spec``) is the core's; every other kind is declared by the backend that
takes it (``BackendInfo.native``, a ``NativeFormat`` of ``backends/jobfiles.py``, e.g. the sbatch scripts of
``backends/slurm/nativefile.py``): each format, in the registry's order, is asked whether it claims the
file (scripts before the file is parsed as YAML, YAML mappings after), and the one that does reads it.
Nothing here names a backend's kind.

A file that is none of these gets one problem naming what was expected. Pure, apart from reading the
file in ``load_job_file`` (call it in a thread from the console).
"""

from __future__ import annotations

from pathlib import Path

from yanflow_tui.backends import registry
from yanflow_tui.backends.jobfiles import NativeFormat, NotAJobFile
from yanflow_tui.errors import SpecError
from yanflow_tui.model import JobSpec
from yanflow_tui.spec import spec_from_doc, top_keys
from yanflow_tui.yamldoc import Doc, decode, load_yaml

SPEC = "spec"
SPEC_EXPECTED = "a YanFlow job spec (a mapping with name: and command:)"


def expected() -> str:
    """What a job file may be: our spec, then each declared format's ``expected``."""
    what = [SPEC_EXPECTED, *(f.expected for f in registry.native_formats())]
    return "expected " + (", ".join(what[:-1]) + " or " + what[-1] if len(what) > 1 else what[0])


def __getattr__(name: str) -> str:
    if name == "EXPECTED":  # the formats of the backends registered now
        return expected()
    raise AttributeError(name)


def _none(file: str, line: int, what: str) -> SpecError:
    return SpecError([(file, line, "", f"{what}; {expected()}")])


def recognise(text: str, file: str) -> tuple[str, Doc | None]:
    """The kind of job file ``text`` is (``spec`` or a declared format's kind) and, for the YAML kinds,
    its parsed document. Raises ``SpecError`` (``file:line``) for YAML that does not parse and for a
    file that is none of these."""
    formats = registry.native_formats()
    try:
        claimed = next((f.kind for f in formats if f.claims_text is not None and f.claims_text(text)), None)
        if claimed is not None:
            return claimed, None
        doc = load_yaml(text, file)
        if not isinstance(doc.data, dict):
            what = "an empty file" if doc.data is None else f"a YAML {type(doc.data).__name__}, not a mapping"
            raise NotAJobFile(doc.line("") or 1, what)
        claimed = next((f.kind for f in formats if f.claims_doc is not None and f.claims_doc(doc)), None)
    except NotAJobFile as exc:
        raise _none(file, exc.line, exc.what) from None
    if claimed is not None:
        return claimed, doc
    keys = {str(k) for k in doc.data}
    if keys & {"name", "command", "kind"} or keys <= set(top_keys()):
        return SPEC, doc  # our own spec (its loader names any unknown key, with a "did you mean")
    first_keys = [str(k) for k in doc.data][:5]
    raise _none(file, doc.line(first_keys[0]), f"a mapping with the keys {', '.join(first_keys)}")


def load_job_file(path: str | Path, context: str | None = None) -> JobSpec:
    """Read ``path`` as whichever job file it is. ``context``: the folder sent with a format that takes
    one (a Determined experiment's model definition; default: the file's folder). Raises ``SpecError``
    with located problems."""
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
    fmt = registry.native_format(kind)
    if context is not None and (fmt is None or not fmt.context):
        raise SpecError([(file, 0, "", f"--context is for {_takes_context()}; this file is {_name(fmt)}")])
    if doc is not None:
        doc.undecodable = undecodable
    if fmt is None:
        assert doc is not None  # our spec is YAML
        return spec_from_doc(doc)
    return fmt.read(text, file, doc, context)


def _takes_context() -> str:
    return " or ".join(f.context for f in registry.native_formats() if f.context) or "no job file here"


def _name(fmt: NativeFormat | None) -> str:
    return fmt.name if fmt is not None else "a YanFlow spec"


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
