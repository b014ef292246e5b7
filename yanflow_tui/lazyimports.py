"""Lazy imports of heavy third-party packages: the one place for the console's lazy-import helpers.

``lazy_kubernetes``: the ``kubernetes`` client's package ``__init__`` files import every API class and
every model, with the config loaders, watch, stream, dynamic client, leader election and informer
(over 1,100 modules: about 50 MB of an idle console's memory and 0.45 s of CPU), where the backend uses a
few API classes and reads raw JSON (``_preload_content=False``). Called before the first import of
``kubernetes``, it puts stand-ins for those packages (``kubernetes``, ``kubernetes.client``, its ``api``
and ``models``) in ``sys.modules``: each is the package itself (its path, spec and version) with its
``__init__`` not run, and a name it exported (``client.CoreV1Api``, ``kubernetes.config``...) is imported
from its own module on first use (PEP 562 ``__getattr__``), the same object the eager ``__init__`` gives.
Once ``kubernetes`` is imported (a test, a plugin), it does nothing.

``lazy_determined``: the same for the ``determined`` SDK, whose package ``__init__`` files import the
training library (``core``, the profiler with ``pynvml``, storage managers, ``psutil``...) where the
backend uses ``determined.common.api``'s bindings, session and errors (about 5 MB of an idle console).

A name such a package's ``__init__`` makes otherwise (``determined.__version__`` from the metadata, a
guarded ``try`` import that fails), and any name none of its imports gives, runs the rest of that
``__init__`` once in the package (the eager import's names, late) before it is looked up again.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

# The packages whose ``__init__`` only imports names from their modules (and sets ``__version__``).
KUBERNETES_PACKAGES = ("kubernetes", "kubernetes.client", "kubernetes.client.api", "kubernetes.client.models")
DETERMINED_PACKAGES = ("determined", "determined.common", "determined.common.api")
# ``from X import a, b as c`` or ``from X import (a,\n b)``, at the top level or in a top-level ``try:``
_FROM_IMPORT = re.compile(r"^(try:[ \t]*\n)?([ \t]*)from ([\w.]+) import (?:\(([^)]*)\)|([^\n]*))", re.M)
_COMMENT = re.compile(r"#[^\n]*")
_VERSION = re.compile(r"""^(__version__|__project__) = ["']([^"']*)["'][ \t]*$""", re.M)
_lock = threading.Lock()


def lazy_kubernetes() -> bool:
    """Put the lazy stand-ins of the ``kubernetes`` packages in place, unless ``kubernetes`` is imported
    already or not installed; whether they are in place now. Thread-safe (the backend connects in a thread)."""
    return _lazy(KUBERNETES_PACKAGES)


def lazy_determined() -> bool:
    """The same for the ``determined`` SDK's packages (``determined``, ``determined.common`` and its ``api``)."""
    return _lazy(DETERMINED_PACKAGES)


def _lazy(packages: tuple[str, ...]) -> bool:
    with _lock:
        module = sys.modules.get(packages[0])
        if module is not None:
            return isinstance(module, LazyPackage)
        if importlib.util.find_spec(packages[0]) is None:
            return False
        for name in packages:
            if not _install(name):
                for done in packages:  # a layout this does not know: the eager imports, as before
                    sys.modules.pop(done, None)
                return False
        return True


class LazyPackage(ModuleType):
    """A package whose ``__init__`` was not run: its exported names are imported from their modules when
    first used, and kept; any other name runs the rest of the ``__init__`` first (``_whole``)."""

    _exports: dict[str, tuple[str, str]]  # name -> (the module it comes from, its name there; "": the module)
    _source: str  # the ``__init__``'s text
    _whole: bool  # the ``__init__`` has run

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and not re.search(rf"^[ \t]*{re.escape(name)}\s*=", self._source, re.M):
            raise AttributeError(name)  # (a dunder the ``__init__`` sets, ``__version__``, runs it)
        with _init_lock:
            value = _resolve(self, name)
        setattr(self, name, value)
        return value

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._exports))


_init_lock = threading.RLock()  # one ``__init__`` runs at a time, and may look names up in its own package


def _resolve(package: LazyPackage, name: str) -> Any:
    if name in package.__dict__:  # another thread got it meanwhile
        return package.__dict__[name]
    source = package._exports.get(name)
    try:
        if source is not None:
            module, attribute = source
            value = importlib.import_module(module)
            if not attribute:
                return value
            try:
                return getattr(value, attribute)
            except AttributeError:  # ``from ruamel import yaml``: a module not imported yet
                return importlib.import_module(f"{module}.{attribute}")
        try:  # a subpackage or module of this package (``kubernetes.client.rest``)
            return importlib.import_module(f"{package.__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{package.__name__}.{name}":
                raise
    except ImportError:
        if package._whole:
            raise  # the eager ``__init__`` (run) would have raised it too
    if not package._whole:  # the rest of the ``__init__``, as the eager import runs it (then the name again)
        package._whole = True
        exec(compile(package._source, package.__file__ or package.__name__, "exec"), package.__dict__)
        if name in package.__dict__:
            return package.__dict__[name]
        return _resolve(package, name)
    raise AttributeError(f"module {package.__name__!r} has no attribute {name!r}")


def _exports(package: str, text: str) -> dict[str, tuple[str, str]]:
    """What the ``from ... import`` lines of a package's ``__init__`` give, by the name they bind."""
    exports = {}
    for guarded, indent, source, grouped, line in _FROM_IMPORT.findall(text):
        if indent and not guarded:
            continue  # in a block (only the first line of a top-level ``try:`` is read)
        if source.startswith("."):
            dots = len(source) - len(source.lstrip("."))
            base = package.rsplit(".", dots - 1)[0] if dots > 1 else package
            source = f"{base}.{source[dots:]}".rstrip(".")
        for item in _COMMENT.sub("", grouped or line).split(","):
            words = item.split()
            if not words:
                continue
            attribute, bound = words[0], words[-1]
            exports[bound] = (f"{source}.{attribute}", "") if source == package else (source, attribute)
    return exports


def _install(name: str) -> bool:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None or spec.submodule_search_locations is None:
        return False
    try:
        text = Path(spec.origin).read_text(encoding="utf-8")
    except OSError:
        return False
    exports = _exports(name, text)
    if not exports:
        return False
    module = LazyPackage(name)
    module.__spec__ = spec
    module.__path__ = list(spec.submodule_search_locations)
    module.__file__ = spec.origin
    module.__loader__ = spec.loader
    module.__package__ = name
    module._exports = exports
    module._source = text
    module._whole = False
    for key, value in _VERSION.findall(text):
        setattr(module, key, value)
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return True
