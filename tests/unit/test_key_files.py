"""No key material outlives the process. The Kubernetes client copies a kubeconfig's
client-key-data (and certificate and CA data) to files; they live in a private 0700 directory
that goes on ``q``, SIGHUP, SIGTERM and a crash, and that the next start sweeps after a SIGKILL.

Real parts: the API emulator over HTTPS (a CA, server and client certificate made with openssl),
the CLI's ``logs --follow`` and the TUI under a pseudo-terminal, each in a subprocess."""

from __future__ import annotations

import base64
import os
import pty
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from fakes.k8s_api import K8sEmulator, make_job, make_pod
from k8shelpers import write_kubeconfig
from waiting import wait_until

from yanflow_tui import keyfiles


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("pki")
    openssl(
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=test-ca",
        cwd=d,
    )
    (d / "ext").write_text("subjectAltName=IP:127.0.0.1\n")
    for name, cn in (("server", "127.0.0.1"), ("client", "alice")):
        openssl(
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            f"{name}.key",
            "-out",
            f"{name}.csr",
            "-subj",
            f"/CN={cn}",
            cwd=d,
        )
        openssl(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            f"{name}.crt",
            "-days",
            "2",
            *(["-extfile", "ext"] if name == "server" else []),
            cwd=d,
        )
    return d


@pytest.fixture
def tls_emulator(pki):
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pki / "server.crt", pki / "server.key")
    emu = K8sEmulator(ssl_context=context).start()
    emu.put("jobs", make_job("train", "ml"))
    emu.put("pods", make_pod("train-0", "ml", node=None, job="train"))
    emu.write_log("ml", "train-0", "step 1")
    yield emu
    emu.shutdown()


@pytest.fixture
def env(tmp_path, pki, tls_emulator) -> dict[str, str]:
    """A private TMPDIR and HOME; a config whose cluster's kubeconfig holds inline key data."""
    b64 = lambda p: base64.b64encode(p.read_bytes()).decode()  # noqa: E731
    kubeconfig = write_kubeconfig(
        tmp_path / "kubeconfig",
        tls_emulator.url,
        cluster_extra={"certificate-authority-data": b64(pki / "ca.crt")},
        user={"client-certificate-data": b64(pki / "client.crt"), "client-key-data": b64(pki / "client.key")},
    )
    config = tmp_path / "config.yaml"
    config.write_text(f"clusters:\n  - name: k8s\n    kind: kubernetes\n    kubeconfig: {kubeconfig}\n")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    return {
        **os.environ,
        "TMPDIR": str(tmp),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".state"),
        "YANFLOW_CONFIG": str(config),
        "TERM": "xterm-256color",
    }


def key_marker(pki: Path) -> bytes:
    """A line of the client key's base64 body: any file holding the key holds it."""
    return [line for line in (pki / "client.key").read_bytes().splitlines() if not line.startswith(b"-")][0]


def files_holding(marker: bytes, roots: list[Path], since: float, pki: Path | None = None) -> list[Path]:
    found = []
    for root in roots:
        for dirpath, _, names in os.walk(root):
            if pki is not None and Path(dirpath) == pki:
                continue  # the test's own copy
            for name in names:
                path = Path(dirpath) / name
                try:
                    info = path.lstat()
                    if path.is_symlink() or not path.is_file() or info.st_size > 1 << 20 or info.st_mtime < since:
                        continue
                    if marker in path.read_bytes():
                        found.append(path)
                except OSError:
                    continue
    return found


def jobs_listed(emulator: K8sEmulator, since: int = 0) -> bool:
    """The jobs were read after the ``since``-th request (the emulator serves the module's every test)."""
    return any(method == "GET" and "/jobs" in path for method, path in emulator.requests[since:])


def key_files_written(env: dict[str, str], marker: bytes) -> list[Path]:
    return files_holding(marker, [Path(env["TMPDIR"])], 0)


def scan_roots(env) -> list[Path]:
    return [Path(env["TMPDIR"]), Path(tempfile.gettempdir())]


def ended(proc: subprocess.Popen) -> str:
    """ "ended" once the process has exited (the wait stops there, with its stderr), else ""."""
    return "ended" if proc.poll() is not None else ""


