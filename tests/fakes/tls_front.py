"""A CA, certificates, and an mTLS front for Temporal's frontend, for tests of docs/operations.md
"Temporal behind credentials".

`temporal server start-dev` has no TLS flags, so the test puts this in front of it: a TLS listener
that speaks HTTP/2 (ALPN `h2`, as gRPC needs), presents a server certificate of the test's CA,
*requires* a client certificate signed by that CA, and passes the bytes on to the dev server's
plain port. What clients do is the same as against a frontend with `global.tls.frontend` and
`requireClientAuth: true`: without a good certificate the handshake fails and nothing reaches
Temporal.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import socket
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    stranger_cert: Path  # a client certificate of another CA
    stranger_key: Path


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)


def _issue(subject: str, key, issuer_name: x509.Name, issuer_key, *, ca: bool = False,
           server: bool = False) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(issuer_name)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False,
            encipher_only=False, decipher_only=False), critical=True)
    else:
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if server:
        builder = builder.add_extension(x509.SubjectAlternativeName([
            x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def make_pki(folder: Path) -> Pki:
    """A CA, the frontend's certificate (localhost, 127.0.0.1), a worker's client certificate,
    and a client certificate of another CA."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _issue("recon test CA", ca_key, _name("recon test CA"), ca_key, ca=True)
    other_key = ec.generate_private_key(ec.SECP256R1())
    other = _issue("another CA", other_key, _name("another CA"), other_key, ca=True)
    for label, subject, issuer, issuer_key, server in (
            ("server", "localhost", ca, ca_key, True), ("client", "recon-worker", ca, ca_key, False),
            ("stranger", "recon-worker", other, other_key, False)):
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _issue(subject, key, issuer.subject, issuer_key, server=server)
        paths[f"{label}_cert"] = folder / f"{label}.pem"
        paths[f"{label}_key"] = folder / f"{label}.key"
        paths[f"{label}_cert"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(paths[f"{label}_key"], key)
    (folder / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    return Pki(ca=folder / "ca.pem", **paths)


class MtlsFront:
    """TLS with required client certificates on a free loopback port, in front of `upstream`."""

    def __init__(self, pki: Pki, upstream: str) -> None:
        host, _, port = upstream.rpartition(":")
        self._upstream = (host, int(port))
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(pki.ca))
        context.load_cert_chain(str(pki.server_cert), str(pki.server_key))
        context.verify_mode = ssl.CERT_REQUIRED
        context.set_alpn_protocols(["h2"])
        self._context = context
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.address = f"localhost:{self.port}"
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="mtls-front")

    def __enter__(self) -> MtlsFront:
        self._thread.start()
        assert self._ready.wait(10), "the mTLS front did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(
            self._client, "127.0.0.1", self.port, ssl=self._context,
            ssl_handshake_timeout=5))
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            server.close()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._upstream)
        except OSError:
            writer.close()
            return

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, ConnectionError, ssl.SSLError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            with contextlib.suppress(OSError, RuntimeError):
                dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
