"""The Determined backend's safety properties: a failing master makes the cluster stale and then
recovers (through the hub), read-only mode sends no mutating request, a password never reaches a
log or a file, and a missing SDK says which extra to install."""

from __future__ import annotations

import http.client
import logging
import re
import sys

import pytest
from dethelpers import PASSWORD, cache_token, make_backend, seed
from paths import SAMPLES

from yanflow_tui.backends import registry
from yanflow_tui.backends.determined.session import DEFAULT_RETRIES
from yanflow_tui.config import ClusterConfig, Config
from yanflow_tui.errors import BackendError, BackendUnavailable, ReadOnlyError
from yanflow_tui.hub import Health, Hub
from yanflow_tui.installs import extra_command
from yanflow_tui.spec import load_spec


async def test_master_503_marks_the_cluster_stale_then_it_recovers(master):
    cache_token(master)
    seed(master)
    det = make_backend(master, retries=DEFAULT_RETRIES)
    hub = Hub(Config(clusters=(det.config,)), backends={"det": det}, timeout=20)
    first = await hub.refresh("det")
    assert first.health is Health.OK and any(j.id == "exp-12" for j in first.jobs)

    master.fail_503 = 2  # a blip: the GET retries absorb it
    assert (await hub.refresh("det")).health is Health.OK

    master.fail_503 = 10_000
    stale = await hub.refresh("det")
    assert stale.health is Health.STALE
    assert "503" in stale.message and stale.jobs == first.jobs
    assert hub.next_delay("det") >= det.config.refresh_seconds

    master.fail_503 = 0
    back = await hub.refresh("det")
    assert back.health is Health.OK and back.failures == 0 and {n.name for n in back.nodes} == {"agent-a", "agent-b"}


async def test_unreachable_master_is_an_error_line_not_a_crash(home):
    from determined.common.api import authentication

    down = "http://127.0.0.1:9"
    store = authentication.TokenStore(down)  # logged in once; the master is down now
    store.set_token("alice", "tok")
    store.set_active("alice")
    det = registry.create(ClusterConfig("det", "determined", options={"master": down}))
    hub = Hub(Config(clusters=(det.config,)), backends={"det": det}, timeout=20)
    snap = await hub.refresh("det")
    assert snap.health is Health.ERROR
    assert snap.message == "listing jobs: cannot reach the master at http://127.0.0.1:9"


async def test_read_only_sends_no_post_patch_or_delete(master):
    cache_token(master)  # the token path: not even a login POST
    seed(master)
    det = make_backend(master, read_only=True)
    assert await det.list_jobs() and await det.list_nodes()
    with pytest.raises(ReadOnlyError):
        await det.submit(load_spec(SAMPLES / "det-command.yaml"))
    with pytest.raises(ReadOnlyError):
        await det.cancel("exp-12")
    for action in ("pause", "activate", "kill"):
        with pytest.raises(ReadOnlyError):
            await det.perform("exp-12", action)
    assert master.requests and {r.method for r in master.requests} == {"GET"}


async def test_a_password_never_reaches_a_log_or_a_file(master, caplog, capfd, home, monkeypatch):
    caplog.set_level(logging.DEBUG)
    for name in ("urllib3", "requests", "determined", "yanflow_tui", "aiohttp"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    monkeypatch.setattr(http.client.HTTPConnection, "debuglevel", 1)  # http.client prints headers+bodies
    seed(master)
    via_env = make_backend(master, env={"DET_USER": "alice", "DET_PASS": PASSWORD})
    await via_env.list_jobs()
    prompted = make_backend(master, name="det2", user="bob")
    try:
        await prompted.list_jobs()
    except Exception:
        pass
    with pytest.raises(BackendError):
        await prompted.login("bob-wrong-" + PASSWORD)
    await prompted.login("bobpw")
    await prompted.list_jobs()
    out, err = capfd.readouterr()
    # The debug output really was captured: urllib3's request lines and http.client's raw sends.
    assert '"POST /api/v1/auth/login HTTP/1.1" 200' in caplog.text
    assert "send: b'POST /api/v1/auth/login" in out and '"isHashed": true' in out
    for secret in (PASSWORD, "bobpw", "bob-wrong-"):
        assert secret not in caplog.text
        assert secret not in out and secret not in err
        for path in home.rglob("*"):
            if path.is_file():
                assert secret.encode() not in path.read_bytes(), path
        assert not any(secret in str(r.body) for r in master.requests)


def test_missing_sdk_names_the_extra(home, monkeypatch):
    monkeypatch.setitem(sys.modules, "determined", None)  # import determined -> ModuleNotFoundError
    for name in [n for n in sys.modules if n.startswith("yanflow_tui.backends.det")]:
        monkeypatch.delitem(sys.modules, name)
    backend = registry.create(ClusterConfig("det", "determined", options={"master": "http://127.0.0.1:8080"}))
    assert backend.kind == "determined" and not backend.capabilities.submit
    hint = extra_command("determined")  # the command for the way this copy was installed
    assert hint in backend.reason
    with pytest.raises(BackendUnavailable, match=re.escape(hint)):
        import asyncio

        asyncio.run(backend.list_jobs())
