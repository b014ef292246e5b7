"""The declarative field table of the job spec and of the config: each field's name, type, limits,
choices and one line of help, in the order the checkers list them. The checkers (``spec``, ``config``)
take their keys, limits and choices from here, and the JSON Schema generator (``fileschemas``) builds
the shipped schemas from the same table, so the two cannot drift. The backends' own parts (the spec's
``slurm:``... sections, each kind's cluster options) come from the backend registry, as the checkers
read them.

Types: ``text`` (a string, or a number kept as written), ``whole`` (an integer >= ``minimum``),
``number``, ``bool``, ``choice`` (one of ``choices()``), ``command`` (a shell line or a list of words),
``env`` (NAME: value), ``mounts``, ``memory`` (MiB, or a size such as 16G), ``resources``, ``map``,
``list``, ``options`` (command-line options), and the config's ``clusters``, ``keymap``, ``defaults``,
``images`` and ``metrics``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Field:
    type: str
    help: str
    required: bool = False
    minimum: float = 0
    max_length: int | None = None
    nonempty: bool = True  # a text field that must hold something besides spaces
    choices: Callable[[], Sequence[str]] | None = None
    default: object = None


def _kinds() -> tuple[str, ...]:
    from yanflow_tui.model import JobKind

    return tuple(k.value for k in JobKind)


def _launchers() -> tuple[str, ...]:
    from yanflow_tui.launchers import LAUNCHERS

    return LAUNCHERS


def _cluster_kinds() -> tuple[str, ...]:
    from yanflow_tui.backends import registry

    return registry.kinds()


# The job spec's common fields (the backends' sections follow them: ``spec.section_keys``).
SPEC_FIELDS: dict[str, Field] = {
    "name": Field("text", "the job's name: any text, never interpreted by a shell", required=True, max_length=200),
    "kind": Field("choice", "the job type", choices=_kinds, default="single"),
    "cluster": Field("text", "the configured cluster it goes to (--cluster overrides it)"),
    "command": Field("command", "a shell line, or a list of argv words"),
    "image": Field("text", "a container image (local podman/docker, Slurm's Pyxis/Apptainer, Kubernetes, Determined)"),
    "workdir": Field("text", "the folder the job starts in"),
    "outputs": Field("text", "the folder the Files view opens, relative to the workdir (default: the workdir)"),
    "resume": Field("text", "a glob of the job's checkpoints, relative to its outputs, e.g. ckpt/step_*.pt (resume)"),
    "env": Field("env", "environment variables, NAME: value"),
    "mounts": Field("mounts", 'folders mounted in the container: "source:target[:ro]" or {source, target, read_only}'),
    "resources": Field("resources", "what the job asks for; gpus, cpus and memory are per node"),
    "launcher": Field("choice", "multi-node and experiment jobs: the per-node launcher", choices=_launchers),
    "description": Field("text", "free text shown in the console", nonempty=False),
}

RESOURCE_FIELDS: dict[str, Field] = {
    "nodes": Field("whole", "nodes (a single job: exactly 1)", minimum=1, default=1),
    "gpus": Field("whole", "GPUs per node", default=0),
    "cpus": Field("whole", "CPUs per node", minimum=1),
    "memory": Field("memory", "memory per node: MiB, or a size such as 16G, 512M, 1T"),
}

MOUNT_FIELDS: dict[str, Field] = {
    "source": Field("text", "the folder on the host", required=True),
    "target": Field("text", "the absolute path in the container", required=True),
    "read_only": Field("bool", "mount it read-only"),
}

# The config file's top level.
CONFIG_FIELDS: dict[str, Field] = {
    "clusters": Field("clusters", "the clusters (default: discovered: this machine, Slurm, Kubernetes, Determined)"),
    "read_only": Field("bool", "true closes the gate on every cluster"),
    "refresh_seconds": Field("number", "how often the Queue refreshes", minimum=0.5, default=5),
    "theme": Field("text", "a Textual theme name"),
    "keymap": Field("keymap", "binding id -> key, e.g. {cancel-job: K}"),
    "all_users": Field("bool", "the Queue starts on everyone's jobs instead of mine"),
    "mouse": Field("bool", "false: the terminal keeps the mouse (f2 switches)", default=True),
    "notify": Field("notify", "a word when one of my jobs ends: a toast, the bell, a desktop notice; false: none"),
    "idle_gpus": Field("idle_gpus", "when an allocated GPU counts as idle: {below_percent: 5, minutes: 10}"),
}

NOTIFY_FIELDS: dict[str, Field] = {
    "on": Field("bool", "false: no notice at all", default=True),
    "states": Field("end_states", "the end states announced (default: every one)"),
    "clusters": Field("list", "only these clusters (default: every one)"),
    "bell": Field("bool", "ring the terminal's bell", default=True),
    "desktop": Field("bool", "a desktop notice (OSC 9 and OSC 777, through tmux's passthrough)", default=True),
}

IDLE_GPU_FIELDS: dict[str, Field] = {
    "below_percent": Field("number", "utilisation under which an allocated GPU is idle", default=5),
    "minutes": Field("number", "how long it stays under before it is called idle", default=10),
}

# Every cluster entry's own keys; then ``CLUSTER_SHARED_OPTIONS`` (every kind's, kept in its options);
# then the keys of its kind (``BackendInfo.options``).
CLUSTER_FIELDS: dict[str, Field] = {
    "name": Field("text", "the cluster's name in the console and on the command line", required=True),
    "kind": Field("choice", "the backend", required=True, choices=_cluster_kinds),
    "read_only": Field("bool", "refuse every submit, cancel or other change on this cluster"),
    "refresh_seconds": Field("number", "how often this cluster is read", minimum=0.5),
    "description": Field("text", "free text shown on the Clusters screen", nonempty=False),
    "defaults": Field("defaults", "what the Submit form starts with on this cluster: spec fields but cluster"),
    "images": Field("images", "the images the Submit form offers: names, or {name, description, frameworks}"),
}

CLUSTER_SHARED_OPTIONS: dict[str, Field] = {
    "metrics": Field("metrics", "DCGM GPU utilisation from Prometheus: {prometheus: URL, ...}"),
    "storage": Field("text", "clusters with the same storage name see the same files: a resume moves no checkpoint"),
}

IMAGE_FIELDS: dict[str, Field] = {
    "name": Field("text", "the image, e.g. nvcr.io/nvidia/pytorch:24.05-py3", required=True),
    "description": Field("text", "one line on it", nonempty=False),
    "frameworks": Field("list", "the frameworks it holds, e.g. [pytorch, deepspeed]"),
}

METRICS_FIELDS: dict[str, Field] = {
    "prometheus": Field("text", "the Prometheus server's http:// or https:// URL", required=True),
    "bearer_token_file": Field("text", "a file holding a bearer token"),
    "username": Field("text", "basic authentication's user"),
    "password_file": Field("text", "a file holding basic authentication's password"),
    "verify_tls": Field("bool", "false: do not check its certificate"),
    "ca_file": Field("text", "a CA bundle for its certificate"),
    "timeout": Field("number", "seconds per query", minimum=0.1),
}


def keys(table: dict[str, Field]) -> tuple[str, ...]:
    return tuple(table)


def required(table: dict[str, Field]) -> tuple[str, ...]:
    return tuple(name for name, field in table.items() if field.required)
