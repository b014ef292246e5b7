"""The lazy ``kubernetes`` packages (``yanflow_tui.lazyimports``): the names the backend uses are the
client's own objects, a model is still found where the client looks for it, and far fewer modules are
loaded than the eager ``__init__`` files load. Each case runs in a fresh interpreter (this one may have
imported ``kubernetes`` already)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("kubernetes")

CHECK = """
import json, sys
from yanflow_tui import lazyimports
before = len(sys.modules)
lazy = lazyimports.lazy_kubernetes()
import kubernetes
from kubernetes import client
from kubernetes import config as kconfig
from kubernetes.config.kube_config import KubeConfigLoader, KubeConfigMerger
from kubernetes.client.api.core_v1_api import CoreV1Api
from kubernetes.client.exceptions import ApiException
api = client.ApiClient(configuration=type.__call__(client.Configuration))
core = client.CoreV1Api(api)

class Answer:  # what the client's REST layer hands ``deserialize``
    data = json.dumps({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "main"}]}})

pod = api.deserialize(Answer(), "V1Pod")
print(json.dumps({
    "lazy": lazy,
    "same": client.CoreV1Api is CoreV1Api and client.ApiException is ApiException,
    "config": kconfig.kube_config.KubeConfigLoader is KubeConfigLoader and kconfig.ConfigException.__name__,
    "version": kubernetes.__version__ == client.__version__ != "",
    "pod": [type(pod).__name__, pod.metadata.name, pod.spec.containers[0].name],
    "models_imported": sum(m.startswith("kubernetes.client.models.") for m in sys.modules),
    "modules": len(sys.modules) - before,
    "twice": lazyimports.lazy_kubernetes(),
}))
"""


def run(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def test_the_lazy_packages_give_the_clients_own_objects_and_load_a_fraction():
    out = run(CHECK)
    assert out["lazy"] and out["twice"] and out["same"] and out["version"]
    assert out["config"] == "ConfigException"
    assert out["pod"] == ["V1Pod", "p", "main"]  # the models the answer names, found on first use
    assert 0 < out["models_imported"] < 40  # of over 800
    assert out["modules"] < 500  # the eager __init__ files load over 1,300


def test_nothing_changes_once_kubernetes_is_imported():
    code = textwrap.dedent("""
        import json, sys, kubernetes
        from yanflow_tui import lazyimports
        eager = sys.modules["kubernetes.client"]
        print(json.dumps({"lazy": lazyimports.lazy_kubernetes(), "kept": sys.modules["kubernetes.client"] is eager}))
    """)
    assert run(code) == {"lazy": False, "kept": True}
