"""The Determined backend against a fake master over real HTTP: login paths, the node/GPU map, the
queue (experiments with trial children, commands), actions and the current-user filter."""

from __future__ import annotations

import os
import stat

import pytest
from determined.common.api import authentication
from dethelpers import BOB_CMD, CMD_ID, PASSWORD, cache_token, make_backend, seed

from yanflow_tui.backends.determined.session import AuthRequired, make_cert
from yanflow_tui.errors import BackendError, BackendUnavailable
from yanflow_tui.model import GpuState, JobKind, JobState


def paths(master, method=None):
    return [r.path for r in master.requests if method is None or r.method == method]


# -- auth ----------------------------------------------------------------------------------------
async def test_token_cache_login_sends_no_password(master):
    token = cache_token(master)
    seed(master)
    det = make_backend(master)
    jobs = await det.list_jobs()
    assert "/api/v1/auth/login" not in paths(master)
    assert paths(master)[0] == "/api/v1/me"  # the cached token is checked first, as det does
    assert {r.auth for r in master.requests} == {f"Bearer {token}"}
    assert {j.user for j in jobs} == {"alice"}
    exp_query = next(r.query for r in master.requests if r.path == "/api/v1/experiments")
    assert exp_query["users"] == ["alice"]


async def test_env_user_and_password_log_in_and_fill_the_token_cache(master):
    seed(master)
    det = make_backend(master, env={"DET_USER": "alice", "DET_PASS": PASSWORD})
    await det.list_jobs()
    logins = [r for r in master.requests if r.path == "/api/v1/auth/login"]
    assert len(logins) == 1 and logins[0].method == "POST"
    assert logins[0].body["username"] == "alice"
    assert logins[0].body["isHashed"] is True and logins[0].body["password"] != PASSWORD
    store = authentication.TokenStore(master.url)
    assert store.get_token("alice") in master.tokens
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    # A second console reuses the cached token: no second login.
    again = make_backend(master, env={"DET_USER": "alice"})
    await again.list_jobs()
    assert len([r for r in master.requests if r.path == "/api/v1/auth/login"]) == 1


async def test_env_user_token_is_used_as_is(master):
    seed(master)
    token = master.token_for("alice")
    det = make_backend(master, env={"DET_USER": "alice", "DET_USER_TOKEN": token})
    assert [j.id for j in await det.list_jobs()]
    assert "/api/v1/auth/login" not in paths(master)
    assert {r.auth for r in master.requests} == {f"Bearer {token}"}


async def test_no_credentials_asks_for_a_password_then_logs_in(master):
    seed(master)
    det = make_backend(master, user="alice")
    with pytest.raises(AuthRequired) as info:
        await det.list_jobs()
    assert info.value.user == "alice" and info.value.cluster == "det"
    assert det.auth_required is info.value
    assert not master.mutations()  # nothing was tried without a password
    with pytest.raises(AuthRequired, match="wrong user name or password"):
        await det.login("not-the-password")
    await det.login(PASSWORD)
    assert det.auth_required is None
    assert {j.id for j in await det.list_jobs()} >= {"exp-12"}


async def test_expired_token_is_replaced_after_a_401(master):
    token = cache_token(master)
    seed(master)
    det = make_backend(master, env={"DET_USER": "alice", "DET_PASS": PASSWORD})
    await det.list_jobs()
    del master.tokens[token]  # the master forgets it (expiry)
    await det.list_jobs()
    assert len([r for r in master.requests if r.path == "/api/v1/auth/login"]) == 1


def test_tls_settings_as_the_det_cli_has_them(tmp_path):
    assert make_cert({"noverify": True}, {}, "http://m:8080").bundle is False
    assert make_cert({}, {}, "http://m:8080") is None
    assert make_cert({}, {"DET_MASTER_CERT_FILE": "noverify"}, "http://m:8080").bundle is False
    pem = tmp_path / "master.crt"
    pem.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    bundle = make_cert({"cert": str(pem)}, {}, "http://m:8080").bundle
    assert isinstance(bundle, str) and "MIIB" in open(bundle).read()
    with pytest.raises(BackendUnavailable, match="cannot read the master certificate"):
        make_cert({"cert": str(tmp_path / "missing.crt")}, {}, "http://m:8080")
    both = make_cert({"cert": str(pem), "noverify": True}, {"DET_MASTER_CERT_FILE": str(pem)}, "https://m:8443")
    assert both.bundle is False  # noverify wins, as before
    named = make_cert({}, {"DET_MASTER_CERT_NAME": "det.example.com"}, "http://m:8080")
    assert named.name == "det.example.com" and named.bundle is None  # the name alone still applies, as for det


def test_a_master_is_required(home):
    from yanflow_tui.backends.determined.backend import DeterminedBackend
    from yanflow_tui.config import ClusterConfig

    with pytest.raises(BackendUnavailable, match="DET_MASTER"):
        DeterminedBackend(ClusterConfig("det", "determined"), env={})


