"""Several kubeconfig files merged as kubectl merges them: discovery, the chosen context and its
namespace, and the backend reading the jobs there. Compared with ``kubectl config view --merge`` where
kubectl is on PATH; the expected values are kubectl's documented rules either way (first file to
define a name wins; current-context from the first file that sets it; the context's namespace)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import yaml
from fakes.k8s_api import make_job
from k8shelpers import cluster

from yanflow_tui.backends.kubernetes import kubeconfig, plugin
from yanflow_tui.backends.kubernetes.backend import KubernetesBackend


def write(path, data):
    path.write_text(yaml.safe_dump(data))
    path.chmod(0o600)
    return path


def context(name, namespace, user="alice"):
    return {"name": name, "context": {"cluster": "emu", "user": user, "namespace": namespace}}


@pytest.fixture
def three_files(tmp_path, emulator):
    """a: the cluster, the user and context a (ns-a), no current-context; b: current-context b,
    context b (ns-b) and another context a (ns-x, shadowed by a's); c: current-context a (too late)."""
    a = write(
        tmp_path / "kc-a.yaml",
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "emu", "cluster": {"server": emulator.url}}],
            "users": [{"name": "alice", "user": {"token": "a-token"}}],
            "contexts": [context("ctx-a", "ns-a")],
        },
    )
    b = write(
        tmp_path / "kc-b.yaml",
        {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "ctx-b",
            "clusters": [{"name": "emu", "cluster": {"server": "http://127.0.0.1:9"}}],  # shadowed by a's
            "users": [{"name": "alice", "user": {"token": "b-token"}}],
            "contexts": [context("ctx-b", "ns-b"), context("ctx-a", "ns-x")],
        },
    )
    c = write(tmp_path / "kc-c.yaml", {"apiVersion": "v1", "kind": "Config", "current-context": "ctx-a"})
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    return os.pathsep.join(map(str, (a, tmp_path / "missing.yaml", empty, b, c)))


def kubectl_view(spec: str, jsonpath: str) -> str:
    env = {"PATH": os.environ["PATH"], "KUBECONFIG": spec, "HOME": os.environ.get("HOME", "/nonexistent")}
    done = subprocess.run(
        ["kubectl", "config", "view", "--merge", "--minify", "-o", f"jsonpath={jsonpath}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout


def test_merge_follows_kubectls_rules(three_files):
    merged = kubeconfig.merge(kubeconfig.split(three_files))
    assert merged["current-context"] == "ctx-b"  # the first file that sets it, not the last
    assert kubeconfig.contexts(merged) == ["ctx-a", "ctx-b"]
    assert kubeconfig.context_namespace(merged) == "ns-b"
    assert kubeconfig.context_namespace(merged, "ctx-a") == "ns-a"  # a's definition, not b's ns-x
    assert [c["cluster"]["server"] for c in merged["clusters"]] == [merged["clusters"][0]["cluster"]["server"]]
    assert merged["users"][0]["user"]["token"] == "a-token"
    if shutil.which("kubectl") is None:  # CI without kubectl: the rules above are kubectl's documented ones
        return
    assert kubectl_view(three_files, "{.current-context}") == "ctx-b"
    assert kubectl_view(three_files, "{.contexts[0].context.namespace}") == "ns-b"
    assert kubectl_view(three_files, "{.clusters[0].cluster.server}") == merged["clusters"][0]["cluster"]["server"]


def test_discovery_with_several_files_names_kubectls_context(three_files, tmp_path):
    found = plugin.discover({"KUBECONFIG": three_files, "HOME": str(tmp_path)})
    assert len(found) == 1
    files = found[0].options["kubeconfig"].split(os.pathsep)
    assert [os.path.basename(f) for f in files] == ["kc-a.yaml", "empty.yaml", "kc-b.yaml", "kc-c.yaml"]
    assert found[0].options["context"] == "ctx-b"


@pytest.mark.parametrize("how", ["environment", "option"])
async def test_backend_reads_the_merged_contexts_namespace(emulator, three_files, monkeypatch, how):
    emulator.put("jobs", make_job("in-a", "ns-a"))
    emulator.put("jobs", make_job("in-b", "ns-b"))
    if how == "environment":
        monkeypatch.setenv("KUBECONFIG", three_files)
        config = cluster(three_files)
        config.options.pop("kubeconfig")
    else:
        config = cluster(three_files)
    backend = KubernetesBackend(config)
    try:
        assert backend.namespace == "ns-b"
        assert [j.id for j in await backend.list_jobs()] == ["ns-b/in-b"]
    finally:
        await backend.close()
    assert "Bearer a-token" in emulator.authorizations  # the user as the first file defines it
