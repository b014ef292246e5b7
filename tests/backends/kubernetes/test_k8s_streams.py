"""The emulator's exec and port-forward speak what the official client speaks: checked with the
client's own ``kubernetes.stream.stream`` and ``portforward``."""

from __future__ import annotations

import io
import tarfile

import pytest
from fakes.k8s_api import make_pod
from k8shelpers import read_exactly

NS = "ml"


@pytest.fixture
def core(kubeconfig):
    from kubernetes import client, config

    api_client = config.new_client_from_config(config_file=str(kubeconfig), persist_config=False)
    yield client.CoreV1Api(api_client)
    api_client.close()


def exec_p1(core, command: list[str], *, stdin: bool = False, tty: bool = False, **options):
    """The client's ``stream`` exec into pod p1 with stdout and stderr on (as the backend calls it)."""
    from kubernetes.stream import stream

    return stream(
        core.connect_get_namespaced_pod_exec,
        "p1",
        NS,
        command=command,
        stderr=True,
        stdin=stdin,
        stdout=True,
        tty=tty,
        **options,
    )


def test_exec_runs_the_command_in_the_pods_folder_with_its_channels_and_exit_code(emulator, core):
    emulator.put("pods", make_pod("p1", NS))
    (emulator.streams.root(NS, "p1") / "out.txt").write_text("hello\n")
    text = exec_p1(core, ["sh", "-c", 'cat out.txt; echo "$HOSTNAME"; echo oops >&2'], _request_timeout=10)
    assert "hello\np1\n" in text and "oops" in text
    ws = exec_p1(core, ["sh", "-c", "echo out; echo err >&2; exit 3"], _preload_content=False)
    ws.run_forever(timeout=10)
    assert (ws.read_stdout(), ws.read_stderr(), ws.returncode) == ("out\n", "err\n", 3)
    assert ws.subprotocol == "v4.channel.k8s.io"
    assert emulator.streams.execs[-1][:3] == (NS, "p1", "main")


def test_exec_streams_a_binary_tar_and_takes_stdin(emulator, core):
    emulator.put("pods", make_pod("p1", NS))
    root = emulator.streams.root(NS, "p1")
    (root / "out").mkdir()
    blob = bytes(range(256)) * 4000
    (root / "out" / "w.bin").write_bytes(blob)
    data = exec_p1(core, ["tar", "cf", "-", "out"], binary=True, _request_timeout=10)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        assert tar.extractfile("out/w.bin").read() == blob
    ws = exec_p1(core, ["head", "-c", "5"], stdin=True, _preload_content=False)
    ws.write_stdin("abcdefgh")
    ws.run_forever(timeout=10)
    assert ws.read_stdout() == "abcde" and ws.returncode == 0


def test_exec_with_a_tty_runs_in_a_terminal_that_resizes(emulator, core):
    emulator.put("pods", make_pod("p1", NS))
    ws = exec_p1(core, ["sh"], stdin=True, tty=True, _preload_content=False)
    ws.write_channel(4, '{"Width": 91, "Height": 17}')
    ws.write_stdin("test -t 0 && echo TTY-$(stty size | tr ' ' x); exit\n")
    ws.run_forever(timeout=10)
    assert "TTY-17x91" in ws.read_stdout()
    assert ws.returncode == 0


def test_exec_refused_before_the_upgrade_on_a_pod_not_running(emulator, core):
    from kubernetes.client.rest import ApiException
    from kubernetes.stream import stream

    emulator.put("pods", make_pod("p1", NS, phase="Pending"))
    with pytest.raises((ApiException, AttributeError)):  # the client's own ApiException(status=0) lacks a body
        stream(core.connect_get_namespaced_pod_exec, "p1", NS, command=["true"], stdout=True, _request_timeout=5)
    assert emulator.streams.execs == []


def test_portforward_reaches_the_pods_port_through_the_clients_socket(emulator, core, tcp_server):
    from kubernetes.stream import portforward

    emulator.put("pods", make_pod("p1", NS))
    emulator.streams.map_port(NS, "p1", 6006, tcp_server(bytes.upper))
    pf = portforward(core.connect_get_namespaced_pod_portforward, "p1", NS, ports="6006,7000")
    sock = pf.socket(6006)
    sock.settimeout(10)
    sock.sendall(b"ping")
    assert read_exactly(sock, 4) == b"PING"
    sock.close()
    missing = pf.socket(7000)
    missing.settimeout(10)
    assert missing.recv(10) == b""  # closed: nothing listens there
    assert "no such port" in (pf.error(7000) or "")
    assert pf.error(6006) is None
    pf.close()
    assert emulator.streams.forwards == [(NS, "p1", (6006, 7000))]
