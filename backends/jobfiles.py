"""What a backend package declares about the job files it takes as they are written (``NativeFormat``,
in its ``BackendInfo.native``): how such a file is told from its content, how it is read into a
``JobSpec``, and how it is named in messages. ``yanflow_tui.nativefiles`` asks each declared format in
the registry's order which one claims a file; it lists no kind itself."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from yanflow_tui.model import JobSpec
from yanflow_tui.yamldoc import Doc


class NotAJobFile(Exception):
    """Raised by a format's ``claims_text`` / ``claims_doc``: the file looks like one of its kind but cannot
    be one (``what`` at ``line``, e.g. "#SBATCH lines but no #! line first"). The core adds what it expected."""

    def __init__(self, line: int, what: str):
        super().__init__(what)
        self.line = line
        self.what = what


@dataclass(frozen=True)
class NativeFormat:
    """One kind of job file a backend takes as written (``NativeFile.kind``, ``Capabilities.native_files``)."""

    kind: str  # e.g. "sbatch"
    label: str  # plural, in messages: "sbatch scripts"
    name: str  # one file, in messages: "an sbatch script"
    expected: str  # what such a file looks like, for the message on a file of no kind: "an sbatch script (...)"
    # (text, file, doc or None, context folder or None) -> the spec, its ``native`` the file as written
    read: Callable[[str, str, Doc | None, str | None], JobSpec]
    # A file that is not YAML (a script): whether ``text`` is one; asked before the file is parsed as YAML.
    claims_text: Callable[[str], bool] | None = None
    # A YAML mapping: whether ``doc`` is one; asked in the registry's order, before our own spec.
    claims_doc: Callable[[Doc], bool] | None = None
    context: str = ""  # what ``--context`` (a folder sent with the file) is for, e.g. "Determined configs"
