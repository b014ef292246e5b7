"""TLS to the Determined master as the det CLI does it: a fake master serving HTTPS with a self-signed
certificate is refused by default, trusted with ``cert: FILE``, and reached with ``noverify: true``."""

from __future__ import annotations

import datetime
import ipaddress
import ssl

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from dethelpers import FakeMaster, make_backend, seed

from yanflow_tui.errors import BackendError


def _self_signed(tmp_path):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "det-master.test")])
    now = datetime.datetime.now(datetime.UTC)
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
    cert_file, key_file = tmp_path / "master.crt", tmp_path / "master.key"
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
