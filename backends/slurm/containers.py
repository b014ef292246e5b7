"""Slurm jobs in containers: the cluster's runtime (``container: {runtime: pyxis|apptainer|singularity|
podman, conf: PATH, args: [...]}``) and the shell text that runs a job's command in its ``image:`` with its
``mounts:`` and workdir, on the node.

- Pyxis (the SPANK plugin over enroot) adds options to ``srun``; the step's command runs inside.
- Apptainer/Singularity: ``apptainer exec [--nv] --bind ... --pwd ... IMAGE cmd``, inside the step.
- podman: ``podman run --rm`` per task, named from the job, step and task ids (expanded on the node), the
  job's variables passed by name (their values never enter the script twice), the allocated GPUs as CDI
  devices, stopped and removed (``podman stop``, ``rm --force``) when Slurm signals the task.

Whatever differs per node (``$SLURM_NODEID``, the GPU list) is expanded by the node's own shell, inside
the step, never by the batch shell. Pure functions, no I/O.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from yanflow_tui.backends.containers import checked_args, checked_mapping
from yanflow_tui.errors import BackendError
from yanflow_tui.model import JobSpec

RUNTIMES = ("pyxis", "apptainer", "singularity", "podman")


class _Raw(str):
    """A word of the podman line that the node's shell expands (every other word is quoted)."""


_NAME, _DEVICES = _Raw('"$name"'), _Raw('"$@"')
STOP_SECONDS = 5  # podman stop's grace when Slurm signals the task (Slurm's KillWait is 30 s by default)


@dataclass(frozen=True)
class Container:
    runtime: str  # one of RUNTIMES
    conf: str = ""  # podman: a containers.conf on the nodes (CONTAINERS_CONF)
    args: tuple[str, ...] = ()  # extra options for the runtime (srun's for pyxis)


def configured(options: Mapping[str, Any], cluster: str) -> Container | None:
    """The cluster's ``container:`` option, checked; None when it names none."""
    raw = options.get("container")
    if raw is None:
        return None
    raw = checked_mapping(raw, cluster, "pyxis")
    runtime = raw.get("runtime")
    if runtime not in RUNTIMES:
        raise BackendError(
            f"cluster {cluster!r}: container.runtime must be one of {', '.join(RUNTIMES)}, got {runtime!r}"
        )
    args = checked_args(raw, cluster)
    conf = raw.get("conf") or ""
    if not isinstance(conf, str):
        raise BackendError(f"cluster {cluster!r}: container.conf must be a path")
    return Container(runtime, conf, args)


def _paths(spec: JobSpec) -> list[tuple[str, str, bool]]:
    """The mounts, refused where a separator of the runtimes' mount lists is in a path."""
    out = []
    for mount in spec.mounts:
        for path in (mount.source, mount.target):
            if "," in path or ":" in path:
                raise BackendError(f"mounts: {path!r}: a path with ',' or ':' cannot be passed to a container runtime")
        out.append((mount.source, mount.target, mount.read_only))
    return out


def srun_options(container: Container, spec: JobSpec) -> list[str]:
    """Pyxis's srun options (none for the other runtimes). Pyxis's documented flags (``srun --help``):
    ``--container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH``;
    ``--container-mounts=SRC:DST[:FLAGS][,SRC:DST...]`` (flags such as ``ro``);
    ``--container-workdir=PATH`` ("working directory inside the container")."""
    if container.runtime != "pyxis":
        return []
    assert spec.image
    words = [f"--container-image={spec.image}"]
    mounts = _paths(spec)
    if mounts:
        words.append("--container-mounts=" + ",".join(f"{s}:{t}" + (":ro" if ro else "") for s, t, ro in mounts))
    if spec.workdir:
        words.append(f"--container-workdir={spec.workdir}")
    return [*words, *container.args]


