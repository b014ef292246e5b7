"""Multi-node launchers: their names (the one list the spec and the form use), the fixed options each
takes on every node, and how the user's command is handed to it.

Every prefix refers only to environment variables that the node's shell expands: ``$NNODES``,
``$NODE_RANK``, ``$NPROC_PER_NODE``, ``$WORLD_SIZE``, ``$MASTER_ADDR``, ``$MASTER_PORT`` (and
``$HOSTS`` for horovodrun, ``$TF_WORKERS`` for tensorflow). A backend sets them; no user value ever
enters a prefix. ``tensorflow`` runs the command once per node with ``TF_CONFIG`` (the worker list and
this node's index, for ``MultiWorkerMirroredStrategy``), built by the node's own shell.

torchrun, deepspeed and ``accelerate launch`` run Python themselves and take a script (or a module),
so a leading ``python``/``python3`` (any path, ``-u``, ``-m MODULE``) is dropped or turned into their
module flag. horovodrun runs a command, so it is kept. Pure functions, no I/O.
"""

from __future__ import annotations

import re
import shlex

from yanflow_tui.errors import BackendError

LAUNCHERS = ("torchrun", "deepspeed", "accelerate", "horovod", "tensorflow", "none")
RESERVED_ENV = ("MASTER_ADDR", "MASTER_PORT", "NNODES", "NODE_RANK", "NPROC_PER_NODE", "WORLD_SIZE")

# One launcher per node; each is told its node rank.
PER_NODE = {
    "torchrun": (
        'torchrun --nnodes="$NNODES" --node_rank="$NODE_RANK" --nproc_per_node="$NPROC_PER_NODE"'
        ' --master_addr="$MASTER_ADDR" --master_port="$MASTER_PORT"'
    ),
    # --no_ssh still takes the node list from a hostfile (without one, deepspeed runs one node only and
    # refuses --num_nodes above 1): one line per node, NODE slots=N, written on the node first. The names
    # only count the nodes (no ssh; the master's address is given); the file is left in $TMPDIR.
    "deepspeed": (
        'sh -c \'h=$(mktemp "${TMPDIR:-/tmp}/yanflow-hostfile.XXXXXX") && i=0 &&'
        ' while [ "$i" -lt "$NNODES" ]; do echo "node$i slots=$NPROC_PER_NODE"; i=$((i + 1)); done > "$h" &&'
        ' exec deepspeed --hostfile="$h" --num_nodes="$NNODES" --num_gpus="$NPROC_PER_NODE" --node_rank="$NODE_RANK"'
        ' --master_addr="$MASTER_ADDR" --master_port="$MASTER_PORT" --no_ssh "$@"\' deepspeed'
    ),
    "accelerate": (
        'accelerate launch --multi_gpu --num_machines="$NNODES" --num_processes="$WORLD_SIZE"'
        ' --machine_rank="$NODE_RANK" --main_process_ip="$MASTER_ADDR"'
        ' --main_process_port="$MASTER_PORT"'
    ),
    # TF_CONFIG from the comma-separated host:port list and this node's rank, expanded on the node.
    "tensorflow": (
        'env TF_CONFIG="{\\"cluster\\":{\\"worker\\":[\\"$(printf %s "$TF_WORKERS" | sed \'s/,/","/g\')\\"]},'
        '\\"task\\":{\\"type\\":\\"worker\\",\\"index\\":$NODE_RANK}}"'
    ),
}
# One driver for the whole job, on the first node: it starts every process on every host itself.
HOROVODRUN = 'horovodrun -np "$WORLD_SIZE" -H "$HOSTS"'
RUNS_PYTHON = {"torchrun": "-m", "deepspeed": "--module", "accelerate": "-m"}  # launcher -> its module flag

_PYTHON = re.compile(r"(?:[^\s'\"\\$`;&|<>()]*/)?python(?:3(?:\.\d+)?)?")
_PLAIN = re.compile(r"[^\s'\"\\$`;&|<>()#]+")  # a shell word with nothing to unquote or expand
_OPERATORS = {";", "&", "&&", "|", "||", ";;", "|&", ";&", "&;"}