# -- nodes -----------------------------------------------------------------------------------------
async def test_agents_and_slots_make_the_gpu_map(backend):
    await backend.list_jobs()  # learns which container belongs to which job
    nodes = {n.name: n for n in await backend.list_nodes()}
    a, b = nodes["agent-a"], nodes["agent-b"]
    assert a.partitions == ("a100", "default") and a.state == "up"
    assert (a.gpus_total, a.gpus_allocated, a.gpus_free) == (5, 4, 1)
    assert a.gpu_type == "NVIDIA A100-SXM4-80GB"
    assert [g.index for g in a.gpus] == [0, 1, 2, 3, 4]
    assert [g.state for g in a.gpus] == [GpuState.ALLOCATED] * 4 + [GpuState.FREE]
    assert [g.job_id for g in a.gpus] == [f"cmd-{CMD_ID[:8]}"] * 2 + ["trial-120", None, None]
    assert a.gpus[3].reason == "container ctr-other"  # a container of no job we list
    assert a.gpus[4].uuid == "GPU-agent-a-4"
    assert b.state == "disabled" and b.reason == "disabled"
    assert {g.state for g in b.gpus} == {GpuState.UNAVAILABLE}


# -- queue -----------------------------------------------------------------------------------------
async def test_experiment_is_a_group_with_its_trials_as_children(backend):
    jobs = {j.id: j for j in await backend.list_jobs()}
    exp = jobs["exp-12"]
    assert exp.parent == "" and exp.kind is JobKind.EXPERIMENT and exp.state is JobState.RUNNING
    assert exp.reason == "best validation_loss=0.2 (trial 120)"
    details = dict(exp.details)
    assert details["Progress"] == "50.0%" and details["Best trial"] == "trial-120" and details["Trials"] == "3"
    trials = [j for j in jobs.values() if j.parent == "exp-12"]
    assert [t.id for t in trials] == ["trial-120", "trial-121", "trial-122"]
    assert [t.state for t in trials] == [JobState.RUNNING, JobState.RUNNING, JobState.COMPLETED]
    first = dict(trials[0].details)
    assert first["hp.lr"] == "0.01" and first["hp.layers"] == "2"
    assert first["Best validation"] == "validation_loss=0.4" and first["Task ID"] == "12.120"
    assert trials[0].gpus == 2 and trials[2].gpus == 0
    assert exp.gpus == 4  # two running trials of 2 slots


async def test_commands_are_jobs_with_short_ids_and_clean_names(backend):
    jobs = {j.id: j for j in await backend.list_jobs()}
    cmd = jobs[f"cmd-{CMD_ID[:8]}"]
    assert cmd.name == "prep data"  # the submit tag is not shown
    assert dict(cmd.details)["Task ID"] == CMD_ID
    assert cmd.state is JobState.RUNNING and cmd.gpus == 1
    assert f"cmd-{BOB_CMD[:8]}" not in jobs and "exp-13" not in jobs  # other users' work is filtered


async def test_all_users_shows_everyone(master):
    cache_token(master)
    seed(master)
    det = make_backend(master, all_users=True)
    ids = {j.id for j in await det.list_jobs()}
    assert {"exp-13", "trial-130", f"cmd-{BOB_CMD[:8]}"} <= ids
    assert "users" not in next(r.query for r in master.requests if r.path == "/api/v1/experiments")


async def test_describe_lists_the_details(backend):
    text = await backend.describe("trial-121")
    assert "hp.lr:" in text and "Experiment:" in text and "exp-12" in text
    with pytest.raises(BackendError, match="no job"):
        await backend.describe("trial-999")


# -- actions ---------------------------------------------------------------------------------------
async def test_actions_reach_the_right_endpoints(backend, master):
    await backend.list_jobs()
    await backend.perform("exp-12", "pause")
    await backend.perform("exp-12", "activate")
    await backend.perform("exp-12", "kill")
    await backend.cancel("trial-121")
    await backend.cancel(f"cmd-{CMD_ID[:8]}")
    assert paths(master, "POST") == [
        "/api/v1/experiments/12/pause",
        "/api/v1/experiments/12/activate",
        "/api/v1/experiments/12/kill",
        "/api/v1/trials/121/kill",
        f"/api/v1/commands/{CMD_ID}/kill",
    ]
    jobs = {j.id: j for j in await backend.list_jobs()}
    assert jobs["exp-12"].state is JobState.COMPLETING and jobs["trial-121"].raw_state == "STOPPING_KILLED"


async def test_trials_and_commands_cannot_be_paused(backend, master):
    with pytest.raises(BackendError, match="only experiments can be paused"):
        await backend.perform("trial-121", "pause")
    with pytest.raises(BackendError, match="no job"):
        await backend.cancel("cmd-ffffffff")
    assert not master.mutations()


def test_state_mapping_of_finished_commands():
    from determined.common.api import bindings

    from yanflow_tui.backends.determined.convert import task_state

    term = bindings.taskv1State.TERMINATED
    assert task_state(term, None)[0] is JobState.COMPLETED
    assert task_state(term, "command exited successfully")[0] is JobState.COMPLETED
    failed = task_state(
        term, "resources failed with non-zero exit code: container failed with non-zero exit code: 3 (exit code 3)"
    )
    assert failed[0] is JobState.FAILED and failed[3] == 3
    assert task_state(term, "task killed by user")[0] is JobState.CANCELLED
    assert task_state(bindings.taskv1State.QUEUED, None)[:3] == (JobState.PENDING, "QUEUED", "queued")


async def test_a_task_is_found_by_its_full_id_too(backend, master):
    job = await backend.get_job(f"cmd-{CMD_ID}")
    assert job.id == f"cmd-{CMD_ID[:8]}"
    master.add_log(CMD_ID, "from the full id")
    assert [line.text async for line in backend.stream_logs(f"cmd-{CMD_ID}")] == ["from the full id"]
