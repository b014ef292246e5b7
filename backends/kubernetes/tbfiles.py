"""A Kubernetes job's TensorBoard event files, read by exec in one of its pods (``podexec``): the log
directory (the pod's ``yanflow.io/tb-logdir`` annotation, which a submit sets from the spec's
``tensorboard.logdir``, else the container's ``$YANFLOW_TB_LOGDIR``, else ``tb``; a relative one is
under the container's working directory), the event files under it (``find`` and ``stat``: size,
inode, path), and a byte range of one (``tail -c +N | head -c L``: only what was asked, from an
offset, with the offset it started at first: 0 for a file now shorter). For a TensorBoard in the pod
(``tbserver.serve_remote``), exec as its command runner. Every function here runs in a thread;
paths reach the pod as arguments (``sh -c SCRIPT sh ARGS...``), never inside a script."""

from __future__ import annotations

import posixpath

from yanflow_tui.backends.kubernetes.podexec import Runner, checked, run
from yanflow_tui.curves import EVENT_PREFIX, LOGDIR_ENV, EventFile, is_event_file
from yanflow_tui.errors import BackendError

RESOLVE = (
    f'd=${{1:-${{{LOGDIR_ENV}:-tb}}}}; case $d in /*) printf "%s\\n" "$d";; *) printf "%s/%s\\n" "$PWD" "$d";; esac'
)
LIST = '[ -d "$1" ] || exit 0; find "$1" -type f -name "$2*" -exec stat -c "%s %i %n" -- {} +'
READ = (
    'size=$(stat -c %s -- "$1" 2>/dev/null) || { echo -1; exit 0; }; start=$2; '
    '[ "$size" -lt "$start" ] && start=0; echo "$start"; tail -c +$((start + 1)) -- "$1" | head -c "$3"'
)


def resolve_logdir(start: Runner, logdir: str) -> str:
    """The absolute log directory in the pod ("" asks the container's ``$YANFLOW_TB_LOGDIR``, else ``tb``)."""
    out = checked(start, ["sh", "-c", RESOLVE, "sh", logdir], "finding the log directory")
    return posixpath.normpath(out.decode("utf-8", "replace").strip() or "/")


def parse_list(output: str, logdir: str) -> list[EventFile]:
    """``stat -c '%s %i %n'`` lines: size, inode, path (a path with a line break is left out)."""
    found = []
    for line in output.splitlines():
        size, _, rest = line.partition(" ")
        inode, _, path = rest.partition(" ")
        if size.isdigit() and inode.isdigit() and _inside(path, logdir):
            found.append(EventFile(path, int(size), inode))
    return sorted(found, key=lambda f: f.path)


def list_event_files(start: Runner, logdir: str) -> list[EventFile]:
    out = checked(start, ["sh", "-c", LIST, "sh", logdir, EVENT_PREFIX], f"listing {logdir}")
    return parse_list(out.decode("utf-8", "replace"), logdir)


def _inside(path: str, logdir: str) -> bool:
    path, logdir = posixpath.normpath(path), posixpath.normpath(logdir)
    return path.startswith(logdir.rstrip("/") + "/") and is_event_file(posixpath.basename(path))


def read_range(start: Runner, logdir: str, path: str, offset: int, limit: int) -> tuple[int, bytes]:
    """(start, bytes): at most ``limit`` bytes of ``path`` from ``offset`` (from 0 where the file is now
    shorter; (0, b"") where it is gone); ``path`` must be an event file under ``logdir``."""
    if not _inside(path, logdir):
        raise BackendError(f"not an event file under the job's log directory {logdir}: {path}")
    out = checked(start, ["sh", "-c", READ, "sh", path, str(max(0, offset)), str(max(0, limit))], f"reading {path}")
    head, _, data = out.partition(b"\n")
    try:
        begin = int(head)
    except ValueError:
        raise BackendError(f"reading {path}: bad header {head[:40]!r}") from None
    return (0, b"") if begin < 0 else (begin, data[: max(0, limit)])


def run_text(start: Runner, argv: list[str]) -> tuple[int, str, str]:
    """One command to its end, as ``serve_remote``'s runner takes it: (exit code, stdout, stderr)."""
    code, out, err = run(start, argv)
    return code, out.decode("utf-8", "replace"), err
