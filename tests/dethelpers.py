"""Fixtures for the Determined backend tests: a fake master over real HTTP (tests/fakes/det_master.py),
a det token cache in the test's HOME, and backends pointed at the fake."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from yanflow_tui.config import ClusterConfig

sys.path.insert(0, str(Path(__file__).resolve().parent / "fakes"))

if TYPE_CHECKING:
    from det_master import FakeMaster

PASSWORD = "s3cret-pw"  # alice's password on the fake master


@pytest.fixture
def master(home):
    # Imported here: the fake speaks the ``determined`` SDK's bindings, and a venv without that extra
    # (scripts/k8s-newest) still loads this plugin to run the other backends' tests.
    from det_master import FakeMaster

    fake = FakeMaster(users={"alice": PASSWORD, "bob": "bobpw"}).start()
    try:
        yield fake
    finally:
        fake.stop()


def cache_token(master: FakeMaster, user: str = "alice") -> str:
    """What ``det user login`` leaves behind: a token in auth.json, with ``user`` active."""
    from determined.common.api import authentication

    token = master.token_for(user)
    store = authentication.TokenStore(master.url)
    store.set_token(user, token)
    store.set_active(user)
    return token


def cluster(master: FakeMaster, name: str = "det", read_only: bool = False, **options) -> ClusterConfig:
    return ClusterConfig(name, "determined", read_only=read_only, options={"master": master.url, **options})


def make_backend(
    master: FakeMaster, env: dict | None = None, read_only: bool = False, retries=0, name: str = "det", **options
):
    """A backend on the fake master; ``env`` replaces os.environ for DET_* (retries=0: see 503s at once)."""
    from yanflow_tui.backends.determined.backend import DeterminedBackend

    return DeterminedBackend(cluster(master, name, read_only=read_only, **options), env=env or {}, retries=retries)


@pytest.fixture
def backend(master):
    """Alice, logged in through the det token cache; a seeded cluster."""
    cache_token(master)
    seed(master)
    return make_backend(master)


CMD_ID = "5e1f3a9c-1111-4222-8333-944455556666"
BOB_CMD = "0b0b0b0b-1111-4222-8333-944455556666"


def seed(master: FakeMaster) -> None:
    master.add_agent(
        "agent-a", 5, pools=("a100", "default"), busy={0: "ctr-cmd", 1: "ctr-cmd", 2: "ctr-trial", 3: "ctr-other"}
    )
    master.add_agent("agent-b", 2, pools=("default",), enabled=False)
    master.add_experiment(12, "resnet-search", "alice", state="RUNNING", ntrials=3, best=0.2)
    master.add_experiment(13, "bobs-exp", "bob", state="COMPLETED", ntrials=1)
    master.add_command(CMD_ID, "prep data #yf-0123456789ab", "alice", container="ctr-cmd")
    master.add_command(BOB_CMD, "bob shell", "bob")
    master.add_allocation("12.120", "ctr-trial")  # trial 120's container, known only from /api/v1/tasks
