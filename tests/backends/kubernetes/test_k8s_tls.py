"""TLS to the API server as kubectl does it, with the official client, against the emulator serving HTTPS on
loopback (certificates made with openssl):

- a cluster CA without a keyUsage extension is trusted (kubectl accepts it; Python 3.13 turns on
  ``VERIFY_X509_STRICT``, which refuses it): lists, logs and an exec all work;
- nothing else is loosened: a server whose certificate another CA signed, or whose name is not the
  server's address, is refused, and the error names the TLS reason (client 36 hid it behind
  ``AttributeError: 'NoneType' object has no attribute 'decode'``);
- a client key and certificate from the kubeconfig's data serve many connections opened at once from many
  threads (urllib3 loads them into the connection's context at every connect: one context shared by all
  failed a connect with ``X509: UNKNOWN_KEY_TYPE`` now and then, or crashed the process).

``scripts/k8s-newest`` runs this file on Python 3.13 with the newest client."""

from __future__ import annotations

import base64
import ssl
import subprocess
import threading
from pathlib import Path

import pytest
from fakes.k8s_api import K8sEmulator, make_job, make_pod
from k8shelpers import cluster, write_kubeconfig

from yanflow_tui.backends.kubernetes.backend import KubernetesBackend
from yanflow_tui.errors import BackendError

NS = "ml"
CA_CONFIG = """[req]
distinguished_name = dn
[dn]
[ca]
basicConstraints = critical, CA:TRUE
subjectKeyIdentifier = hash
"""


def openssl(*args: str, cwd: Path) -> str:
    return subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, text=True, timeout=60).stdout


def make_ca(folder: Path, name: str) -> None:
    """A CA whose certificate has basicConstraints but no keyUsage (as some cluster installers make it)."""
    (folder / "ca.cnf").write_text(CA_CONFIG)
    openssl(
        "req", "-x509", "-config", "ca.cnf", "-extensions", "ca", "-newkey", "ec", "-pkeyopt",
        "ec_paramgen_curve:P-256", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.crt", "-days", "2",
        "-subj", f"/CN={name}", cwd=folder,
    )  # fmt: skip


def make_server(folder: Path, name: str, ca: str, alt_name: str) -> None:
    (folder / f"{name}.ext").write_text(
        f"subjectAltName={alt_name}\nauthorityKeyIdentifier=keyid\nextendedKeyUsage=serverAuth\n"
    )
    openssl(
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f"{name}.key",
        "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=folder,
    )  # fmt: skip
    openssl(
        "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key", "-CAcreateserial",
        "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext", cwd=folder,
    )  # fmt: skip


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("pki")
    make_ca(folder, "cluster-ca")
    make_ca(folder, "other-ca")
    make_server(folder, "server", "cluster-ca", "IP:127.0.0.1")
    make_server(folder, "misnamed", "cluster-ca", "DNS:api.elsewhere.test")
    make_server(folder, "alice", "cluster-ca", "email:alice@example.test")  # the user's client certificate
    # What the test is about: the cluster's CA has no keyUsage.
    assert "Key Usage" not in openssl("x509", "-in", "cluster-ca.crt", "-noout", "-text", cwd=folder)
    return folder


def tls_emulator(pki: Path, server: str) -> K8sEmulator:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pki / f"{server}.crt", pki / f"{server}.key")
    emu = K8sEmulator(ssl_context=context).start()
    emu.add_node("gpu-a", 8)
    emu.put("jobs", make_job("train", NS))
    emu.put("pods", make_pod("train-0", NS, node="gpu-a", job="train"))
    emu.write_log(NS, "train-0", "step 1")
    return emu


def tls_backend(tmp_path: Path, url: str, ca: Path, user: dict[str, str] | None = None) -> KubernetesBackend:
    kubeconfig = write_kubeconfig(
        tmp_path / "kubeconfig", url, cluster_extra={"certificate-authority": str(ca)}, user=user
    )
    return KubernetesBackend(cluster(kubeconfig))


async def test_a_cluster_ca_without_key_usage_is_trusted_as_kubectl_trusts_it(pki, tmp_path):
    emu = tls_emulator(pki, "server")
    backend = tls_backend(tmp_path, emu.url, pki / "cluster-ca.crt")
    try:
        assert [job.id for job in await backend.list_jobs()] == ["ml/train"]
        assert [line.text async for line in backend.stream_logs("ml/train")] == ["step 1"]
        (emu.streams.root(NS, "train-0") / "out.txt").write_text("done\n")
        listing = await backend.list_files("ml/train")  # an exec, over the websocket's own TLS
        assert "out.txt" in [entry.name for entry in listing.files]
    finally:
        await backend.close()
        emu.shutdown()


@pytest.mark.parametrize(
    ("server", "ca", "reason"),
    [
        ("server", "other-ca.crt", r"CERTIFICATE_VERIFY_FAILED.*unable to get local issuer certificate"),
        (
            "misnamed",
            "cluster-ca.crt",
            r"CERTIFICATE_VERIFY_FAILED.*(IP address mismatch|not valid for '127\.0\.0\.1')",
        ),
    ],
    ids=["another-ca", "name-mismatch"],
)
async def test_a_server_the_cluster_ca_does_not_vouch_for_is_refused_with_the_tls_reason(
    pki, tmp_path, server, ca, reason
):
    emu = tls_emulator(pki, server)
    backend = tls_backend(tmp_path, emu.url, pki / ca)
    try:
        with pytest.raises(BackendError, match=reason) as refused:
            await backend.list_jobs()
        assert "AttributeError" not in str(refused.value)
        assert not [path for _, path in emu.requests if "/jobs" in path]  # nothing was sent over it
    finally:
        await backend.close()
        emu.shutdown()


async def test_a_client_certificate_serves_many_connections_opened_at_once(pki, tmp_path):
    emu = tls_emulator(pki, "server")
    # The user's key and certificate given as data (as kind, minikube and kubeadm's admin.conf give them):
    # the client copies them to files and loads those.
    b64 = lambda name: base64.b64encode((pki / name).read_bytes()).decode()  # noqa: E731
    user = {"client-certificate-data": b64("alice.crt"), "client-key-data": b64("alice.key")}
    backend = tls_backend(tmp_path, emu.url, pki / "cluster-ca.crt", user)
    try:
        assert [job.id for job in await backend.list_jobs()] == ["ml/train"]
        manager = backend._api.rest_client.pool_manager
        assert manager.connection_pool_kw["cert_file"] and manager.connection_pool_kw["key_file"]
        url = f"{emu.url}/api/v1/namespaces/{NS}/pods"
        failures: list[str] = []
        contexts: set[int] = set()

        def requests(count: int) -> None:
            for _ in range(count):
                try:  # "Connection: close": the next request connects again, with the client key
                    response = manager.request("GET", url, headers={"Connection": "close"}, retries=False)
                    assert response.status == 200, response.status
                except Exception as exc:
                    failures.append(f"{type(exc).__name__}: {exc}")
            pool = manager.connection_from_url(url)
            contexts.update(id(conn.ssl_context) for conn in list(pool.pool.queue) if conn is not None)

        threads = [threading.Thread(target=requests, args=(25,)) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert failures == []
        assert len(contexts) > 1  # the pool's connections do not share one context
    finally:
        await backend.close()
        emu.shutdown()
