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
_FROM_IMPORT = re.compile(r"^from ([\w.]+) import (\w+)[ \t]*$", re.M)
_VERSION = re.compile(r"""^(__version__|__project__) = ["']([^"']*)["'][ \t]*$""", re.M)
_lock = threading.Lock()


def lazy_kubernetes() -> bool:
    """Put the lazy stand-ins of the ``kubernetes`` packages in place, unless ``kubernetes`` is imported
    already or not installed; whether they are in place now. Thread-safe (the backend connects in a thread)."""
    with _lock:
        module = sys.modules.get("kubernetes")
        if module is not None:
            return isinstance(module, LazyPackage)
        if importlib.util.find_spec("kubernetes") is None:
            return False
        for name in KUBERNETES_PACKAGES:
            if not _install(name):
                for done in KUBERNETES_PACKAGES:  # a layout this does not know: the eager imports, as before
                    sys.modules.pop(done, None)
                return False
        return True


class LazyPackage(ModuleType):
    """A package whose ``__init__`` was not run: its exported names are imported from their modules when
    first used, and kept."""

    _exports: dict[str, str]  # name -> the module it comes from

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        source = self._exports.get(name)
        if source is None:  # a subpackage or module of this package (``kubernetes.client.rest``)
            try:
                value: Any = importlib.import_module(f"{self.__name__}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{self.__name__}.{name}":
                    raise
                raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}") from None
        elif source == f"{self.__name__}.{name}":
            value = importlib.import_module(source)
        else:
            value = getattr(importlib.import_module(source), name)
        setattr(self, name, value)
        return value

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._exports))


def _install(name: str) -> bool:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None or spec.submodule_search_locations is None:
        return False
    try:
        text = Path(spec.origin).read_text(encoding="utf-8")
    except OSError:
        return False
    exports = {}
    for source, exported in _FROM_IMPORT.findall(text):
        exports[exported] = f"{name}.{exported}" if source == "." else source
    if not exports:
        return False
    module = LazyPackage(name)
    module.__spec__ = spec
    module.__path__ = list(spec.submodule_search_locations)
    module.__file__ = spec.origin
    module.__loader__ = spec.loader
    module.__package__ = name
    module._exports = exports
    for key, value in _VERSION.findall(text):
        setattr(module, key, value)
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return True
