"""The registry: the backend packages' declarations (``BackendInfo``, from each ``plugin.py``) by kind,
and the backend class of each kind, imported lazily so unused SDKs cost nothing.

Backends are found through the entry-point group ``yanflow_tui.backends`` (``kind = "package.plugin:INFO"``):
the four shipped ones are declared in this project's pyproject.toml, and a site ships its own as a package
declaring one the same way. Only each ``plugin.py`` is imported (on first use), never a backend module,
until a cluster of that kind is made. A shipped kind whose entry point is missing (a source checkout never
installed, metadata older than the code) is read from its package directly. A plugin that cannot be
loaded (an import error, a bad declaration, a kind already taken) is left out with a one-line note
naming its package and distribution (``notes()``, which the CLI and the console show); the others work.

The core asks it for the kinds, their config options, spec sections, native job files, refresh
defaults and discovery; nothing outside a backend package lists kinds. Tests plug fakes in with
``register`` / ``registered``.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from importlib import metadata
from types import ModuleType
from typing import Any

from yanflow_tui.backends.base import Backend, BackendInfo, Capabilities
from yanflow_tui.backends.jobfiles import NativeFormat
from yanflow_tui.errors import BackendUnavailable
from yanflow_tui.model import NATIVE_KINDS, ClusterConfig

GROUP = "yanflow_tui.backends"  # the entry-point group backend packages declare themselves in
# The backend packages shipped, in the order their kinds are listed (and discovered); plugins follow.
PACKAGES = ("local", "slurm", "kubernetes", "determined")

_INFOS: dict[str, BackendInfo] = {}  # kind -> its declaration, filled on first use (``_load``)
_NOTES: list[str] = []  # one line per plugin left out
_BROKEN: dict[str, str] = {}  # kind -> the note on its plugin, left out
_ORIGINS: dict[str, str] = {}  # kind -> where its declaration came from (a plugin's package and distribution)
_loaded = False


def _declaration(found: Any, where: str) -> BackendInfo:
    """The ``BackendInfo`` an entry point names: the object itself, or a module's ``INFO``."""
    info = getattr(found, "INFO", None) if isinstance(found, ModuleType) else found
    if not isinstance(info, BackendInfo):
        raise TypeError(f"{where} is not a BackendInfo")
    return info


def _origin(entry: metadata.EntryPoint) -> str:
    dist = getattr(entry, "dist", None)
    named = f"distribution {dist.metadata['Name']} {dist.version}" if dist is not None else "no distribution"
    return f"package {entry.value.split(':')[0].split('.')[0]} ({named}, entry point {entry.name} = {entry.value})"


def _entry_points() -> list[metadata.EntryPoint]:
    """The group's entry points: shipped kinds first (in ``PACKAGES`` order), then the rest by name;
    an entry point listed twice with the same target (two copies of the same metadata) once."""
    try:
        found = list(metadata.entry_points(group=GROUP))
    except Exception as exc:  # unreadable metadata must not stop the console
        _NOTES.append(f"backend plugins not looked up: {type(exc).__name__}: {exc}")
        return []
    unique = list({(e.name, e.value): e for e in reversed(found)}.values())[::-1]
    order = {kind: i for i, kind in enumerate(PACKAGES)}
    return sorted(unique, key=lambda e: (order.get(e.name, len(order)), e.name))


def _add(info: BackendInfo) -> None:
    if info.kind in _INFOS:
        raise ValueError(f"kind {info.kind!r} is already declared")
    clash = [f.kind for f in info.native if any(f.kind == g.kind for i in _INFOS.values() for g in i.native)]
    if clash:
        raise ValueError(f"native file kind {clash[0]!r} is already declared")
    _INFOS[info.kind] = info
    NATIVE_KINDS.update({f.kind: f.label for f in info.native})


