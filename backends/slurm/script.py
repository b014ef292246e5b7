"""sbatch rendering: a job spec as (sbatch argv, batch script); an sbatch script of the user's as it is
written, with what the form changed as sbatch options (``render_native``). Options go on ``#SBATCH`` lines only
when their value is plainly safe there; anything else (quotes, spaces, ``$``, newlines, a leading
``-``...) is passed as an sbatch argument instead. A job with ``image:`` runs through the cluster's
container runtime (see ``containers``). No I/O."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from yanflow_tui import launchers
from yanflow_tui.backends.slurm import containers, nativefile
from yanflow_tui.backends.slurm.comment import tagged
from yanflow_tui.backends.slurm.containers import Container
from yanflow_tui.curves import LOGDIR_ENV, SECTION
from yanflow_tui.errors import BackendError, SpecError
from yanflow_tui.model import JobKind, JobSpec
from yanflow_tui.yamldoc import ENV_KEY

PORT_BASE, PORT_RANGE = 20000, 20000  # MASTER_PORT: one per job id, so jobs sharing a node differ
SAFE_VALUE = re.compile(r"[A-Za-z0-9_.:/@+,=%\[\]-]+")

# Each rank of a multi-node step writes its stdout and stderr straight into its own file beside the
# job's output, ``<StdOut>.rank<N>`` (``RANK_SUFFIX``; N is the task id, the node rank): no relay
# through srun, which drops what a failing rank printed last when --kill-on-bad-exit stops the step.
# The batch shell reads the path of its own output (the file slurmstepd opened for it); a path srun
# would not take as written (``\\`` turns its patterns off; ``%`` is doubled) or an output that is
# not a regular file (/dev/null) leaves the ranks on srun's relay, as before.
RANK_SUFFIX = ".rank"
RANK_OPTION = "YF_RANK_OUTPUT"
RANK_OUTPUT = (
    f'{RANK_OPTION}=$(readlink "/proc/$$/fd/1" 2>/dev/null)\n'
    f'case ${RANK_OPTION} in *\\\\*) {RANK_OPTION}= ;; /*) [ -f "${RANK_OPTION}" ] || {RANK_OPTION}= ;; '
    f"*) {RANK_OPTION}= ;; esac\n"
    f"{RANK_OPTION}=${{{RANK_OPTION}:+--output=$(printf %s \"${RANK_OPTION}\" | sed 's/%/%%/g'){RANK_SUFFIX}%t}}"
)


@dataclass(frozen=True)
class Rendered:
    argv: tuple[str, ...]  # sbatch and its arguments (the script comes on stdin)
    script: str
    tag: str

    def text(self) -> str:
        """What --dry-run prints: the command line, then the script."""
        return f"# {shlex.join(self.argv)} < script\n{self.script}"


def _safe(value: str) -> bool:
    return bool(SAFE_VALUE.fullmatch(value)) and not value.startswith("-")


def _mem(mb: int) -> str:
    return f"{mb // 1024}G" if mb % 1024 == 0 else f"{mb}M"


RESERVED = ("comment", "parsable", "wrap", "test-only")  # our tag, our answer, the script on stdin


# torchrun writes the root cause of a failed worker (its traceback, as JSON) to TORCHELASTIC_ERROR_FILE:
# each node's beside its rank file, ``<StdOut>.rank<N>.error.json``, unless env: names one. Read on the
# node from the step's own stdout (the rank file); nothing when that is no regular file (srun's relay,
# or a container that does not see the path).
ERROR_SUFFIX = ".error.json"
ERROR_FILE = (
    '[ -n "${TORCHELASTIC_ERROR_FILE-}" ] || { YF_LOG=$(readlink "/proc/$$/fd/1" 2>/dev/null) && [ -f "$YF_LOG" ] && '
    f'TORCHELASTIC_ERROR_FILE="$YF_LOG{ERROR_SUFFIX}" && export TORCHELASTIC_ERROR_FILE; }}\n'
)


def options(spec: JobSpec, defaults: dict | None = None, in_container: bool = False) -> list[tuple[str, str | None]]:
    """The sbatch options ``spec`` asks for, in order, as (long name, value or None for a flag):
    its fields, then ``slurm.options`` passed through. Raises ``SpecError`` for an option set twice or
    one of ours (``--comment`` carries the submit tag)."""
    defaults = defaults or {}
    s = spec.section("slurm")
    res = spec.resources
    out: list[tuple[str, str | None]] = [("job-name", spec.name), ("nodes", str(res.nodes))]
    partition = s.get("partition") or defaults.get("partition")
    account = s.get("account") or defaults.get("account")
    for key, value in (
        ("partition", partition),
        ("account", account),
        ("qos", s.get("qos")),
        ("time", s.get("time")),
        ("array", s.get("array")),
        ("constraint", s.get("constraint")),
    ):
        if value:
            out.append((key, str(value)))
    if res.gpus:
        gpu_type = s.get("gpu_type")
        out.append(("gres", f"gpu:{gpu_type}:{res.gpus}" if gpu_type else f"gpu:{res.gpus}"))
    if res.nodes > 1 or spec.kind is JobKind.MULTI_NODE:
        out.append(("ntasks-per-node", "1"))
    if res.cpus:
        out.append(("cpus-per-task", str(res.cpus)))
    if res.memory_mb:
        out.append(("mem", _mem(res.memory_mb)))
    if s.get("output"):
        out.append(("output", str(s["output"])))
    if s.get("error"):
        out.append(("error", str(s["error"])))
    if spec.workdir and not in_container:  # in a container it is the image's path, set by the runtime
        out.append(("chdir", spec.workdir))
    if s.get("exclusive"):
        out.append(("exclusive", None))
    taken = {key for key, _ in out}
    problems = []
    for key, value in (s.get("options") or {}).items():
        path = f"slurm.options.{key}"
        if key in RESERVED:
            problems.append((spec.source or "<spec>", 0, path, f"--{key} is set by yanflow-tui; remove it"))
        elif key in taken:
            problems.append((spec.source or "<spec>", 0, path, f"--{key} is already set by the spec's own fields"))
        else:
            out.append((key, None if value is True else str(value)))
    if problems:
        raise SpecError(problems)
    return out


def render(spec: JobSpec, tag: str, defaults: dict | None = None, container: Container | None = None) -> Rendered:
    """``tag`` goes into ``--comment=yanflow:<tag>`` so a timed-out submit can be found again (with the
    job's image and output folder, ``comment.tagged``).
    Any name Slurm takes is passed through unchanged (a newline too: sbatch stores it as given).
    ``container``: the cluster's runtime, which runs a spec with ``image:``."""
    if spec.image and container is None:
        raise BackendError(
            f"image {spec.image!r}: this cluster runs no containers; name its runtime in the cluster's "
            f"config (container: {{runtime: pyxis|apptainer|podman}}) or remove image:"
        )
    if spec.mounts and not spec.image:
        raise BackendError("mounts: are bind mounts into a container; add image: or remove mounts:")
    boxed = container if spec.image else None
    facts = {"image": spec.image, "outputs": spec.outputs}  # read back by a console started later (``comment``)
    options_ = [*options(spec, defaults, boxed is not None), ("comment", tagged(tag, facts))]

    argv = ["sbatch", "--parsable"]
    lines = ["#!/bin/sh"]
    for key, value in options_:
        if value is None:
            lines.append(f"#SBATCH --{key}")
        elif _safe(value):
            lines.append(f"#SBATCH --{key}={value}")
        else:
            argv.append(f"--{key}={value}")
    multi = spec.kind is JobKind.MULTI_NODE
    if multi:
        clash = sorted(set(spec.env) & set(launchers.reserved_env(spec.launcher)))
        if clash:
            raise BackendError(
                f"env: {', '.join(clash)} are set for every node of a multi-node job; remove them from env:"
            )
        lines += _rendezvous(spec)
    logdir = spec.section(SECTION).get("logdir")
    if logdir:  # the console reads it back from the batch script (``tbfiles``); the job may use it
        lines.append(f"export {LOGDIR_ENV}={shlex.quote(str(logdir))}")
    for key, value in spec.env.items():
        if not ENV_KEY.fullmatch(key):
            raise SpecError([(spec.source or "<spec>", 0, f"env.{key}", "not a valid environment variable name")])
        lines.append(f"export {key}={shlex.quote(value)}")
    command = spec.command if isinstance(spec.command, str) else shlex.join(spec.command)
    if boxed is not None:
        lines.append(_in_container(spec, boxed, command))
    else:
        lines.append(_multi_node(spec) if multi else command)
    return Rendered(tuple(argv), "\n".join(lines) + "\n", tag)


def render_native(spec: JobSpec, tag: str | None, defaults: dict | None = None) -> Rendered:
    """An sbatch script sent as written (``spec.native``), on stdin. What the spec's fields say
    differently from the script's own directives (an edit in the form, the cluster's defaults where the
    script says nothing) goes on the command line, which sbatch puts over the directives, after the
    options the job ran with where it is one given back to submit again (``NativeFile.recorded``). ``tag`` goes
    into ``--comment`` unless the script sets its own (then it cannot be looked up by a tag)."""
    native = spec.native
    assert native is not None and native.written is not None
    if spec.image or spec.mounts:
        raise BackendError(
            "an sbatch script is sent as written and runs no container: start one in the script itself "
            "(srun --container-image=..., apptainer exec ...), or submit a spec with image:"
        )
    written = dict(options(native.written))
    argv = ["sbatch", "--parsable"]
    if tag is not None and not nativefile.sbatch_sets(native, "comment"):
        argv.append(f"--comment={tagged(tag, {'outputs': spec.outputs})}")
    # A job given back to submit again: the options it ran with, then what the form changed (sbatch takes
    # the last of an option given twice); the cluster's defaults are for a file that says nothing.
    argv += [f"--{key}={value}" for key, value in native.recorded if key not in RESERVED]
    defaults = None if native.recorded else defaults
    for key, value in options(spec, defaults):
        if key not in written or written[key] != value:
            argv.append(f"--{key}" if value is None else f"--{key}={value}")
    for key, value in spec.env.items():
        if not ENV_KEY.fullmatch(key):
            raise SpecError([(spec.source or "<spec>", 0, f"env.{key}", "not a valid environment variable name")])
        if "," in value:
            raise SpecError([(spec.source or "<spec>", 0, f"env.{key}", "sbatch --export cannot pass a comma")])
    if spec.env:  # the job's environment: sbatch's own, plus these (never a shell line)
        argv.append("--export=" + ",".join(["ALL", *(f"{k}={v}" for k, v in spec.env.items())]))
    command = spec.command if isinstance(spec.command, str) else shlex.join(spec.command)
    return Rendered(tuple(argv), nativefile.sbatch_with_body(native, command), tag or "")


def _rendezvous(spec: JobSpec) -> list[str]:
    """What every node agrees on, read once by the batch shell from the allocation (never per node):
    the first node's address, a port from the job id, the node and process counts, and (horovodrun)
    the host list with one slot per process."""
    nproc = max(1, spec.resources.gpus)
    lines = [
        'MASTER_NODE=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
        # The address Slurm itself reaches that node at (NodeAddr); its name where none is set.
        'MASTER_ADDR=$(scontrol -o show node "$MASTER_NODE" '
        "| sed -n 's/.*[[:space:]]NodeAddr=\\([^[:space:]]*\\).*/\\1/p')",
        "MASTER_ADDR=${MASTER_ADDR:-$MASTER_NODE}",
        f"MASTER_PORT=$(( {PORT_BASE} + SLURM_JOB_ID % {PORT_RANGE} ))",
        f"NNODES=$SLURM_NNODES NPROC_PER_NODE={nproc}",
        "WORLD_SIZE=$(( NNODES * NPROC_PER_NODE ))",
        "export MASTER_ADDR MASTER_PORT NNODES NPROC_PER_NODE WORLD_SIZE",
    ]
    if spec.launcher == "horovod":
        lines.append(
            'HOSTS=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | sed "s/\\$/:$NPROC_PER_NODE/" '
            "| paste -s -d , -); export HOSTS"
        )
    if spec.launcher == "tensorflow":  # every node's host:port, for the TF_CONFIG each node builds
        lines.append(
            'TF_WORKERS=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | sed "s/\\$/:$MASTER_PORT/" '
            "| paste -s -d , -); export TF_WORKERS"
        )
    return lines


def _multi_node(spec: JobSpec, container: Container | None = None) -> str:
    """The job's last line. A per-node launcher (and ``none``) runs as one ``srun`` task per node, and
    its node rank is read on that node, inside the step (``$SLURM_NODEID``), from a script passed as
    one quoted word. horovodrun is one driver, started on the first node, that starts every process.
    With a ``container``, that script (or the driver) runs in the job's image."""
    launcher = spec.launcher
    prefix = launchers.prefix(launcher)
    if isinstance(spec.command, tuple):
        user = shlex.join(launchers.handed_words(launcher, spec.command))
        if prefix is None:
            user = f"exec {user}"
    else:
        user = spec.command if prefix is None else launchers.handed_line(launcher, spec.command)
    if launcher == "horovod":
        if container is None:
            return f"{prefix} {user}"
        return _one_task(spec, container, f"exec {prefix} {user}\n")
    head = "NODE_RANK=$SLURM_NODEID; export NODE_RANK\n"
    if launcher == "torchrun":
        head += ERROR_FILE
    if prefix is None:
        step = f"{head}{user}\n"
    else:
        step = f"{head}exec {prefix} {user}\n"
    srun = f'{RANK_OUTPUT}\nsrun --ntasks-per-node=1 --kill-on-bad-exit=1 ${{{RANK_OPTION}:+"${RANK_OPTION}"}}'
    if container is None:
        return f"{srun} /bin/sh -c {shlex.quote(step)}"
    pyxis = shlex.join(containers.srun_options(container, spec))
    return " ".join(filter(None, [srun, pyxis, containers.inside(container, spec, step, _env_names(spec))]))


def _env_names(spec: JobSpec) -> list[str]:
    """The variables the batch shell sets for the job, which a podman task passes into its container."""
    names = [*spec.env]
    if spec.kind is JobKind.MULTI_NODE:
        names += [*launchers.reserved_env(spec.launcher)]
    return names


def _one_task(spec: JobSpec, container: Container, script: str) -> str:
    """``script`` in the image on the batch shell's node: pyxis needs a step for that (one task)."""
    inner = containers.inside(container, spec, script, _env_names(spec))
    if container.runtime != "pyxis":
        return inner
    return shlex.join(["srun", "--nodes=1", "--ntasks=1", *containers.srun_options(container, spec)]) + " " + inner


def _in_container(spec: JobSpec, container: Container, command: str) -> str:
    """The last line of a job with ``image:``: a multi-node job's per-node script, or the command,
    run in the image."""
    if spec.kind is JobKind.MULTI_NODE:
        return _multi_node(spec, container)
    script = command if isinstance(spec.command, str) else f"exec {command}"
    return _one_task(spec, container, script + "\n")