def stopped_with(proc: subprocess.Popen, env: dict[str, str], how: str) -> str:
    """Stops ``proc``; its status, its stderr (the CLI's) and the files under its TMPDIR, for a failure's message."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    err = proc.stderr.read().decode(errors="replace")[-4000:] if how == "cli" else ""
    files = sorted(str(p.relative_to(env["TMPDIR"])) for p in Path(env["TMPDIR"]).rglob("*"))
    return f"status {proc.returncode}; stderr: {err!r}; under TMPDIR: {files}"


def key_files_of(proc: subprocess.Popen, env: dict[str, str], marker: bytes, how: str) -> list[Path]:
    """The key files ``proc`` wrote; a failure that shows its status, stderr and TMPDIR if it ended first
    or wrote none in time."""
    try:
        written = wait_until(lambda: key_files_written(env, marker) or ended(proc), 120, "the client's key file")
    except Exception as exc:  # (a timeout)
        raise AssertionError(f"{exc}\n{stopped_with(proc, env, how)}") from exc
    if written == "ended":
        pytest.fail(f"it ended before writing its key file: {stopped_with(proc, env, how)}")
    return written


def start_cli(env) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "yanflow_tui", "logs", "--follow", "--cluster", "k8s", "ml/train"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


SCREEN_TAIL: list[bytes] = []  # what the TUI wrote last (the newest 64 KB), for a failure's message


def start_tui(env) -> tuple[subprocess.Popen, int]:
    master, slave = pty.openpty()
    os.set_inheritable(slave, True)
    SCREEN_TAIL.clear()
    proc = subprocess.Popen(
        [sys.executable, "-m", "yanflow_tui"],
        env={**env, "COLUMNS": "120", "LINES": "40", "PYTHONFAULTHANDLER": "1"},
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        close_fds=True,
    )
    os.close(slave)

    def drain() -> None:  # a terminal that is read, as a real one is
        try:
            while data := os.read(master, 65536):
                SCREEN_TAIL[:] = [b"".join(SCREEN_TAIL)[-65536 + len(data) :], data]
        except OSError:
            pass

    threading.Thread(target=drain, daemon=True).start()
    return proc, master


@pytest.mark.parametrize("how", ["cli", "tui"])
@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM])
def test_a_signal_leaves_no_key_file(env, pki, tls_emulator, how, sig):
    since = time.time() - 1
    marker = key_marker(pki)
    master = None
    seen = len(tls_emulator.requests)
    if how == "cli":
        proc = start_cli(env)
    else:
        proc, master = start_tui(env)
    try:
        written = key_files_of(proc, env, marker, how)
        assert all(p.stat().st_mode & 0o077 == 0 for p in written)
        if how == "cli":  # it is following: a live stream, not a run that ends by itself
            assert proc.stdout.readline().strip() == b"step 1"
        else:  # the TUI's first refresh is under way
            wait_until(lambda: jobs_listed(tls_emulator, seen), what="the TUI's first read of the jobs")
        os.kill(proc.pid, sig)
        rc = proc.wait(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        if master is not None:
            os.close(master)
    assert rc == 128 + sig, (rc, proc.stderr.read().decode() if how == "cli" else "")
    assert files_holding(marker, scan_roots(env), since, pki) == []
    base = Path(env["TMPDIR"]) / f"yanflow-keys-{os.getuid()}"
    assert not base.exists() or list(base.iterdir()) == []


def quit_code(proc: subprocess.Popen, timeout: float = 60) -> int:
    """The TUI's exit code once ``q`` was typed; if it is still running after ``timeout``, a failure that
    shows where it was (every thread's stack, from faulthandler on SIGABRT) and its last screen."""
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGABRT)
        proc.wait(10)
        tail = b"".join(SCREEN_TAIL)[-6000:].decode("utf-8", "replace")
        pytest.fail(f"the TUI did not quit {timeout:.0f} s after q; its last output:\n{tail}")


def test_quit_leaves_no_key_file(env, pki, tls_emulator):
    since = time.time() - 1
    marker = key_marker(pki)
    seen = len(tls_emulator.requests)
    proc, master = start_tui(env)
    try:
        key_files_of(proc, env, marker, "tui")
        wait_until(lambda: jobs_listed(tls_emulator, seen), what="the TUI's first refresh")
        os.write(master, b"q")
        rc = quit_code(proc)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        os.close(master)
    assert rc == 0
    assert files_holding(marker, scan_roots(env), since, pki) == []


def test_the_next_start_sweeps_a_killed_runs_key_files(env, pki):
    marker = key_marker(pki)
    proc = start_cli(env)
    try:
        written = key_files_of(proc, env, marker, "cli")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    assert all(p.exists() for p in written)  # SIGKILL: nothing could clean up
    result = subprocess.run([sys.executable, "-m", "yanflow_tui", "nodes"], env=env, capture_output=True, timeout=60)
    assert result.returncode in (0, 1)
    assert not any(p.exists() for p in written)
    assert key_files_written(env, marker) == []


def test_the_key_directory_is_private_and_refuses_a_planted_one(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(keyfiles, "_dir", None)
    planted = keyfiles.base_dir()
    planted.mkdir(mode=0o755)
    planted.chmod(0o755)
    with pytest.raises(Exception, match="not a private directory"):
        keyfiles.private_dir()
    planted.rmdir()
    path = Path(keyfiles.private_dir())
    assert path.parent == planted and (planted.stat().st_mode & 0o777) == 0o700
    assert (path.stat().st_mode & 0o777) == 0o700 and path.name.startswith(f"{os.getpid()}-")
    dead = planted / "999999999-1"
    dead.mkdir()
    (dead / "key").write_text("secret")
    assert keyfiles.sweep() == [dead] and path.exists()
    keyfiles.remove()
    assert not path.exists()