def _load() -> None:
    """Read every declaration once: the entry points, then any shipped package without one."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for entry in _entry_points():
        try:
            info = _declaration(entry.load(), entry.value)
            if info.kind != entry.name:
                raise ValueError(f"it declares kind {info.kind!r} under the entry point name {entry.name!r}")
            _add(info)
            _ORIGINS[info.kind] = _origin(entry)
        except Exception as exc:  # a broken plugin is left out, never stops the console
            reason = " ".join(f"{type(exc).__name__}: {exc}".split())
            _NOTES.append(f"backend plugin {entry.name!r} not loaded from {_origin(entry)}: {reason}")
            _BROKEN.setdefault(entry.name, _NOTES[-1])
    for package in PACKAGES:  # no entry point (a checkout run without installing): shipped all the same
        if package not in _INFOS and package not in _BROKEN:
            module = importlib.import_module(f"{__package__}.{package}.plugin")
            _add(_declaration(module, module.__name__))


def reload() -> None:
    """Forget every declaration and read them again at next use (a test that installs a backend package
    or takes it away; kinds registered with ``register`` are forgotten too)."""
    global _loaded
    for kept in (_INFOS, _NOTES, _BROKEN, _ORIGINS, NATIVE_KINDS):
        kept.clear()
    _loaded = False


def notes() -> tuple[str, ...]:
    """One line for each backend plugin left out and why, naming its package and distribution."""
    _load()
    return tuple(_NOTES)


def broken(kind: str) -> str | None:
    """The note on ``kind``'s plugin when it was left out (its clusters carry it as their problem)."""
    _load()
    return _BROKEN.get(kind) if kind not in _INFOS else None


def failed(kind: str, what: str) -> None:
    """Note that ``kind``'s declared code failed at ``what`` (its discovery raised): one line naming its
    package and distribution, shown like a plugin left out."""
    where = _ORIGINS.get(kind, f"package {__package__}.{kind}")
    line = " ".join(f"backend {kind!r} from {where}: {what}".split())
    if line not in _NOTES:  # discovery runs again on a reload of the config
        _NOTES.append(line)


def native_formats() -> tuple[NativeFormat, ...]:
    """Every declared native job file format, in the order of ``kinds()``."""
    _load()
    return tuple(f for info in _INFOS.values() for f in info.native)


def native_format(kind: str) -> NativeFormat | None:
    """The format whose ``NativeFile.kind`` is ``kind``; None for our own spec or an unknown kind."""
    return next((f for f in native_formats() if f.kind == kind), None)


def kinds() -> tuple[str, ...]:
    """The declared kinds, shipped ones first in ``PACKAGES`` order, then plugins, then registered ones."""
    _load()
    return tuple(_INFOS)


def infos() -> tuple[BackendInfo, ...]:
    """Every declaration, in the order of ``kinds()``."""
    _load()
    return tuple(_INFOS.values())


def info(kind: str) -> BackendInfo | None:
    """The declaration of ``kind``; None for a kind nobody registered."""
    _load()
    return _INFOS.get(kind)


def register(kind: str, target: str | type[Backend] | BackendInfo) -> None:
    """Map ``kind`` to a declaration, or just to a backend class or its ``"module:Class"`` path (tests
    register fakes here). A class or path for a declared kind keeps its declaration (options, spec
    section, discovery); for a new kind it gets a bare one."""
    _load()
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
    _load()
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
    found = info(kind)
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
        raise BackendUnavailable(missing_package(kind, exc.name or "", found.extra)) from None
    cls = getattr(module, class_name)
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise BackendUnavailable(f"the {kind} backend {target!r} is not a Backend class")
    return cls


def install_command(extra: str) -> str:
    """The command that installs a declared extra (``BackendInfo.extra``) the way this console was
    installed: one of ours (``yanflow-tui[determined]``) by ``yanflow_tui.installs``, another
    distribution's with pip."""
    import shlex

    from yanflow_tui import installs

    name, bracket, rest = extra.partition("[")
    if bracket and name == installs.DIST and rest.endswith("]"):
        return installs.extra_command(rest[:-1])
    return f"pip install {shlex.quote(extra)}"


def missing_package(kind: str, package: str, extra: str) -> str:
    """What a cluster of ``kind`` says when its backend's ``package`` is not installed: the extra to add."""
    hint = f" ({install_command(extra)})" if extra else ""
    return f"the {kind} backend needs the Python package {package!r}{hint}"


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
