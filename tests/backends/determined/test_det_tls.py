"""TLS to the Determined master as the det CLI does it: a fake master serving HTTPS with a self-signed
certificate is refused by default, trusted with ``cert: FILE``, reached with ``noverify: true``, and
trusted through the det CLI's ``certs.json`` (for that master only; our config and
``$DET_MASTER_CERT_FILE`` win over it)."""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from det_master import FakeMaster
from dethelpers import make_backend, seed

from yanflow_tui.errors import BackendError


def _self_signed(folder):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "det-master.test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    folder.mkdir(parents=True, exist_ok=True)
    cert_file, key_file = folder / "master.crt", folder / "master.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    return cert_file, context


@pytest.fixture
def tls_master(home, tmp_path, monkeypatch):
    import certifi

    # As on many machines: requests would let this override the session's own cert/noverify choice.
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", certifi.where())
    cert_file, context = _self_signed(tmp_path)
    fake = FakeMaster(tls=context).start()
    seed(fake)
    try:
        yield fake, cert_file
    finally:
        fake.stop()


async def test_untrusted_certificate_is_refused(tls_master):
    master, _ = tls_master
    det = make_backend(master, env={"DET_USER": "alice", "DET_USER_TOKEN": master.token_for("alice")})
    with pytest.raises(
        BackendError, match="listing jobs: the TLS certificate of https://127.0.0.1:.* could not be verified"
    ):
        await det.list_jobs()
    assert master.requests == []  # the handshake failed: no request was served


async def test_cert_file_is_trusted(tls_master):
    master, cert_file = tls_master
    det = make_backend(
        master, env={"DET_USER": "alice", "DET_USER_TOKEN": master.token_for("alice")}, cert=str(cert_file)
    )
    assert master.url.startswith("https://")
    assert "exp-12" in {j.id for j in await det.list_jobs()}


async def test_noverify_skips_verification(tls_master):
    master, _ = tls_master
    det = make_backend(master, env={"DET_USER": "alice", "DET_USER_TOKEN": master.token_for("alice")}, noverify=True)
    assert "exp-12" in {j.id for j in await det.list_jobs()}


def _det_trusts(home, certificates: dict[str, str]) -> None:
    """What ``det`` leaves behind after "Do you want to trust this certificate from now on?" (cli.py:
    ``CertStore(default_store()).set_cert(master, pem)``): certs.json in its config dir, a JSON map of
    canonical master URL -> PEM chain, written with indent=4 and sorted keys."""
    store = home / ".config" / "determined" / "certs.json"
    store.parent.mkdir(parents=True, exist_ok=True)
    store.write_text(json.dumps(certificates, indent=4, sort_keys=True))


@pytest.fixture
def other_cert(tmp_path):
    """A certificate that is not the master's."""
    cert_file, _ = _self_signed(tmp_path / "other")
    return cert_file


def _alice(master, **options):
    return make_backend(master, env={"DET_USER": "alice", "DET_USER_TOKEN": master.token_for("alice")}, **options)


async def test_certificate_saved_by_det_is_trusted(tls_master, home):
    master, cert_file = tls_master
    _det_trusts(home, {master.url: cert_file.read_text()})
    assert "exp-12" in {j.id for j in await _alice(master).list_jobs()}


async def test_certificate_saved_for_another_master_is_not_used(tls_master, home):
    master, cert_file = tls_master
    _det_trusts(home, {"https://127.0.0.1:1": cert_file.read_text(), master.url + "/det": cert_file.read_text()})
    with pytest.raises(BackendError, match="listing jobs: the TLS certificate of .* could not be verified"):
        await _alice(master).list_jobs()
    assert master.requests == []


async def test_config_cert_wins_over_certs_json(tls_master, home, other_cert):
    master, cert_file = tls_master
    _det_trusts(home, {master.url: cert_file.read_text()})
    with pytest.raises(BackendError, match="could not be verified"):
        await _alice(master, cert=str(other_cert)).list_jobs()
    _det_trusts(home, {master.url: other_cert.read_text()})
    assert "exp-12" in {j.id for j in await _alice(master, cert=str(cert_file)).list_jobs()}


async def test_noverify_wins_over_certs_json(tls_master, home, other_cert):
    master, _ = tls_master
    _det_trusts(home, {master.url: other_cert.read_text()})
    assert "exp-12" in {j.id for j in await _alice(master, noverify=True).list_jobs()}


async def test_det_master_cert_file_wins_over_certs_json(tls_master, home, other_cert):
    master, cert_file = tls_master
    _det_trusts(home, {master.url: cert_file.read_text()})
    env = {"DET_USER": "alice", "DET_USER_TOKEN": master.token_for("alice"), "DET_MASTER_CERT_FILE": str(other_cert)}
    with pytest.raises(BackendError, match="could not be verified"):
        await make_backend(master, env=env).list_jobs()


async def test_corrupt_certs_json_is_reported(tls_master, home):
    master, _ = tls_master
    store = home / ".config" / "determined" / "certs.json"
    store.parent.mkdir(parents=True)
    store.write_text("[not a map")
    with pytest.raises(BackendError, match="certificate store .*certs.json was corrupt"):
        await _alice(master).list_jobs()
