"""Local jobs in containers: which runtime (podman or docker) runs a job's ``image:``, the ``run`` argv
that starts it, and the calls that stop it and ask whether it still runs.

The runtime comes from the cluster's config, ``container: {runtime: podman|docker, conf: PATH, args: [...]}``,
or is detected on PATH (podman first). ``conf`` names a containers.conf that podman reads through
``CONTAINERS_CONF`` (a machine that needs runc and cgroupfs says so there, not in the code); ``args`` are
extra ``run`` options the site needs (``["--network", "none"]``). A job's container is named from the
state dir, the host and the job id, so a later console finds it again by name. argv lists only; the
blocking calls here run in threads and have timeouts.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from yanflow_tui.backends.containers import checked_args, checked_mapping
from yanflow_tui.errors import BackendError

RUNTIMES = ("podman", "docker")
CALL_TIMEOUT = 30.0  # inspect, stop: each call to the runtime's client


@dataclass(frozen=True)
class Runtime:
    name: str  # podman | docker
    path: str  # the client's executable
    conf: str = ""  # containers.conf for podman (CONTAINERS_CONF)
    args: tuple[str, ...] = ()  # extra options for ``run``

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment the client runs with: ``base`` (this process's), plus ``CONTAINERS_CONF``."""
        env = dict(os.environ if base is None else base)
        if self.conf:
            env["CONTAINERS_CONF"] = self.conf
        return env


def configured(options: Mapping[str, Any], cluster: str) -> tuple[Runtime | None, str]:
    """The runtime the cluster's ``container:`` option names, or the first found on PATH; with the reason
    when there is none (shown when a job asks for an image)."""
    raw = checked_mapping(options.get("container") or {}, cluster, "podman")
    name = raw.get("runtime")
    if name is not None and name not in RUNTIMES:
        raise BackendError(f"cluster {cluster!r}: container.runtime must be podman or docker, got {name!r}")
    args = checked_args(raw, cluster)
    conf = str(raw.get("conf") or "")
    for candidate in [name] if name else RUNTIMES:
        path = shutil.which(candidate)
        if path:
            return Runtime(candidate, path, str(Path(conf).expanduser()) if conf else "", args), ""
    if name:
        return None, f"container.runtime is {name}, but {name} is not installed on this machine"
    return None, "neither podman nor docker is installed on this machine"


def container_name(state_dir: Path, host: str, job_id: int) -> str:
    """Stable for one job: consoles sharing a state dir agree on it; other state dirs (tests) differ."""
    digest = hashlib.sha256(f"{Path(state_dir).resolve()}\0{host}".encode()).hexdigest()[:10]
    return f"yanflow-{digest}-{job_id}"


def run_argv(
    runtime: Runtime,
    name: str,
    spec: Mapping[str, Any],
    env: Mapping[str, str],
    gpus: Sequence[int],
) -> list[str]:
    """``podman run --rm`` (or docker's) for a job's spec data: its mounts as bind mounts (``:ro`` where
    asked), its workdir, ``env`` and the allocated GPUs (CDI devices for podman, ``--gpus`` for docker)."""
    argv = [runtime.path, "run", "--rm", "--name", name]
    for mount in spec.get("mounts") or []:
        source = str(Path(mount["source"]).expanduser())
        target = mount["target"]
        if "," in source or "," in target:
            raise BackendError(f"mount {source}:{target}: a path with a comma cannot be bind-mounted")
        read_only = ",readonly" if mount.get("read_only") else ""
        argv += ["--mount", f"type=bind,source={source},target={target}{read_only}"]
    if spec.get("workdir"):
        argv += ["--workdir", str(spec["workdir"])]
    for key, value in env.items():
        argv += ["--env", f"{key}={value}"]
    if gpus:
        if runtime.name == "docker":
            # Docker reads --gpus as CSV: a list of devices is one quoted field ('"device=0,2"').
            argv += ["--gpus", '"device=' + ",".join(map(str, gpus)) + '"']
        else:
            for index in gpus:
                argv += ["--device", f"nvidia.com/gpu={index}"]
    argv += [*runtime.args, str(spec["image"])]
    command = spec["command"]
    argv += ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
    return argv


def _call(runtime: Runtime, args: list[str], timeout: float = CALL_TIMEOUT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [runtime.path, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=runtime.env(),
        timeout=timeout,
        check=False,
    )


def running(runtime: Runtime, name: str) -> bool | None:
    """Whether the container runs (``inspect``); None when the runtime cannot tell."""
    try:
        result = _call(runtime, ["inspect", "--format", "{{.State.Running}}", name])
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0:
        return False  # no such container: --rm took it
    return result.stdout.strip() == "true"


def stop(runtime: Runtime, name: str, grace: float) -> None:
    """``stop`` with a grace period (SIGTERM, then SIGKILL), then ``kill`` if it still runs; quiet
    when the container is already gone."""
    seconds = max(1, int(grace))
    try:
        _call(runtime, ["stop", "--time", str(seconds), name], timeout=seconds + CALL_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        pass
    if running(runtime, name):
        try:
            _call(runtime, ["kill", name])
        except (OSError, subprocess.TimeoutExpired):
            pass


def remove(runtime: Runtime, name: str) -> None:
    """``rm --force``: a container that was created but never started is not taken by ``--rm`` (its
    client was killed first); quiet when there is none."""
    try:
        _call(runtime, ["rm", "--force", name])
    except (OSError, subprocess.TimeoutExpired):
        pass
