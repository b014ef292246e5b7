"""The console's own log: where it is, mode 0600, rotation, more with --debug, tracebacks of failed
workers, and no secret ever: canary passwords and tokens through the redaction filter, a real
Determined login and a real Kubernetes client with a token, end to end in the CLI."""

from __future__ import annotations

import logging
import stat

import pytest
from dethelpers import PASSWORD
from jobhelpers import run_cli
from k8shelpers import write_kubeconfig
from uihelpers import make_app
from waiting import wait_for

from yanflow_tui import applog, locations

CANARY = "canary-Zx81-not-for-logs"


@pytest.fixture
def applog_on(home):
    path = applog.setup(debug=True)
    yield path
    applog.stop()
    with applog._lock:
        applog._secrets.clear()


def _all_logs(home) -> str:
    folder = locations.app_log_path().parent
    return "".join(p.read_text() for p in sorted(folder.glob("yanflow.log*")))


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_log_is_private_and_rotated(home, monkeypatch):
    monkeypatch.setattr(applog, "MAX_BYTES", 4000)
    path = applog.setup()
    try:
        assert path == home / ".local" / "state" / "yanflow" / "yanflow.log"
        log = logging.getLogger("yanflow_tui.test")
        for i in range(400):
            log.info("line %d %s", i, "x" * 60)
    finally:
        applog.stop()
    files = sorted(path.parent.glob("yanflow.log*"))
    assert [f.name for f in files] == ["yanflow.log", "yanflow.log.1", "yanflow.log.2", "yanflow.log.3"]
    assert all(_mode(f) == 0o600 for f in files), [oct(_mode(f)) for f in files]
    assert all(f.stat().st_size <= 4000 for f in files)
    assert "line 399" in path.read_text()


def test_a_log_with_wider_permissions_is_narrowed(home):
    path = locations.app_log_path()
    path.parent.mkdir(parents=True)
    path.write_text("old\n")
    path.chmod(0o644)
    applog.setup()
    try:
        logging.getLogger("yanflow_tui.test").warning("new")
    finally:
        applog.stop()
    assert _mode(path) == 0o600 and path.read_text().startswith("old\n")


def test_debug_adds_detail(home):
    for debug in (False, True):
        applog.setup(debug=debug)
        logging.getLogger("yanflow_tui.test").debug("detail %s", debug)
        applog.stop()
    text = locations.app_log_path().read_text()
    assert "detail True" in text and "detail False" not in text


def test_no_secret_reaches_the_log(applog_on):
    log = logging.getLogger("yanflow_tui.test")
    applog.add_secret(CANARY)  # a password typed at the prompt
    log.info("login as alice with %s", CANARY)
    log.info("request headers: {'Authorization': 'Bearer tok-%s'}", CANARY)
    log.info("kubeconfig user: {'token': 'k8s-%s', 'client-key-data': 'LS0t%s'}", CANARY, CANARY)
    log.info('DET_PASS=hunter2-%s password: "pw-%s" api_key=ak-%s', CANARY, CANARY, CANARY)
    log.info("id token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjYW5hcnkifQ.c2lnbmF0dXJlY2FuYXJ5")
    try:
        raise RuntimeError(f"server said: token={CANARY}x refused")
    except RuntimeError:
        log.exception("the worker failed")
    text = applog_on.read_text()
    assert "canary" not in text.lower() and "eyJzdWIi" not in text, text
    assert text.count(applog.REDACTED) >= 8
    assert "Traceback (most recent call last)" in text and "login as alice with" in text


def test_help_names_the_log(home):
    result = run_cli("--help")
    assert "log: ~/.local/state/yanflow/yanflow.log" in " ".join(result.stdout.split())


def test_a_determined_login_leaves_no_password_or_token_in_the_debug_log(home, master, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(f"clusters:\n  - {{name: det, kind: determined, master: '{master.url}', user: alice}}\n")
    env = {**__import__("os").environ, "DET_USER": "alice", "DET_PASS": PASSWORD}
    wrong = run_cli("--debug", "--config", str(config), "jobs", env={**env, "DET_PASS": CANARY})
    assert wrong.returncode != 0  # refused: its error is logged
    result = run_cli("--debug", "--config", str(config), "jobs", env=env)
    assert result.returncode == 0, result.stderr
    text = _all_logs(home)
    assert master.tokens, "the fake master issued no token"
    for secret in (PASSWORD, CANARY, *master.tokens):
        assert secret not in text
    assert "logged in to" in text  # --debug: the backends' own records are there


def test_a_kubernetes_token_never_reaches_the_debug_log(home, emulator, tmp_path):
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", emulator.url)
    kubeconfig.write_text(kubeconfig.read_text().replace("not-a-real-token", CANARY))
    config = tmp_path / "config.yaml"
    config.write_text(f"clusters:\n  - {{name: k8s, kind: kubernetes, kubeconfig: {kubeconfig}}}\n")
    run_cli("--debug", "--config", str(config), "jobs")
    dead = write_kubeconfig(tmp_path / "dead", "http://127.0.0.1:9")
    dead.write_text(dead.read_text().replace("not-a-real-token", CANARY))
    config.write_text(f"clusters:\n  - {{name: k8s, kind: kubernetes, kubeconfig: {dead}}}\n")
    assert run_cli("--debug", "--config", str(config), "jobs").returncode != 0
    text = _all_logs(home)
    assert CANARY not in text
    assert "refresh failed" in text  # the outage is logged, with its traceback
    assert "Traceback" in text


async def test_a_failed_worker_leaves_its_traceback_in_the_log_not_on_screen(applog_on):
    from yanflow_tui.config import ClusterConfig

    app = make_app(ClusterConfig("local", "local"))

    async def broken() -> None:
        raise ValueError("worker blew up")

    async with app.run_test() as pilot:
        app.run_worker(broken(), name="broken-worker", exit_on_error=False)
        await wait_for(pilot, lambda: "broken-worker" in applog_on.read_text(), what="the worker's failure logged")
    text = applog_on.read_text()
    assert "ValueError: worker blew up" in text and "Traceback" in text
