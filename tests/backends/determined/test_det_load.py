"""Light on the Determined master (issue 18 point 10): one kept-alive HTTP connection per master,
counted by the fake master's accepted connections, and each list endpoint at most once per refresh
(opening a job right after a refresh lists nothing again)."""

from __future__ import annotations

from collections import Counter

from dethelpers import cache_token, make_backend, seed

from yanflow_tui.config import Config
from yanflow_tui.hub import Hub

REFRESHES = 12  # a minute at the default 5 s


async def test_one_kept_alive_connection_and_one_call_per_list_endpoint_per_refresh(master):
    cache_token(master)
    seed(master)
    backend = make_backend(master)
    hub = Hub(Config(clusters=(backend.config,)), backends={"det": backend})
    try:
        for _ in range(REFRESHES):
            snap = await hub.refresh("det")
            assert snap.health.value == "ok", snap.message
        listed = len(master.requests)
        await backend.describe("exp-12")  # the detail screen, right after a refresh
        assert len(master.requests) == listed, [r.path for r in master.requests[listed:]]
    finally:
        await hub.close()
    gets = Counter(r.path for r in master.requests if r.method == "GET")
    too_often = {path: n for path, n in gets.items() if n > REFRESHES + 1}  # +1: the login's /users/me
    assert not too_often
    print(f"{len(master.requests)} requests over {len(master.connections)} connection(s) in {REFRESHES} refreshes")
    assert len(master.connections) == 1, f"{len(master.connections)} connections for {len(master.requests)} requests"
