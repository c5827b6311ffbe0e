"""A FAKE of CloakBrowser's download host, for tests only — never the vendor, never contacted
outside tests. The vendor's hosts cannot be reached from the machines these tests run on.

It serves what ``cloakbrowser/download.py`` (0.6.4) documents under
``<base>/chromium-v<version>/``: ``SHA256SUMS`` (a ``version=`` line and ``<sha256>  <file>``
lines), ``SHA256SUMS.sig`` (base64 of a detached Ed25519 signature over the manifest's raw
bytes) and the archive ``cloakbrowser-<tag>.tar.gz``. The archive is a STAND-IN: one
directory holding an executable ``chrome`` shell script, not a browser. The fake signs with
a key of its own (``public_key``), so a test can show both a signature that verifies (the
fake's key configured as a mirror key) and one that does not (the vendor's pinned key).
It listens on 127.0.0.1 and records every path asked for.
"""

from __future__ import annotations

import base64
import hashlib
import io
import tarfile
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

STAND_IN_CHROME = b"#!/bin/sh\necho 'a stand-in for the CloakBrowser binary'\n"


def stand_in_archive(tag: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        top = tarfile.TarInfo(f"cloakbrowser-{tag}")
        top.type, top.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(top)
        chrome = tarfile.TarInfo(f"cloakbrowser-{tag}/chrome")
        chrome.size, chrome.mode = len(STAND_IN_CHROME), 0o644  # made executable at install
        tar.addfile(chrome, io.BytesIO(STAND_IN_CHROME))
    return buf.getvalue() + b"\0" * 3_000_000  # long enough for several progress lines


@dataclass
class FakeCloakDownloads:
    """``url`` is the base to give as ``CLOAKBROWSER_DOWNLOAD_URL``. Knobs: ``wrong_checksum``
    (the signed manifest names another digest), ``wrong_signature`` (signed by another key),
    ``manifest_version`` (the ``version=`` it declares), ``unsigned`` (no ``.sig``)."""

    version: str
    tag: str = "linux-x64"
    wrong_checksum: bool = False
    wrong_signature: bool = False
    unsigned: bool = False
    manifest_version: str | None = None
    requests: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        self._key = Ed25519PrivateKey.generate()
        raw = self._key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.public_key = base64.b64encode(raw).decode()
        self.archive = stand_in_archive(self.tag)

    def files(self) -> dict[str, bytes]:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        name = f"cloakbrowser-{self.tag}.tar.gz"
        digest = hashlib.sha256(self.archive + (b"x" if self.wrong_checksum else b"")).hexdigest()
        manifest = f"version={self.manifest_version or self.version}\n{digest}  {name}\n".encode()
        signer = Ed25519PrivateKey.generate() if self.wrong_signature else self._key
        base = f"/chromium-v{self.version}"
        files = {f"{base}/SHA256SUMS": manifest, f"{base}/{name}": self.archive}
        if not self.unsigned:
            files[f"{base}/SHA256SUMS.sig"] = base64.b64encode(signer.sign(manifest))
        return files

    def __enter__(self) -> FakeCloakDownloads:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fake.requests.append(self.path)
                body = fake.files().get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