def inside(container: Container, spec: JobSpec, script: str, env_names: Iterable[str] = ()) -> str:
    """The shell words that run ``script`` (shell text) in the image, on the node, from within a Slurm
    task or the batch shell: pyxis's srun already entered the image, so ``/bin/sh -c SCRIPT``; apptainer's
    ``exec``; or the podman wrapper. ``env_names``: the variables the batch shell set for the job, which
    podman passes by name (pyxis and apptainer keep the environment)."""
    sh = f"/bin/sh -c {shlex.quote(script)}"
    if container.runtime == "pyxis":
        return sh
    if container.runtime in ("apptainer", "singularity"):
        return shlex.join(apptainer_words(container, spec)) + " " + sh
    return f"/bin/sh -c {shlex.quote(podman_wrapper(container, spec, script, env_names))}"


def apptainer_words(container: Container, spec: JobSpec) -> list[str]:
    """``apptainer exec`` and its options before the command. Apptainer's documented flags
    (``apptainer exec --help``): ``--nv`` "enable Nvidia support"; ``-B, --bind`` "a user-bind path
    specification. spec has the format src[:dest[:opts]] ... Mount options ('opts') may be specified as
    'ro' (read-only) ... Multiple bind paths can be given by a comma separated list"; ``--pwd`` "initial
    working directory for payload process inside the container"."""
    assert spec.image
    words = [container.runtime, "exec"]
    if spec.resources.gpus:
        words.append("--nv")
    mounts = _paths(spec)
    if mounts:
        words += ["--bind", ",".join(f"{s}:{t}" + (":ro" if ro else "") for s, t, ro in mounts)]
    if spec.workdir:
        words += ["--pwd", spec.workdir]
    return [*words, *container.args, spec.image]


def podman_wrapper(container: Container, spec: JobSpec, script: str, env_names: Iterable[str]) -> str:
    """A small sh script, run on the node, that runs ``script`` in ``podman run --rm``: named per task
    (job, step, task id), the host network (for the rendezvous), ``SLURM_*`` and ``env_names`` passed
    by name, the task's GPUs as CDI devices, and ``podman stop`` when Slurm signals the task (its
    container lives under conmon, outside the task's processes)."""
    assert spec.image
    gpus = [_DEVICES] if spec.resources.gpus else []  # the --device words the loop below sets
    run: list[str] = ["podman", "run", "--rm", "--name", _NAME, "--network", "host", *gpus, "--env", "SLURM_*"]
    for name in dict.fromkeys(env_names):
        run += ["--env", name]
    for source, target, read_only in _paths(spec):
        run += ["--mount", f"type=bind,source={source},target={target}" + (",readonly" if read_only else "")]
    if spec.workdir:
        run += ["--workdir", spec.workdir]
    run += [*container.args, spec.image, "/bin/sh", "-c", script]
    words = " ".join(w if isinstance(w, _Raw) else shlex.quote(w) for w in run)
    if container.conf:
        words = f"CONTAINERS_CONF={shlex.quote(container.conf)} {words}"
    lines = ['name="yanflow-$SLURM_JOB_ID-${SLURM_STEP_ID:-batch}-${SLURM_PROCID:-0}"', "set --"]
    if gpus:  # the GPUs Slurm gave this task, by index
        lines.append(
            'for gpu in $(echo "${SLURM_STEP_GPUS:-$SLURM_JOB_GPUS}" | tr , " "); do '
            'set -- "$@" --device "nvidia.com/gpu=$gpu"; done'
        )
    # stop, then rm: one created but not yet started when the signal came is not taken by --rm
    env = f"CONTAINERS_CONF={shlex.quote(container.conf)} " if container.conf else ""
    stop = (
        f'{env}podman stop --time {STOP_SECONDS} "$name" >/dev/null 2>&1; '
        f'{env}podman rm --force "$name" >/dev/null 2>&1'
    )
    lines += [
        f"trap {shlex.quote(stop)} TERM INT HUP",
        f"{words} &",
        'pid=$!; wait "$pid"; code=$?',
        'while kill -0 "$pid" 2>/dev/null; do wait "$pid"; code=$?; done',  # a trapped signal ended the wait
        'exit "$code"',
    ]
    return "\n".join(lines) + "\n"
