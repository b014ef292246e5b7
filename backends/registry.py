"""The registry: the backend packages' declarations (``BackendInfo``, from each ``<kind>/plugin.py``) by
kind, and the backend class of each kind, imported lazily so unused SDKs cost nothing.

The core asks it for the kinds, their config options, spec sections, refresh defaults and discovery;
nothing outside a backend package lists kinds. A new backend is a package with a ``plugin.py`` named in
``PACKAGES``, or a ``register`` call (tests plug fakes in with ``registered``).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from yanflow_tui.backends.base import Backend, BackendInfo, Capabilities
from yanflow_tui.errors import BackendUnavailable
from yanflow_tui.model import ClusterConfig

# The backend packages shipped, in the order their kinds are listed (and discovered).
PACKAGES = ("local", "slurm", "kubernetes", "determined")


def _declared(package: str) -> BackendInfo:
    info = importlib.import_module(f"{__package__}.{package}.plugin").INFO
    if not isinstance(info, BackendInfo):
        raise TypeError(f"{__package__}.{package}.plugin.INFO is not a BackendInfo")
    return info


# kind -> its declaration; ``info.backend`` is the class (or "module:Class") clusters of that kind are made with
_INFOS: dict[str, BackendInfo] = {info.kind: info for info in map(_declared, PACKAGES)}


def kinds() -> tuple[str, ...]:
    """The declared kinds, shipped ones first in ``PACKAGES`` order, then registered ones."""
    return tuple(_INFOS)


def infos() -> tuple[BackendInfo, ...]:
    """Every declaration, in the order of ``kinds()``."""
    return tuple(_INFOS.values())


def info(kind: str) -> BackendInfo | None:
    """The declaration of ``kind``; None for a kind nobody registered."""
    return _INFOS.get(kind)


def register(kind: str, target: str | type[Backend] | BackendInfo) -> None:
    """Map ``kind`` to a declaration, or just to a backend class or its ``"module:Class"`` path (tests
    register fakes here). A class or path for a declared kind keeps its declaration (options, spec
    section, discovery); for a new kind it gets a bare one."""
    if isinstance(target, BackendInfo):
        if target.kind != kind:
            raise ValueError(f"a BackendInfo of kind {target.kind!r} registered as {kind!r}")
        _INFOS[kind] = target
    elif kind in _INFOS:
        _INFOS[kind] = replace(_INFOS[kind], backend=target)
    else:
        _INFOS[kind] = BackendInfo(kind, target)


@contextmanager
def registered(kind: str, target: str | type[Backend] | BackendInfo) -> Iterator[None]:
    """``register`` for the length of a ``with`` block, then restore what ``kind`` meant before (tests use
    this to plug in a fake backend)."""
    before = _INFOS.get(kind)
    register(kind, target)
    try:
        yield
    finally:
        if before is None:
            _INFOS.pop(kind, None)
        else:
            _INFOS[kind] = before  # in place where it was, so the kinds keep their order


def backend_class(kind: str) -> type[Backend]:
    found = _INFOS.get(kind)
    if found is None:
        raise BackendUnavailable(f"unknown cluster kind {kind!r}")
    target = found.backend
    if isinstance(target, type):
        return target
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise BackendUnavailable(f"the {kind} backend is not available in this version of yanflow-tui") from None
        raise BackendUnavailable(f"the {kind} backend needs the Python package {exc.name!r}") from None
    cls = getattr(module, class_name)
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise BackendUnavailable(f"the {kind} backend {target!r} is not a Backend class")
    return cls


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
        self.kind = config.kind
        self.reason = reason

    async def list_jobs(self):
        raise BackendUnavailable(self.reason)

    async def list_nodes(self):
        raise BackendUnavailable(self.reason)
