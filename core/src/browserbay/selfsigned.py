"""Self-signed TLS certificates a keeper makes once and keeps: the live view's
(``BAY_LIVE_TLS=self-signed``) and the fleet link's (``BAY_FLEET_LISTEN``).

An EC P-256 key, valid :data:`CERT_DAYS` days, naming every host it is reached by, written
with the key 0600 in a 0700 directory and reused while it covers the names and has a week
left (a browser's exception for it, a peer's record of its fingerprint, keep holding across
restarts). ``cryptography`` is loaded only when a certificate is read or made.
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import os
from pathlib import Path
from typing import TYPE_CHECKING

from browserbay.paths import write_private

if TYPE_CHECKING:
    from cryptography import x509

#: Days a self-signed certificate is valid; it is made anew with less than a week left.
CERT_DAYS = 90


def fingerprint(der: bytes) -> str:
    """A certificate's SHA-256 fingerprint as browsers show it (``AB:CD:…``)."""
    digest = hashlib.sha256(der).hexdigest().upper()
    return ":".join(digest[i : i + 2] for i in range(0, len(digest), 2))


def ensure_self_signed(cert: Path, key: Path, names: list[str], subject: str) -> None:
    """Keep the certificate at ``cert`` if it covers ``names`` for a week more; else make
    one (``subject``: its common name). Raises OSError when it cannot be written. Blocking."""
    from cryptography import x509

    now = datetime.datetime.now(datetime.UTC)
    try:
        kept = x509.load_pem_x509_certificate(cert.read_bytes())
        covered = _names_of(kept)
        fresh = kept.not_valid_after_utc - now > datetime.timedelta(days=7)
        if fresh and set(names) <= covered and key.exists():
            return
    except (OSError, ValueError):
        pass
    cert.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(cert.parent, 0o700)
    cert_pem, key_pem = _make_self_signed(names, now, subject)
    write_private(key, key_pem)
    write_private(cert, cert_pem)


def _names_of(cert: x509.Certificate) -> set[str]:
    from cryptography import x509

    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    names = {str(n) for n in san.get_values_for_type(x509.DNSName)}
    names |= {str(a) for a in san.get_values_for_type(x509.IPAddress)}
    return names


def _make_self_signed(
    names: list[str], now: datetime.datetime, subject_name: str
) -> tuple[bytes, bytes]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    alt: list[x509.GeneralName] = []
    for name in dict.fromkeys(names):
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            alt.append(x509.DNSName(name))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject_name)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=CERT_DAYS))
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem
