"""Real HTTP and HTTPS servers on loopback for the egress tests, and a certificate made here.

The servers are plain ``http.server`` programs in threads: a folder of files, served as
any web server would. The HTTPS one gets a self-signed certificate for its test host name,
made with ``cryptography`` (skipped where it is not installed).
"""

from __future__ import annotations

import datetime
import functools
import http.server
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CSV = "city,sales\nOslo,10\nLima,32\n"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def files(folder: Path, big_mib: int = 3) -> Path:
    """The origin's files: a small CSV and a ``big.bin`` of ``big_mib`` MiB."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data.csv").write_text(CSV)
    (folder / "big.bin").write_bytes(b"x" * (big_mib * 1024 * 1024))
    return folder


@contextmanager
def origin(
    folder: Path, host: str = "127.0.0.2", tls: ssl.SSLContext | None = None
) -> Iterator[int]:
    """Serve ``folder`` on ``host`` (a random port, yielded) until the block ends."""
    handler = functools.partial(_Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer((host, 0), handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def self_signed(folder: Path, name: str) -> tuple[ssl.SSLContext, Path]:
    """A server context for ``name`` and the certificate file a client trusts."""
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
    except ImportError:
        pytest.skip("the cryptography package is not installed: no HTTPS test")
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName(name), x509.IPAddress(ipaddress.ip_address("127.0.0.2"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    return context, cert_file
