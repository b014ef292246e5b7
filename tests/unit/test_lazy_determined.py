"""The lazy ``determined`` packages (``yanflow_tui.lazyimports.lazy_determined``): the names the backend
uses are the SDK's own objects, the training library the package ``__init__`` files import (``core`` and
its profiler, storage, ``psutil``, ``pynvml``) is left out, and a name only the ``__init__`` makes (the
version from the metadata) is still there. Each case runs in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("determined")

LEFT_OUT = ("determined.core", "determined.common.storage", "determined._trial_controller", "pynvml", "appdirs")


def run(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_backend_gets_the_sdks_own_objects_without_its_training_library():
    out = run(f"""
        import json, sys
        from yanflow_tui import lazyimports
        from yanflow_tui.backends import registry
        from yanflow_tui.config import ClusterConfig
        # the backend as the hub makes it, which puts the lazy packages in place itself
        registry.create(ClusterConfig("det", "determined", options={{"master": "http://127.0.0.1:1"}}))
        lazy = isinstance(sys.modules["determined"], lazyimports.LazyPackage)
        from determined.common import api, util, yaml
        from determined.common.api import bindings, errors, _session, authentication
        from ruamel import yaml as ruamel_yaml
        print(json.dumps({{
            "lazy": lazy,
            "same": api.Session is _session.Session and api.salt_and_hash is authentication.salt_and_hash
            and api.bindings is bindings and api.errors is errors and yaml is ruamel_yaml,
            "loaded": [name for name in {LEFT_OUT!r} if name in sys.modules],
            "twice": lazyimports.lazy_determined(),
        }}))
    """)
    assert out == {"lazy": True, "same": True, "loaded": [], "twice": True}


def test_a_name_only_the_init_makes_runs_the_rest_of_it_once():
    out = run("""
        import json, sys
        from importlib import metadata
        from yanflow_tui import lazyimports
        lazyimports.lazy_determined()
        import determined
        before = "determined.core" in sys.modules
        version = determined.__version__  # set by the __init__ from the metadata, not imported
        print(json.dumps({
            "before": before,
            "version": version == metadata.version("determined"),
            "rest": "determined.core" in sys.modules and determined.core is sys.modules["determined.core"],
            "format": determined.LOG_FORMAT.startswith("%(levelname)s"),
            "missing": not hasattr(determined, "no_such_name"),
        }))
    """)
    assert out == {"before": False, "version": True, "rest": True, "format": True, "missing": True}


def test_nothing_changes_once_determined_is_imported():
    out = run("""
        import json, sys, determined
        from yanflow_tui import lazyimports
        eager = sys.modules["determined.common"]
        print(json.dumps({"lazy": lazyimports.lazy_determined(), "kept": sys.modules["determined.common"] is eager}))
    """)
    assert out == {"lazy": False, "kept": True}