def reserved_env(launcher: str) -> tuple[str, ...]:
    """The variables a backend sets for a multi-node job with this launcher (not for env: to set)."""
    extra = {"horovod": ("HOSTS",), "tensorflow": ("TF_WORKERS", "TF_CONFIG")}
    return RESERVED_ENV + extra.get(launcher, ())


def prefix(launcher: str) -> str | None:
    """The fixed shell words that start the launcher (``None`` for ``none``)."""
    if launcher == "horovod":
        return HOROVODRUN
    return PER_NODE.get(launcher)


def handed_words(launcher: str, words: tuple[str, ...] | list[str]) -> list[str]:
    """An argv command as the launcher should get it after its own options."""
    words = list(words)
    if launcher not in RUNS_PYTHON or not words or not _PYTHON.fullmatch(words[0]):
        return words
    head = _python_head(words)
    return _replace_python(launcher, head, words[len(head) :]) + words[len(head) :]


def handed_line(launcher: str, line: str) -> str:
    """A shell-line command as the launcher should get it: one simple command (no ``;``, ``&&``,
    ``|`` or second line), kept as shell text, with a leading python word handled as for argv."""
    text = line.strip()
    if "\n" in text or "\r" in text:
        raise BackendError(
            f"command: {_name(launcher)} takes one command, not several lines; put the steps "
            "in a script, or write command as a list of words"
        )
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError as exc:
        raise BackendError(f"command: cannot be read as a shell line ({exc})") from None
    if not tokens:
        raise BackendError("command: empty")
    operator = next((t for t in tokens if t in _OPERATORS), None)
    if operator:
        raise BackendError(
            f"command: {_name(launcher)} takes one command, but this line has {operator!r}; put "
            "the steps in a script, or write command as a list of words"
        )
    if re.match(r"[A-Za-z_][A-Za-z0-9_]*=", tokens[0]):
        raise BackendError(
            f"command: {_name(launcher)} comes first on the line, so {tokens[0].split('=')[0]}= "
            "would be taken as the program; set it in env: instead"
        )
    if launcher not in RUNS_PYTHON:
        return text
    plain: list[str] = []  # the leading words that need no unquoting, with where each ends
    ends: list[int] = []
    pos = 0
    while match := re.match(r"\s*(\S+)(?=\s|$)", text[pos:]):
        if not _PLAIN.fullmatch(match.group(1)):
            break
        plain.append(match.group(1))
        pos += match.end()
        ends.append(pos)
    if not plain or not _PYTHON.fullmatch(plain[0]):
        return text
    head = _python_head(plain)
    rest = text[ends[len(head) - 1] :].strip()
    replaced = _replace_python(launcher, head, [rest] if rest else [])
    return " ".join([*(shlex.quote(w) for w in replaced), rest]).strip()


def _python_head(words: list[str]) -> list[str]:
    """``python`` and its options: ``-u``, ``-m MODULE`` (which ends them), any other ``-X``."""
    head = [words[0]]
    for i in range(1, len(words)):
        if not words[i].startswith("-"):
            break
        head.append(words[i])
        if words[i] == "-m":
            head.extend(words[i + 1 : i + 2])
            break
    return head


def _replace_python(launcher: str, head: list[str], rest: list[str]) -> list[str]:
    """What stands for ``python [options]`` before the script: nothing, or the module flag."""
    options = [w for w in head[1:] if w != "-u"]  # every one of them already runs ``python -u``
    if not options:
        if not rest:
            raise BackendError(f"command: {head[0]} with no script; {_name(launcher)} needs a script or -m MODULE")
        return []
    if options[0] == "-m":
        if len(options) < 2:
            raise BackendError("command: -m with no module name")
        return [RUNS_PYTHON[launcher], options[1]]
    raise BackendError(
        f"command: {_name(launcher)} runs Python itself, so the Python option {options[0]} "
        "cannot reach it; drop it, or set the matching PYTHON* variable in env:"
    )


def _name(launcher: str) -> str:
    names = {"horovod": "horovodrun", "accelerate": "accelerate launch", "tensorflow": "TF_CONFIG"}
    return names.get(launcher, launcher)
