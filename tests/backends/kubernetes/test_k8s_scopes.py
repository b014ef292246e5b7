"""Switching the context and the namespace live (k9s's ``:ctx`` and ``:ns``) through the generic
``scopes`` capability, against the API emulator: the watches restart on the new scope, and a user
without cluster-wide rights is told so instead of being switched to all namespaces."""

from __future__ import annotations

import pytest
from fakes.k8s_api import make_job
from k8shelpers import cluster, write_kubeconfig

from yanflow_tui.backends.base import SCOPE_ALL
from yanflow_tui.backends.kubernetes.backend import KubernetesBackend
from yanflow_tui.errors import BackendError


@pytest.fixture
async def backend(tmp_path, emulator):
    path = write_kubeconfig(tmp_path / "kubeconfig", emulator.url, others={"team": "team-b"})
    emulator.put("jobs", make_job("in-ml", "ml"))
    emulator.put("jobs", make_job("in-b", "team-b"))
    b = KubernetesBackend(cluster(path))
    yield b
    await b.close()


async def ids(backend) -> list[str]:
    return [j.id for j in await backend.list_jobs()]


async def test_namespace_switch_restarts_the_watches_on_the_other_namespace(emulator, backend):
    assert await ids(backend) == ["ml/in-ml"]
    assert backend.scope("namespace") == "ml" and backend.scope("context") == "emu"
    assert await backend.scopes("namespace") == [SCOPE_ALL, "ml", "team-b"]
    assert await backend.set_scope("namespace", "team-b") == "context emu, namespace team-b"
    assert await ids(backend) == ["team-b/in-b"]
    assert any(p.startswith("/apis/batch/v1/namespaces/team-b/jobs") for _, p in emulator.requests)
    assert await backend.set_scope("namespace", SCOPE_ALL) == "context emu, all namespaces"
    assert sorted(await ids(backend)) == ["ml/in-ml", "team-b/in-b"]
    with pytest.raises(BackendError, match="not a namespace name"):
        await backend.set_scope("namespace", "../x")


async def test_context_switch_uses_the_other_user_and_its_namespace(emulator, backend):
    assert await ids(backend) == ["ml/in-ml"]
    assert await backend.scopes("context") == ["emu", "team"]
    assert await backend.set_scope("context", "team") == "context team, namespace team-b"
    assert await ids(backend) == ["team-b/in-b"]
    assert "Bearer team-token" in emulator.authorizations
    with pytest.raises(BackendError, match="no context 'gone'"):
        await backend.set_scope("context", "gone")


async def test_all_namespaces_without_cluster_wide_rights_is_refused_clearly(emulator, backend):
    emulator.forbidden_cluster_wide = {"jobs", "pods"}
    emulator.forbidden = {"namespaces"}
    assert await ids(backend) == ["ml/in-ml"]
    # may not list namespaces: those the kubeconfig names are offered
    assert await backend.scopes("namespace") == [SCOPE_ALL, "ml", "team-b"]
    with pytest.raises(BackendError, match=r"you may not list jobs cluster-wide \(HTTP 403.*\); still namespace ml"):
        await backend.set_scope("namespace", SCOPE_ALL)
    assert backend.scope("namespace") == "ml"
    assert await ids(backend) == ["ml/in-ml"]
