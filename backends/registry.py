"""The registry: cluster kind -> backend class, imported lazily so unused SDKs cost nothing."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager

from yanflow_tui.backends.base import Backend, Capabilities
from yanflow_tui.config import ClusterConfig
from yanflow_tui.errors import BackendUnavailable

_BACKENDS: dict[str, str] = {
    "local": "yanflow_tui.backends.local.backend:LocalBackend",
    "slurm": "yanflow_tui.backends.slurm.backend:SlurmBackend",
    "kubernetes": "yanflow_tui.backends.kubernetes.backend:KubernetesBackend",
    "determined": "yanflow_tui.backends.determined.backend:DeterminedBackend",
}


def register(kind: str, target: str | type[Backend]) -> None:
    """Map ``kind`` to a backend class or its ``"module:Class"`` path (tests register fakes here)."""
    _BACKENDS[kind] = target  # type: ignore[assignment]


@contextmanager
def registered(kind: str, target: str | type[Backend]) -> Iterator[None]:
    """``register`` for the length of a ``with`` block, then restore what ``kind`` meant before (tests use
    this to plug in a fake backend)."""
    before = _BACKENDS.get(kind)
    register(kind, target)
    try:
        yield
    finally:
        if before is None:
            _BACKENDS.pop(kind, None)
        else:
            _BACKENDS[kind] = before


def backend_class(kind: str) -> type[Backend]:
    target = _BACKENDS.get(kind)
    if target is None:
        raise BackendUnavailable(f"unknown cluster kind {kind!r}")
    if isinstance(target, type):
        return target
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise BackendUnavailable(f"the {kind} backend is not available in this version of yanflow-tui") from None
        raise BackendUnavailable(f"the {kind} backend needs the Python package {exc.name!r}") from None
    return getattr(module, class_name)


def create(config: ClusterConfig) -> Backend:
    """A backend for ``config``; an ``UnavailableBackend`` carrying the reason if it cannot be made
    (its config entry is broken: every located problem, one a line)."""
    if config.problems:
        return UnavailableBackend(config, "\n".join(config.problems))
    try:
        return backend_class(config.kind)(config)
    except BackendUnavailable as exc:
        return UnavailableBackend(config, str(exc))
    except Exception as exc:
        return UnavailableBackend(config, f"the {config.kind} backend failed to start: {type(exc).__name__}: {exc}")


class UnavailableBackend(Backend):
    """Stands in for a cluster whose backend cannot run here; every read says why in one line."""

    kind = "unavailable"
    capabilities = Capabilities()

    def __init__(self, config: ClusterConfig, reason: str):
        super().__init__(config)
        self.kind = config.kind  # type: ignore[misc]
        self.reason = reason

    async def list_jobs(self):
        raise BackendUnavailable(self.reason)

    async def list_nodes(self):
        raise BackendUnavailable(self.reason)
